"""The `rocketmq` PySpark data source (pyspark.sql.datasource): batch reads and writes of a topic.

Imported only by `mqtools.spark.register`, so nothing else in mq needs pyspark. Options follow Spark's
Kafka source where they mean the same thing; see docs/spark.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from mqtools.common.validation import ValidationError, check_group
from mqtools.spark.columns import SCHEMA
from mqtools.spark.offsets import MIN_TASK_ROWS, READER_GROUP, QueueRange, parse_spec, plan_topic, task_ranges
from mqtools.spark.reader import MAX_PULL_BATCH, PULL_BATCH, read_batches
from mqtools.spark.security import security_from_options
from mqtools.spark.writer import WRITE_WINDOW, rows_from_batches, write_rows

NAME = "rocketmq"


def _options(options: Any) -> dict[str, str]:
    """Spark's options are case-insensitive: keep them lower-cased, and look them up that way."""
    return {str(k).lower(): str(v) for k, v in dict(options).items()}


def _get(options: dict[str, str], key: str) -> str | None:
    return options.get(key.lower())


def _flag(options: dict[str, str], key: str, default: bool) -> bool:
    value = _get(options, key)
    return default if value is None else str(value).strip().lower() in ("true", "1", "yes")


def _int(options: dict[str, str], key: str, default: int | None) -> int | None:
    value = _get(options, key)
    return default if value in (None, "") else int(value)  # type: ignore[arg-type]


def _namesrv(options: dict[str, str]) -> str:
    namesrv = _get(options, "namesrv")
    if not namesrv:
        raise ValueError("the rocketmq data source needs option namesrv ('host:9876;host2:9876')")
    return namesrv


def _read_options(options: dict[str, str]) -> dict[str, Any]:
    """What each executor's RangeReader takes from the options, batch or stream alike."""
    return {"expression": _get(options, "subExpression"), "batch": _pull_batch(options),
            "pull_timeout_ms": _int(options, "pullTimeoutMs", 30_000) or 30_000,
            "fail_on_data_loss": _flag(options, "failOnDataLoss", True),
            "security": security_from_options(options), "group": _group(options)}


def _group(options: dict[str, str]) -> str:
    """consumerGroup, by RocketMQ's group name rules: a broker would refuse a bad name as a group it lacks."""
    group = _get(options, "consumerGroup") or READER_GROUP
    try:
        return check_group(group)
    except ValidationError as exc:
        raise ValueError(f"consumerGroup: {exc}") from None


def _pull_batch(options: dict[str, str]) -> int:
    """pullBatchSize, in the range Apache's clients accept."""
    value = _int(options, "pullBatchSize", PULL_BATCH)
    if value is None or not 1 <= value <= MAX_PULL_BATCH:
        raise ValueError(f"pullBatchSize must be between 1 and {MAX_PULL_BATCH}, not {value}")
    return value


def _min_rows(options: dict[str, str]) -> int:
    """minRowsPerPartition: small queue ranges are read together until a task has this many rows."""
    value = _int(options, "minRowsPerPartition", MIN_TASK_ROWS)
    return MIN_TASK_ROWS if value is None else value


class QueuePartition(InputPartition):
    """The queue ranges one task reads, each named by broker and queue id (never an address: a slave can serve
    it)."""

    def __init__(self, ranges: list[QueueRange]) -> None:
        super().__init__([asdict(r) for r in ranges])
        self.ranges = ranges


class RocketMQReader(DataSourceReader):
    """Plans the ranges once on the driver; each executor task pulls its range."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.namesrv = _namesrv(options)
        topic = _get(options, "topic")
        if not topic:
            raise ValueError("the rocketmq data source needs option topic to read")
        self.topic = topic
        self.start = parse_spec(_get(options, "startingOffsets"), "earliest")
        self.end = parse_spec(_get(options, "endingOffsets"), "latest")
        self.fail_on_data_loss = _flag(options, "failOnDataLoss", True)
        self.read_options = _read_options(options)

    def partitions(self) -> list[InputPartition]:
        ranges = plan_topic(self.namesrv, self.topic, self.start, self.end,
                            fail_on_data_loss=self.fail_on_data_loss, security=self.read_options["security"])
        return [QueuePartition(t) for t in task_ranges(ranges, _int(self.options, "minPartitions", None),
                                                        _min_rows(self.options))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, QueuePartition)
        yield from read_batches(self.namesrv, partition.ranges, **self.read_options)


@dataclass
class WriteCommit(WriterCommitMessage):
    """What one write task did: sent, failed by code, bytes, and its latency histogram (encoded HDR)."""

    task: int
    sent: int
    failed: dict[str, int]
    bytes: int
    histogram: str


class RocketMQWriter(DataSourceArrowWriter):
    """Each task is a producer; a failed send fails the task with the RocketMQ code (at-least-once). Its rows come
    as Spark's Arrow batches (rows_from_batches), not as a Row each."""

    def __init__(self, options: dict[str, str]) -> None:
        self.namesrv = _namesrv(options)
        self.topic = _get(options, "topic")
        self.send_timeout_ms = _int(options, "sendTimeoutMs", 3000) or 3000
        self.in_flight = _int(options, "maxInFlight", WRITE_WINDOW) or WRITE_WINDOW
        self.latency_fault = _flag(options, "sendLatencyFaultEnable", False)
        self.security = security_from_options(options)
        self.last: list[WriteCommit] = []

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        task = ctx.partitionId() if ctx is not None else 0
        stats = write_rows(self.namesrv, rows_from_batches(iterator), topic=self.topic, task=task,
                           send_timeout_ms=self.send_timeout_ms, security=self.security, in_flight=self.in_flight,
                           latency_fault=self.latency_fault)
        return WriteCommit(task, stats.messages, stats.failed, stats.bytes, stats.histogram)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self.last = [m for m in messages if isinstance(m, WriteCommit)]


class RocketMQStreamWriter(DataSourceStreamArrowWriter):
    """Streaming writes: each micro-batch's tasks send as batch writes do (at-least-once: a micro-batch
    Spark replays after a failure is sent again)."""

    def __init__(self, options: dict[str, str]) -> None:
        self.batch = RocketMQWriter(options)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return self.batch.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self.batch.commit(messages)


class RocketMQDataSource(DataSource):
    """`spark.read.format("rocketmq").option("namesrv", ...).option("topic", ...).load()`."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType | str:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return RocketMQReader(_options(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from mqtools.spark.stream import RocketMQStreamReader

        options = _options(self.options)
        _namesrv(options)
        if not _get(options, "topic"):
            raise ValueError("the rocketmq data source needs option topic to read")
        return RocketMQStreamReader(options, _read_options(options), _min_rows(options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return RocketMQStreamWriter(_options(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise ValueError("a topic cannot be overwritten: use mode('append')")
        return RocketMQWriter(_options(self.options))
