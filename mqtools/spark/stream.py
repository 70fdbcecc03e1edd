"""Streaming reads of the `rocketmq` data source: micro-batches over per-queue offsets.

Offsets are the same JSON the batch options take ({"broker-a": {"0": 42}}), so a checkpoint reads
plainly. Spark's checkpoint is the source of truth; with `commitGroup` each committed micro-batch's
end is also written to that consumer group, so `mq admin group progress` and `mq top` show the job's
lag (Spark commits a micro-batch to its source when it plans the next one, so the group trails by one). `maxOffsetsPerTrigger` caps a micro-batch through the read-limit API (ReadMaxRows).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from mqtools.spark.offsets import QueueRange, parse_spec, plan_ranges, task_ranges
from mqtools.spark.reader import read_batches

if TYPE_CHECKING:
    from mqtools.client.admin.sync import SyncMQAdmin

log = logging.getLogger(__name__)

Offsets = dict[str, dict[str, int]]


def _table(ranges: list[QueueRange], side: str) -> Offsets:
    out: Offsets = {}
    for r in ranges:
        out.setdefault(r.broker, {})[str(r.queue_id)] = r.start if side == "start" else r.end
    return out


def cap(start: Offsets, latest: Offsets, max_rows: int) -> Offsets:
    """Move each queue towards `latest` by its share of `max_rows` (Kafka's rate limit), at least one
    message overall when any is waiting, never past `latest`."""
    waiting = {(b, q): latest[b][q] - start.get(b, {}).get(q, latest[b][q])
               for b in latest for q in latest[b]}
    total = sum(max(n, 0) for n in waiting.values())
    if total <= max_rows:
        return latest
    out: Offsets = {b: dict(qs) for b, qs in start.items()}
    given = 0
    for (b, q), n in sorted(waiting.items()):
        step = n * max_rows // total if n > 0 else 0
        given += step
        out.setdefault(b, {})[q] = start.get(b, {}).get(q, latest[b][q]) + step
    if given == 0:
        b, q = max(waiting, key=lambda k: waiting[k])
        out[b][q] += 1
    return out


class QueueStreamPartition(InputPartition):
    def __init__(self, ranges: list[QueueRange]) -> None:
        super().__init__(tuple((r.broker, r.queue_id, r.start, r.end) for r in ranges))
        self.ranges = ranges


class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches from the offsets Spark hands back; new queues start at their minimum. With
    trigger(availableNow=True) the query reads what the topic held when it started, then ends."""

    def __init__(self, options: dict[str, str], read_options: dict[str, Any], min_rows: int) -> None:
        self.namesrv = options["namesrv"]
        self.min_rows = min_rows
        self.topic = options["topic"]
        self.start = parse_spec(options.get("startingoffsets"), "latest")
        self.fail_on_data_loss = read_options["fail_on_data_loss"]
        self.read_options = read_options
        cap_rows = options.get("maxoffsetspertrigger")
        self.max_rows = int(cap_rows) if cap_rows else None
        self.commit_group = options.get("commitgroup") or None
        self.security = read_options["security"]
        #: trigger(availableNow=True): each queue's end offset when the query started; never read past.
        self.until: Offsets | None = None
        #: (broker, queue) positions latestOffset kept because the queue could not be read (_keep_unseen).
        self.unseen: set[tuple[str, str]] = set()
        #: (broker, queue) -> the queue's minimum when latestOffset last saw it: where a new queue starts.
        self.lows: dict[tuple[str, str], int] = {}
        self._session: SyncMQAdmin | None = None

    def _admin(self) -> SyncMQAdmin:
        """The driver's admin session, kept for the query: it leaves a broker that let a request time out alone
        for a while (10 s), so while a set hangs a micro-batch's planning waits out one admin timeout (5 s) now
        and then, not in every micro-batch as a new session each time did. Closed by stop()."""
        from mqtools.client.admin.sync import SyncMQAdmin

        if self._session is None:
            self._session = SyncMQAdmin(self.namesrv, security=self.security)
        return self._session

    def __getstate__(self) -> dict[str, Any]:
        """A copy for the executors' reads goes without the session (its loop thread cannot be pickled)."""
        return {**self.__dict__, "_session": None}

    def stop(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def _bounds(self, *, readable_only: bool = False) -> dict[tuple[str, int], tuple[int, int]]:
        found = self._admin().queue_offsets.queue_bounds(self.topic, readable_only=readable_only)
        return {(mq.broker_name, mq.queue_id): b for mq, b in found.items()}

    def initialOffset(self) -> dict:
        latest = parse_spec("latest", "latest")
        times = None
        if self.start.kind == "time" and self.start.timestamp_ms is not None:
            found = self._admin().queue_offsets.offsets_for_time(self.topic, self.start.timestamp_ms)
            times = {(mq.broker_name, mq.queue_id): o for mq, o in found.items()}
        ranges = plan_ranges(self.topic, self._bounds(), self.start, latest, start_times=times,
                             fail_on_data_loss=self.fail_on_data_loss)
        return _table(ranges, "start")

    def prepareForTriggerAvailableNow(self) -> None:
        self.until = {}
        for (broker, queue_id), (_low, high) in self._bounds().items():
            self.until.setdefault(broker, {})[str(queue_id)] = high

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_rows) if self.max_rows else ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        bounds = self._live_bounds(start)
        latest: Offsets = {}
        for (broker, queue_id), (low, high) in bounds.items():
            q = str(queue_id)
            self.lows[(broker, q)] = low
            if self.until is not None:  # availableNow: a queue not there when the query started stays where it is
                high = min(high, self.until.get(broker, {}).get(q, start.get(broker, {}).get(q, low)))
            latest.setdefault(broker, {})[q] = high
        self._keep_unseen(start, latest)
        begun = {b: {q: start[b][q] if q in start.get(b, {}) else bounds[(b, int(q))][0] for q in qs}
                 for b, qs in latest.items()}
        if isinstance(limit, ReadMaxRows):
            return cap(begun, latest, limit.max_rows)
        return latest

    def _live_bounds(self, start: dict) -> dict[tuple[str, int], tuple[int, int]]:
        """The bounds of the queues that answer now. A topic without a route (every set holding it gone: a topic on
        one master without a slave, that master down) is no reason to stop a query that has positions: they are kept
        as for a set that left (_keep_unseen), where raising stopped the query. Without positions there is nothing
        to keep, and the error stands."""
        from mqtools.client.errors import TopicNotExistError

        try:
            return self._bounds(readable_only=True)
        except TopicNotExistError:
            if not any(start.values()):
                raise
            return {}

    def _keep_unseen(self, start: dict, latest: Offsets) -> None:
        """A queue this query has a position in that is not read now (its broker set left the route, or no node of
        it answers) keeps that position in `latest`: its micro-batches read nothing there, and once the set is
        back the query goes on from where it was. Left out, the queue would look new when it came back and be read
        again from its minimum. Said once in the log each time the set of such queues changes."""
        unseen = sorted((b, q) for b, qs in start.items() for q in qs if q not in latest.get(b, {}))
        for b, q in unseen:
            latest.setdefault(b, {})[q] = start[b][q]
        if set(unseen) != self.unseen:
            self.unseen = set(unseen)
            if unseen:
                log.warning("%s: %d queue(s) cannot be read now (%s); their positions are kept and read from once "
                            "they answer again", self.topic, len(unseen),
                            ", ".join(f"{b}:{q}" for b, q in unseen))
            else:
                log.warning("%s: every queue can be read again", self.topic)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        firsts = self._new_queue_starts(start, end)
        ranges: list[QueueRange] = []
        for broker, queues in sorted(end.items()):
            for queue, last in sorted(queues.items(), key=lambda kv: int(kv[0])):
                first = start.get(broker, {}).get(queue, firsts.get((broker, queue), 0))
                if last > first:
                    ranges.append(QueueRange(self.topic, broker, int(queue), first, last))
        return [QueueStreamPartition(t) for t in task_ranges(ranges, None, self.min_rows)]

    def _new_queue_starts(self, start: dict, end: dict) -> dict[tuple[str, str], int]:
        """Where each queue of `end` the query has no position in starts: its minimum, as latestOffset counted it
        (Spark's Kafka source starts a new partition at earliest). From offset 0, a set that came back after
        retention removed its first offsets failed every micro-batch with DataLossError. The brokers are asked
        only when there is such a queue; one that does not answer now takes the minimum latestOffset saw."""
        from mqtools.client.errors import MQClientError

        new = {(b, q) for b, qs in end.items() for q in qs if q not in start.get(b, {})}
        if not new:
            return {}
        try:
            found = self._bounds(readable_only=True)
        except MQClientError:
            found = {}
        lows = {**self.lows, **{(b, str(q)): low for (b, q), (low, _high) in found.items()}}
        return {k: lows[k] for k in new if k in lows}

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, QueueStreamPartition)
        yield from read_batches(self.namesrv, partition.ranges, **self.read_options)

    def commit(self, end: dict) -> None:
        """Spark committed a micro-batch: with commitGroup, write its end offsets to the group."""
        if not self.commit_group:
            return
        from mqtools.client.sync import SyncPullConsumer
        from mqtools.remoting.bodies import MessageQueue

        offsets = {MessageQueue(self.topic, broker, int(queue)): int(offset)
                   for broker, queues in end.items() for queue, offset in queues.items()}
        # as a consumer's round: a set that cannot be reached costs one timeout, not one a queue, and its queues wait
        # for the next micro-batch (the group mirrors, the checkpoint rules)
        with SyncPullConsumer(self.commit_group, namesrv=self.namesrv, security=self.security) as consumer:
            missed = [f"{mq.broker_name}:{mq.queue_id}" for mq in consumer.commit_offsets(offsets)]
        if missed:
            log.warning("%s: the offsets of %s could not be committed to %s now; the next micro-batch's commit "
                        "tries again", self.topic, ", ".join(missed), self.commit_group)
