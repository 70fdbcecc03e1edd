"""Offset specs and the plan of queue ranges a batch read covers, without pyspark.

Kept free of Spark so `mq spark-load` can check its input (a bad offsets JSON, an unknown topic) and
fail with one line before a SparkSession starts. The spec language follows Spark's Kafka source:
`earliest`, `latest`, a JSON `{"broker-a": {"0": 42}}` (-2 earliest, -1 latest), or a point in time
(epoch milliseconds or ISO-8601) the brokers resolve to the first message stored at or after it.
Partitions are keyed by broker name and queue id, never an address, so a slave can serve them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mqtools.common.security import ClientSecurity

EARLIEST = -2
LATEST = -1
MIN_TASK_ROWS = 10_000
"""Rows a read task gets at the least where queue ranges are smaller (option minRowsPerPartition): Spark spends
tens of milliseconds on every task of a Python data source, so a streaming micro-batch of 8 ranges of 2,500 rows
read as 8 tasks spent more on the tasks than on the rows (bench/spark_kafka.py's stream: 0.83x Kafka as 8 tasks,
above it as 2)."""
READER_GROUP = "mq-spark-reader"
"""The consumer group a read pulls as (option consumerGroup). A read commits nothing and sends no heartbeat, so every
read can share one group without disturbing it or real groups: a broker that creates groups on first use
(autoCreateSubscriptionGroup) then holds one group for all reads, not a new one for every queue of every job, and
one that does not can be given it once (an ACL grants it once too)."""
from mqtools.common.errors import ToolkitError
from mqtools.common.exitcodes import EXIT_USAGE


class OffsetSpecError(ToolkitError, ValueError):
    """A startingOffsets/endingOffsets value that is none of the accepted forms."""

    exit_code = EXIT_USAGE


class DataLossError(ToolkitError, RuntimeError):
    """Asked-for offsets are below a queue's minimum (gone after retention) and failOnDataLoss is true."""


class UnknownQueuesError(ToolkitError, ValueError):
    """Offsets JSON names queues the topic's route does not have now: a broker set that left it (its master gone
    without a slave), or a name that was never there. Reading on without them would return fewer rows than asked
    for without a word (Spark's Kafka source fails the same way on a partition it cannot find)."""


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """One side of a range: a named end, a timestamp, or explicit offsets per broker and queue."""

    kind: str
    """earliest, latest, time or json."""
    timestamp_ms: int | None = None
    offsets: dict[str, dict[int, int]] | None = None


@dataclass(frozen=True, slots=True)
class QueueRange:
    """Offsets [start, end) of one queue: what one Spark partition reads."""

    topic: str
    broker: str
    queue_id: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(self.end - self.start, 0)


def parse_time(text: str) -> int | None:
    """Epoch milliseconds from digits or an ISO-8601 time (UTC if no zone); None if neither."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def parse_spec(text: str | None, default: str, option: str | None = None) -> OffsetSpec:
    """Parse an offsets option; OffsetSpecError with the reason for anything else, led by the `option`'s
    name where one is given (the CLI's --from)."""
    try:
        return _spec(text, default)
    except OffsetSpecError as exc:
        if option is None:
            raise
        raise OffsetSpecError(f"{option}: {exc}") from None


def _spec(text: str | None, default: str) -> OffsetSpec:
    text = (text or default).strip()
    lowered = text.lower()
    if lowered in ("earliest", "latest"):
        return OffsetSpec(lowered)
    if text.startswith("{"):
        return OffsetSpec("json", offsets=_parse_json(text))
    millis = parse_time(text)
    if millis is None:
        raise OffsetSpecError(f"offsets must be earliest, latest, a JSON like {{\"broker-a\": {{\"0\": 42}}}} "
                              f"or a time (epoch ms or ISO-8601), not {text!r}")
    return OffsetSpec("time", timestamp_ms=millis)


def _parse_json(text: str) -> dict[str, dict[int, int]]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OffsetSpecError(f"offsets JSON is not valid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(doc, dict):
        raise OffsetSpecError('offsets JSON must be an object {"broker": {"queueId": offset}}')
    out: dict[str, dict[int, int]] = {}
    for broker, queues in doc.items():
        if not isinstance(queues, dict):
            raise OffsetSpecError(f"offsets JSON: {broker!r} must map queue ids to offsets")
        table: dict[int, int] = {}
        for queue, offset in queues.items():
            if not str(queue).isdigit() or isinstance(offset, bool) or not isinstance(offset, int) or offset < -2:
                raise OffsetSpecError(f"offsets JSON: {broker}/{queue} must be a queue id with an offset >= -2")
            table[int(queue)] = offset
        out[broker] = table
    return out


def _resolve(spec: OffsetSpec, broker: str, queue_id: int, low: int, high: int, at_time: int | None,
             missing: int) -> int:
    if spec.kind == "earliest":
        return low
    if spec.kind == "latest":
        return high
    if spec.kind == "time":
        return high if at_time is None else at_time
    wanted = (spec.offsets or {}).get(broker, {}).get(queue_id, missing)
    return low if wanted == EARLIEST else high if wanted == LATEST else wanted


def plan_ranges(topic: str, bounds: dict[tuple[str, int], tuple[int, int]], start: OffsetSpec, end: OffsetSpec,
                *, start_times: dict[tuple[str, int], int] | None = None,
                end_times: dict[tuple[str, int], int] | None = None,
                fail_on_data_loss: bool = True) -> list[QueueRange]:
    """One range per queue from (broker, queue) -> (min, max): where each spec puts it, clamped to the
    queue's max. A start under the queue's min is lost data: DataLossError, or the min when skipping. Offsets
    JSON naming a queue `bounds` has not: UnknownQueuesError."""
    named = {(b, q) for spec in (start, end) if spec.kind == "json" for b, qs in (spec.offsets or {}).items()
             for q in qs}
    unknown = sorted(named - bounds.keys())
    if unknown:
        raise UnknownQueuesError(f"{topic}: the offsets name {', '.join(f'{b}:{q}' for b, q in unknown)}, which "
                                 f"the topic's route does not have now (a broker set that left it, or a wrong name)")
    ranges = []
    for (broker, queue_id), (low, high) in sorted(bounds.items()):
        first = _resolve(start, broker, queue_id, low, high, (start_times or {}).get((broker, queue_id)), EARLIEST)
        last = _resolve(end, broker, queue_id, low, high, (end_times or {}).get((broker, queue_id)), LATEST)
        if first < low:
            if fail_on_data_loss:
                raise DataLossError(f"{topic} {broker}:{queue_id}: offset {first} is below the queue's minimum "
                                    f"{low} (removed by retention); set failOnDataLoss=false to skip it")
            first = low
        last = min(last, high)
        ranges.append(QueueRange(topic, broker, queue_id, first, max(first, last)))
    return ranges


def split_ranges(ranges: list[QueueRange], min_partitions: int | None) -> list[QueueRange]:
    """Split large ranges so there are at least `min_partitions` (each piece proportional to its queue's
    share, as Spark's Kafka source does); every offset stays in exactly one piece."""
    total = sum(r.size for r in ranges)
    if not min_partitions or min_partitions <= len(ranges) or total == 0:
        return ranges
    out = []
    for r in ranges:
        pieces = max(1, math.ceil(r.size * min_partitions / total)) if r.size else 1
        step = math.ceil(r.size / pieces) if r.size else 0
        if pieces == 1:
            out.append(r)
            continue
        for begin in range(r.start, r.end, step):
            out.append(QueueRange(r.topic, r.broker, r.queue_id, begin, min(begin + step, r.end)))
    return out


def task_ranges(ranges: list[QueueRange], min_partitions: int | None,
                min_rows: int = MIN_TASK_ROWS) -> list[list[QueueRange]]:
    """What each read task reads: with `min_partitions`, the ranges split to give at least that many tasks
    (split_ranges), one range a task; without, consecutive ranges together until a task holds `min_rows`
    (1 or less: one range a task). Every offset is in exactly one task."""
    if min_partitions or min_rows <= 1:
        return [[r] for r in split_ranges(ranges, min_partitions)]
    tasks: list[list[QueueRange]] = []
    rows = 0
    for r in ranges:
        if not tasks or rows >= min_rows:
            tasks.append([])
            rows = 0
        tasks[-1].append(r)
        rows += r.size
    return tasks


def plan_topic(namesrv: str, topic: str, start: OffsetSpec, end: OffsetSpec, *,
               fail_on_data_loss: bool = True, timeout: float = 5.0,
               security: ClientSecurity | None = None) -> list[QueueRange]:
    """Ask the brokers for the topic's queues and bounds (and times' offsets) and plan the ranges, one a queue."""
    from mqtools.client.admin.sync import SyncMQAdmin

    admin = SyncMQAdmin(namesrv, timeout=timeout, security=security)
    try:
        bounds = {(mq.broker_name, mq.queue_id): b for mq, b in admin.queue_offsets.queue_bounds(topic).items()}
        times = {}
        for side, spec in (("start", start), ("end", end)):
            if spec.kind == "time" and spec.timestamp_ms is not None:
                found = admin.queue_offsets.offsets_for_time(topic, spec.timestamp_ms)
                times[side] = {(mq.broker_name, mq.queue_id): o for mq, o in found.items()}
    finally:
        admin.close()
    return plan_ranges(topic, bounds, start, end, start_times=times.get("start"), end_times=times.get("end"),
                       fail_on_data_loss=fail_on_data_loss)
