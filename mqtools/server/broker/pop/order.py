"""FIFO (orderly) POP: a queue stays held while its last batch is neither acknowledged nor expired
(Apache's ConsumerOrderInfoManager, persisted as its config/consumerOrderInfo.json).

An orderly pop writes no checkpoint: the group's offset stays at the batch's first message until the batch
is acknowledged, so a batch that expires is simply read again, each message with its delivery count + 1
(the POP answer's orderCountInfo, which clients turn into reconsumeTimes).

The table is written as Apache writes it, every 10 s when it changed and at shutdown, so a restarted broker
(Apache's or mq's, on the same store) still holds a queue whose batch is being processed and counts its
deliveries on. A batch the group's committed offset has passed (the file is up to 10 s older than the
offsets after a crash) is dropped when the table is loaded, as it was acknowledged in full.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqtools.remoting import fastjson
from mqtools.server.store.config_manager import ConfigManager

OrderKey = tuple[str, str, int]  # topic, group, queue id

FILE_NAME = "consumerOrderInfo.json"
#: Apache persists the table on this period (BrokerController's schedule beside consumerFilter.json).
PERSIST_INTERVAL_S = 10.0
#: A queue's batch not popped again for this long is dropped when the table is written (Apache's
#: CLEAN_SPAN_FROM_LAST).
CLEAN_SPAN_MS = 24 * 3600 * 1000
#: What `ack` answers for an offset that is not in the current batch, and for a stale pop time.
NOT_IN_BATCH = -1
STALE_POP = -2


@dataclass(slots=True)
class OrderBatch:
    pop_time: int
    invisible_until: int
    offsets: list[int]
    next_offset: int
    acked: set[int] = field(default_factory=set)
    counts: dict[int, int] = field(default_factory=dict)
    #: The POP's attemptId (a 5.x client's receive, passed on by a proxy): the same receive retried, after its
    #: answer was lost, gets the batch again at once, not after its invisible time, with the same counts.
    attempt_id: str | None = None

    @property
    def complete(self) -> bool:
        return len(self.acked) >= len(self.offsets)

    def to_json(self) -> dict[str, Any]:
        """Apache's OrderInfo: offsets as the first and distances from it, acknowledged ones as bits, delivery
        counts above 0 only; the batch's invisible end as its invisible time."""
        first = self.offsets[0]
        doc: dict[str, Any] = {
            "popTime": self.pop_time,
            "i": self.invisible_until - self.pop_time,
            "o": [first] + [o - first for o in self.offsets[1:]],
            "l": self.pop_time,
            "cm": sum(1 << i for i, o in enumerate(self.offsets) if o in self.acked),
        }
        counts = {o: n for o, n in self.counts.items() if n > 0}
        if counts:
            doc["oc"] = counts
        if self.attempt_id is not None:
            doc["a"] = self.attempt_id
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> OrderBatch | None:
        """A batch from Apache's OrderInfo; None for one that holds nothing (no offsets). Its end is the latest
        invisible end of a message not acknowledged (a per-message `ot`, else popTime + i), as Apache blocks."""
        rel = [int(o) for o in doc.get("o") or []]
        if not rel:
            return None
        offsets = [rel[0]] + [rel[0] + d for d in rel[1:]]
        pop_time = int(doc["popTime"])
        bits = int(doc.get("cm") or 0)
        acked = {o for i, o in enumerate(offsets) if bits >> i & 1}
        ends = {int(k): int(v) for k, v in (doc.get("ot") or {}).items()}
        default_end = pop_time + int(doc.get("i") or 0)
        unacked_ends = [ends.get(o, default_end) for o in offsets if o not in acked]
        seen = {int(k): int(v) for k, v in (doc.get("oc") or {}).items()}
        attempt = doc.get("a")
        return cls(pop_time, max(unacked_ends, default=default_end), offsets, offsets[-1] + 1, acked,
                   {o: seen.get(o, 0) for o in offsets}, None if attempt is None else str(attempt))


class ConsumerOrderInfoManager(ConfigManager):
    """The batch in flight per (topic, group, queue); times are epoch milliseconds passed in."""

    def __init__(self, config_dir: Path, *, interval_s: float = PERSIST_INTERVAL_S) -> None:
        super().__init__(Path(config_dir) / FILE_NAME)
        self.interval_s = interval_s
        self.batches: dict[OrderKey, OrderBatch] = {}
        #: Whether a (topic, group, queue) still exists, asked when the table is written (Apache's autoClean).
        self.exists: Callable[[str, str, int], bool] = lambda topic, group, queue_id: True
        #: The epoch milliseconds now, for the clean of batches not popped for a day.
        self.now_ms: Callable[[], int] | None = None

    def blocked(self, key: OrderKey, now_ms: int, attempt_id: str | None = None) -> bool:
        """The queue is held: its batch is neither fully acknowledged nor past its invisible time, and the POP is
        not the batch's own receive tried again (the same attemptId)."""
        batch = self.batches.get(key)
        if batch is None or batch.complete or now_ms >= batch.invisible_until:
            return False
        return attempt_id is None or batch.attempt_id != attempt_id

    def on_pop(
        self, key: OrderKey, pop_time: int, invisible_ms: int, offsets: list[int], next_offset: int,
        attempt_id: str | None = None,
    ) -> dict[int, int]:
        """A new batch is out; its delivery counts (0 the first time, +1 each time it comes again, the same for
        the same attempt tried again)."""
        old = self.batches.get(key)
        if old is not None and attempt_id is not None and old.attempt_id == attempt_id:
            counts = {o: old.counts.get(o, 0) for o in offsets}
        else:
            counts = {o: (old.counts[o] + 1 if old is not None and o in old.counts else 0) for o in offsets}
        self.batches[key] = OrderBatch(
            pop_time, pop_time + invisible_ms, list(offsets), next_offset, counts=counts, attempt_id=attempt_id
        )
        self.dirty = True
        return counts

    def ack(self, key: OrderKey, offset: int, pop_time: int) -> int:
        """The group's new offset after acknowledging `offset` (the first unacknowledged message, or the end
        of the batch once all are), NOT_IN_BATCH or STALE_POP."""
        batch = self.batches.get(key)
        if batch is None:
            return offset + 1
        if batch.pop_time != pop_time:
            return STALE_POP
        if offset not in batch.offsets:
            return NOT_IN_BATCH
        batch.acked.add(offset)
        self.dirty = True
        for o in batch.offsets:
            if o not in batch.acked:
                return o
        del self.batches[key]
        return batch.next_offset

    def change_invisible(self, key: OrderKey, offset: int, pop_time: int, until_ms: int) -> int | None:
        """Move the batch's invisible end to `until_ms`; the new end, or None when the batch is not that one."""
        batch = self.batches.get(key)
        if batch is None or batch.pop_time != pop_time or offset not in batch.offsets:
            return None
        batch.invisible_until = until_ms
        self.dirty = True
        return until_ms

    def drop_settled(self, committed: Callable[[str, str, int], int]) -> int:
        """Drop the batches whose last message the group's committed offset has passed (acknowledged in full
        after the table was last written); how many were dropped."""
        settled = [key for key, batch in self.batches.items() if committed(*key) > batch.offsets[-1]]
        for key in settled:
            del self.batches[key]
        return len(settled)

    # ------------------------------------------------------------------ the file

    def encode(self) -> bytes:
        self._clean()
        table: dict[str, dict[int, dict[str, Any]]] = {}
        for (topic, group, queue_id), batch in self.batches.items():
            table.setdefault(f"{topic}@{group}", {})[queue_id] = batch.to_json()
        return fastjson.dumps({"table": table})

    def decode(self, data: bytes) -> None:
        doc = fastjson.loads(data)
        batches: dict[OrderKey, OrderBatch] = {}
        for key, queues in (doc.get("table") or {}).items():
            topic, sep, group = str(key).partition("@")
            if not sep:
                continue
            for queue_id, info in (queues or {}).items():
                batch = OrderBatch.from_json(info) if info else None
                if batch is not None:
                    batches[(topic, group, int(queue_id))] = batch
        self.batches = batches

    def _clean(self) -> None:
        """What Apache's autoClean drops when it writes: batches of a topic, group or queue that no longer
        exists, and ones not popped for a day."""
        now = self.now_ms() if self.now_ms is not None else None
        for key in [k for k, b in self.batches.items()
                    if not self.exists(*k) or (now is not None and now - b.pop_time > CLEAN_SPAN_MS)]:
            del self.batches[key]

    async def start(self) -> None:
        self.start_persisting(self.interval_s, "consumer-order-info-flush")

    async def shutdown(self) -> None:
        await self.stop_persisting()
