"""`mq spark-load e2e`: Spark tasks produce while a streaming query reads the same topic, so the report
has end-to-end latency (each message's born time to the moment a reading task sees it) under load.

The stream starts at the offsets the driver resolved before the producers start, so every message sent
is one the stream must read; the run ends when the stream has read as many messages as the producers
had acknowledged, or when `drain_s` passes without that (the report then shows the shortfall), or with the
stream's error when a micro-batch failed and stopped it. Each
micro-batch's partitions measure themselves with consume's reader (`_read_stats`); the driver merges
them per partition index with their HDR histograms, never averaging percentiles.
"""

from __future__ import annotations

import tempfile
import threading
import time
from typing import Any

from mqtools.common.security import ClientSecurity
from mqtools.spark.load import ProducePlan, offsets_json, read_stats, run_produce
from mqtools.spark.offsets import READER_GROUP, QueueRange
from mqtools.spark.security import security_reader_options
from mqtools.spark.stats import TaskStats, encode, merged

TRIGGER = "200 milliseconds"
"""How often the stream looks for new messages: short, so latency reflects the pipeline, not the poll."""
FAILED_CHECK_S = 0.5
"""How often the drain looks whether the stream has stopped on an error."""


def merge_by_task(parts: list[TaskStats]) -> list[TaskStats]:
    """One TaskStats per partition index over every micro-batch: counts summed, histograms merged."""
    groups: dict[int, list[TaskStats]] = {}
    for p in parts:
        groups.setdefault(p.task, []).append(p)
    out = []
    for task, items in sorted(groups.items()):
        out.append(TaskStats(task, sum(i.messages for i in items), {}, sum(i.bytes for i in items),
                             min(i.started for i in items), max(i.ended for i in items),
                             encode(merged([i.histogram for i in items]))))
    return out


class _Reads:
    """What the stream's micro-batches measured so far; producers' total is compared against it."""

    def __init__(self) -> None:
        self.parts: list[TaskStats] = []
        self.changed = threading.Condition()

    def add(self, parts: list[TaskStats]) -> None:
        with self.changed:
            self.parts.extend(parts)
            self.changed.notify_all()

    def wait_for(self, messages: int, timeout: float) -> bool:
        """Whether the stream has read `messages`, waiting at most `timeout` seconds for it."""
        with self.changed:
            return self.changed.wait_for(lambda: sum(p.messages for p in self.parts) >= messages, timeout)

    def drain(self, query: Any, messages: int, timeout: float) -> None:
        """Wait until the stream has read `messages` or `timeout` passes (the report shows a shortfall). A stream
        stopped by a failed micro-batch ends the wait with its error: waiting out the drain, the command reported
        the failure as a shortfall and said nothing of it."""
        deadline = time.monotonic() + timeout
        while not self.wait_for(messages, max(0.0, min(FAILED_CHECK_S, deadline - time.monotonic()))):
            if (error := query.exception()) is not None:
                raise error
            if time.monotonic() >= deadline:
                return


def run_e2e(spark: Any, namesrv: str, plan: ProducePlan, start: list[QueueRange], drain_s: float,
            security: ClientSecurity | None = None, group: str = READER_GROUP) -> tuple[list[TaskStats], list[TaskStats]]:
    """Produce `plan` while a stream from `start`'s ends reads the topic; (producer tasks, reader tasks)."""
    reads = _Reads()

    def batch(df: Any, _batch_id: int) -> None:
        reads.add(read_stats(df))

    with tempfile.TemporaryDirectory(prefix="mq-spark-e2e-") as checkpoint:
        query = (spark.readStream.format("rocketmq").option("namesrv", namesrv).option("topic", plan.topic)
                 .option("consumerGroup", group)
                 .option("startingOffsets", offsets_json(start, "end")).options(**security_reader_options(security))
                 .load().writeStream.foreachBatch(batch).trigger(processingTime=TRIGGER)
                 .option("checkpointLocation", checkpoint).start())
        try:
            produced = run_produce(spark, namesrv, plan, security)
            reads.drain(query, sum(t.messages for t in produced), drain_s)
        finally:
            query.stop()
    return produced, merge_by_task(reads.parts)
