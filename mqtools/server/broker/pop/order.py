"""FIFO (orderly) POP: a queue stays held while its last batch is neither acknowledged nor expired
(Apache's ConsumerOrderInfoManager, kept in memory here).

An orderly pop writes no checkpoint: the group's offset stays at the batch's first message until the batch
is acknowledged, so a batch that expires is simply read again, each message with its delivery count + 1
(the POP answer's orderCountInfo, which clients turn into reconsumeTimes). After a broker restart the
table is empty: the batch in flight is delivered again from the committed offset (at least once).
"""

from __future__ import annotations

from dataclasses import dataclass, field

OrderKey = tuple[str, str, int]  # topic, group, queue id

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

    @property
    def complete(self) -> bool:
        return len(self.acked) >= len(self.offsets)


class OrderTable:
    """The batch in flight per (topic, group, queue); times are epoch milliseconds passed in."""

    def __init__(self) -> None:
        self.batches: dict[OrderKey, OrderBatch] = {}

    def blocked(self, key: OrderKey, now_ms: int) -> bool:
        """The queue is held: its batch is neither fully acknowledged nor past its invisible time."""
        batch = self.batches.get(key)
        return batch is not None and not batch.complete and now_ms < batch.invisible_until

    def on_pop(
        self, key: OrderKey, pop_time: int, invisible_ms: int, offsets: list[int], next_offset: int
    ) -> dict[int, int]:
        """A new batch is out; its delivery counts (0 the first time, +1 each time it comes again)."""
        old = self.batches.get(key)
        counts = {o: (old.counts[o] + 1 if old is not None and o in old.counts else 0) for o in offsets}
        self.batches[key] = OrderBatch(
            pop_time, pop_time + invisible_ms, list(offsets), next_offset, counts=counts
        )
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
        return until_ms

    def forget(self, key: OrderKey) -> None:
        self.batches.pop(key, None)
