"""The jobs behind `mq spark-load`: Spark tasks as producers, and the data source's read throughput.

Each task measures itself (counts, failures by RocketMQ code, bytes, an HDR latency histogram and,
with a target rate, how late each send started against its plan) and the driver merges the tasks'
figures. pyspark is imported inside the functions that need a SparkSession.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mqtools.common.loop import run as run_loop
from mqtools.common.security import ClientSecurity
from mqtools.spark.offsets import READER_GROUP, QueueRange
from mqtools.spark.security import security_reader_options
from mqtools.spark.stats import TaskStats, encode, error_code, new_histogram, record

MODES = ("sync", "async", "batch")
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
"""The log4j2 configuration of the JVM a session starts."""
ASYNC_WINDOW = 256
"""Sends in flight per task in async mode: enough to fill the pipe, bounded so memory stays flat."""


@dataclass(frozen=True, slots=True)
class ProducePlan:
    """What every producing task is asked to do (its share of messages and rate is derived from it)."""

    topic: str
    messages: int | None
    duration: float | None
    rate: float | None
    size: int
    tasks: int
    mode: str
    batch_size: int
    keys: bool
    tags: int

    def share(self, task: int) -> tuple[int | None, float | None]:
        """This task's messages and msgs/s: the totals divided evenly, the remainder to the first tasks."""
        count = None
        if self.messages is not None:
            count = self.messages // self.tasks + (1 if task < self.messages % self.tasks else 0)
        return count, (self.rate / self.tasks if self.rate else None)


def spark_session(master: str, conf: dict[str, str], app_name: str, remote: str | None = None) -> Any:
    """A SparkSession on `master`, or a Spark Connect session to `remote` (sc://HOST:15002), with the
    data source registered. Local executors run this Python unless spark.pyspark.python says otherwise;
    a Connect server's Python workers are the server's own (mqtools must be installed there)."""
    from pyspark.sql import SparkSession

    from mqtools.spark import register

    if remote is not None:
        builder = SparkSession.builder.remote(remote)
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = (SparkSession.builder.master(master).appName(app_name)
                   .config("spark.ui.showConsoleProgress", "false"))
        if "spark.driver.extraJavaOptions" not in conf:  # the JVM this starts logs errors only (log4j2.properties)
            builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if remote is None:  # a failed job's exception carries its task's error: Spark's ERROR log printed it again in pages
        spark.sparkContext.setLogLevel("FATAL")
    register(spark)
    return spark


def _message(plan: ProducePlan, task: int, i: int, body: bytes) -> Any:
    from mqtools.common import properties as P
    from mqtools.common.message import Message

    props = {}
    if plan.keys:
        props[P.KEYS] = f"k-{task}-{i}"
    if plan.tags:
        props[P.TAGS] = f"tag{i % plan.tags}"
    return Message(plan.topic, body, properties=props)


async def _produce(namesrv: str, plan: ProducePlan, task: int, security: ClientSecurity | None) -> TaskStats:
    from mqtools.client.errors import MQClientError
    from mqtools.client.producer import Producer
    from mqtools.client.types import SendStatus

    count, rate = plan.share(task)
    stats, hist, delays = TaskStats(task), new_histogram(), new_histogram()
    body = os.urandom(plan.size)
    window = asyncio.Semaphore(ASYNC_WINDOW)
    pending: set[asyncio.Task[None]] = set()
    step = plan.batch_size if plan.mode == "batch" else 1

    async def send(producer: Producer, msgs: list[Any]) -> None:
        began = time.perf_counter()
        try:
            result = await (producer.send_batch(msgs) if plan.mode == "batch" else producer.send(msgs[0]))
        except MQClientError as exc:  # every failure is counted by its code, the load goes on
            for _ in msgs:
                stats.fail(error_code(exc))
            return
        finally:
            window.release()
        if result.status is not SendStatus.SEND_OK:
            for _ in msgs:
                stats.fail(result.status.value)
            return
        micros = (time.perf_counter() - began) * 1_000_000
        for _ in msgs:
            record(hist, micros)
        stats.messages += len(msgs)
        stats.bytes += len(body) * len(msgs)

    async with Producer(f"mq-spark-load-{uuid.uuid4().hex[:12]}", namesrv=namesrv, security=security) as producer:
        stats.started = time.time()
        start = time.perf_counter()
        i = 0
        while (count is None or i < count) and (plan.duration is None or time.perf_counter() - start < plan.duration):
            n = step if count is None else min(step, count - i)
            if rate:
                planned = start + i / rate
                late = time.perf_counter() - planned
                if late < 0:
                    await asyncio.sleep(-late)
                record(delays, max(time.perf_counter() - planned, 0) * 1_000_000)
            msgs = [_message(plan, task, i + k, body) for k in range(n)]
            await window.acquire()
            if plan.mode == "async":
                job = asyncio.ensure_future(send(producer, msgs))
                pending.add(job)
                job.add_done_callback(pending.discard)
            else:
                await send(producer, msgs)
            i += n
        if pending:
            await asyncio.gather(*pending)
        stats.ended = time.time()
    stats.histogram = encode(hist)
    stats.delay_histogram = encode(delays) if rate else ""
    return stats


#: What each producing task sends back to the driver, as one Arrow row (failures as JSON).
TASK_SCHEMA = ("task int, messages long, failed string, bytes long, started double, ended double, "
               "histogram string, delay_histogram string")


def produce_tasks(namesrv: str, plan: ProducePlan, ids: Iterator[Any], security: ClientSecurity | None
                  ) -> Iterator[Any]:
    """mapInArrow body: each task id in the batches is a producer of its own sending its share."""
    import json

    import pyarrow as pa

    for batch in ids:
        for task in batch.column(0).to_pylist():
            stats = asdict(run_loop(_produce(namesrv, plan, int(task), security)))
            stats["failed"] = json.dumps(stats["failed"])
            yield pa.RecordBatch.from_pylist([stats], schema=_task_arrow_schema())


def _task_arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema([("task", pa.int32()), ("messages", pa.int64()), ("failed", pa.string()),
                      ("bytes", pa.int64()), ("started", pa.float64()), ("ended", pa.float64()),
                      ("histogram", pa.string()), ("delay_histogram", pa.string())])


def run_produce(spark: Any, namesrv: str, plan: ProducePlan, security: ClientSecurity | None = None
                ) -> list[TaskStats]:
    """Run `plan.tasks` producing tasks and collect their figures on the driver. A DataFrame of task
    ids (not an RDD) so the same job runs over Spark Connect, which has no RDDs."""
    import json

    ids = spark.range(0, plan.tasks, 1, plan.tasks)
    rows = ids.mapInArrow(lambda batches: produce_tasks(namesrv, plan, batches, security), TASK_SCHEMA).collect()
    return [TaskStats(r.task, r.messages, json.loads(r.failed), r.bytes, r.started, r.ended, r.histogram,
                      r.delay_histogram) for r in rows]


def _read_stats(batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow body: count, bytes and born-to-read latency of one partition, as one Arrow row."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark import TaskContext

    ctx = TaskContext.get()
    stats = TaskStats(ctx.partitionId() if ctx is not None else 0, started=time.time())
    hist = new_histogram()
    for batch in batches:
        # Born times are milliseconds, so a batch has few distinct latencies: count them in Arrow and
        # record each once with its count, instead of a Python call per message.
        age = pc.subtract(pa.scalar(int(time.time() * 1000), pa.int64()), batch.column("born_ms"))
        for item in pc.value_counts(age).to_pylist():
            record(hist, max(item["values"] or 0, 0) * 1000, item["counts"])
        stats.bytes += pc.sum(batch.column("size")).as_py() or 0
        stats.messages += batch.num_rows
    stats.ended = time.time()
    stats.histogram = encode(hist)
    schema = pa.schema([("task", pa.int32()), ("messages", pa.int64()), ("bytes", pa.int64()),
                        ("started", pa.float64()), ("ended", pa.float64()), ("histogram", pa.string())])
    yield pa.RecordBatch.from_pylist([{"task": stats.task, "messages": stats.messages, "bytes": stats.bytes,
                                        "started": stats.started, "ended": stats.ended,
                                        "histogram": stats.histogram}], schema=schema)


def offsets_json(ranges: list[QueueRange], side: str) -> str:
    """The planned ranges as a data source offsets JSON, so Spark reads exactly what was planned."""
    import json

    table: dict[str, dict[str, int]] = {}
    for r in ranges:
        table.setdefault(r.broker, {})[str(r.queue_id)] = r.start if side == "start" else r.end
    return json.dumps(table)


def limit_ranges(ranges: list[QueueRange], limit: int | None) -> list[QueueRange]:
    """Keep at most `limit` messages, taken evenly across queues from each range's start."""
    if limit is None:
        return ranges
    out, left = list(ranges), limit
    sizes = [0] * len(out)
    while left > 0 and any(sizes[i] < r.size for i, r in enumerate(out)):
        for i, r in enumerate(out):
            if left and sizes[i] < r.size:
                sizes[i] += 1
                left -= 1
    return [QueueRange(r.topic, r.broker, r.queue_id, r.start, r.start + n) for r, n in zip(out, sizes, strict=True)]


def run_consume(spark: Any, namesrv: str, topic: str, ranges: list[QueueRange],
                min_partitions: int | None = None, security: ClientSecurity | None = None,
                group: str = READER_GROUP) -> list[TaskStats]:
    """Read the planned ranges through the data source; each partition reports its figures."""
    reader = (spark.read.format("rocketmq").option("namesrv", namesrv).option("topic", topic)
              .option("consumerGroup", group)
              .option("startingOffsets", offsets_json(ranges, "start"))
              .option("endingOffsets", offsets_json(ranges, "end"))
              .options(**security_reader_options(security)))
    if min_partitions:
        reader = reader.option("minPartitions", str(min_partitions))
    return read_stats(reader.load())


def read_stats(df: Any) -> list[TaskStats]:
    """Each partition of a data source DataFrame (batch or one micro-batch) measured where it is read."""
    measured = df.selectExpr("unix_millis(born_timestamp) AS born_ms", "length(body) AS size")
    schema = "task int, messages long, bytes long, started double, ended double, histogram string"
    rows = measured.mapInArrow(_read_stats, schema).collect()
    return [TaskStats(r.task, r.messages, {}, r.bytes, r.started, r.ended, r.histogram) for r in rows if r.messages]
