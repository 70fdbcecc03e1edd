"""SYNC_MASTER waits: replication progress and group transfer.

Puts on a SYNC_MASTER wait until some slave acknowledged past their end offset.  Like
RocketMQ's GroupTransferService the waiters are handled as a group: one ack releases
every waiter whose end offset it covers (a heap ordered by end offset), instead of each
waiter polling.  `ReplicationProgress` and `GroupTransfer` are sans-IO (explicit `now`);
`GroupTransferService` is the thin asyncio layer: it calls each waiter's callback when its wait ends, so a put
that waits for a slave costs a heap entry and a closure, not a task and a chain of coroutines.
"""

from __future__ import annotations

import asyncio
import enum
import heapq
import itertools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("mq.ha")


class Replicated(enum.Enum):
    """How a SYNC_MASTER wait ended."""

    ACKED = "acked"
    TIMED_OUT = "timed out"
    NO_SLAVE = "no slave left"
    """The last slave's connection closed while the put waited: nobody can acknowledge it."""


@dataclass
class ReplicationProgress:
    """push2SlaveMaxOffset and slave availability (isSlaveOK) for one master."""

    fallbehind_max: int = 256 * 1024 * 1024
    push2slave_max_offset: int = 0
    connection_count: int = 0

    def on_ack(self, offset: int) -> bool:
        """Record an ack (max over all slaves, never decreases); True if it advanced."""
        if offset > self.push2slave_max_offset:
            self.push2slave_max_offset = offset
            return True
        return False

    def is_slave_ok(self, master_put_where: int) -> bool:
        return (self.connection_count > 0
                and master_put_where - self.push2slave_max_offset < self.fallbehind_max)

    def fall_behind(self, master_max_offset: int) -> int:
        return max(0, master_max_offset - self.push2slave_max_offset)


@dataclass(slots=True)
class _Waiter:
    end_offset: int
    seq: int
    deadline: float
    callback: Callable[[Any], None] = field(repr=False)
    done: bool = False


class GroupTransfer:
    """Pending SYNC_MASTER requests; released in bulk by acks, expired by deadline. Both heaps hold tuples whose
    first two items order them (the sequence number is unique), so the heaps compare in C, never a waiter."""

    def __init__(self) -> None:
        self._by_offset: list[tuple[int, int, _Waiter]] = []
        self._by_deadline: list[tuple[float, int, _Waiter]] = []
        self._seq = itertools.count()

    def submit(self, end_offset: int, deadline: float,
               callback: Callable[[Any], None] = lambda outcome: None) -> _Waiter:
        waiter = _Waiter(end_offset, next(self._seq), deadline, callback)
        heapq.heappush(self._by_offset, (end_offset, waiter.seq, waiter))
        heapq.heappush(self._by_deadline, (deadline, waiter.seq, waiter))
        return waiter

    def release(self, acked: int) -> list[_Waiter]:
        """Every pending waiter with end_offset <= acked, in offset order."""
        released: list[_Waiter] = []
        heap = self._by_offset
        while heap and (heap[0][2].done or heap[0][0] <= acked):
            waiter = heapq.heappop(heap)[2]
            if not waiter.done:
                waiter.done = True
                released.append(waiter)
        by_deadline = self._by_deadline  # the released are the oldest deadlines as a rule: gone from there too
        while by_deadline and by_deadline[0][2].done:
            heapq.heappop(by_deadline)
        return released

    def expire(self, now: float) -> list[_Waiter]:
        """Every pending waiter whose deadline has passed."""
        expired: list[_Waiter] = []
        heap = self._by_deadline
        while heap and (heap[0][2].done or heap[0][0] <= now):
            _, _, waiter = heapq.heappop(heap)
            if not waiter.done:
                waiter.done = True
                expired.append(waiter)
        return expired

    def drain(self) -> list[_Waiter]:
        """Every pending waiter, in offset order; none is left."""
        drained = [w for _, _, w in sorted(self._by_offset) if not w.done]
        for waiter in drained:
            waiter.done = True
        self._by_offset.clear()
        self._by_deadline.clear()
        return drained

    def next_deadline(self) -> float | None:
        while self._by_deadline and self._by_deadline[0][2].done:
            heapq.heappop(self._by_deadline)
        return self._by_deadline[0][0] if self._by_deadline else None

    def __len__(self) -> int:
        return sum(1 for _, _, w in self._by_offset if not w.done)


class GroupTransferService:
    """Asyncio layer: `when_replicated(end_offset, timeout, callback)` calls the callback with how the wait
    ended, once: a Replicated, or what `outcomes` maps it to (the HA services' PutMessageStatus, so that the store's
    callback is called as it is, with no wrapper a put).

    One timer is armed at the earliest deadline; an ack calls the callbacks of every put it covers at once,
    inside the ack's own handling. The clock is injectable (monotonic seconds).
    """

    def __init__(self, progress: ReplicationProgress, clock: Callable[[], float] = time.monotonic,
                 outcomes: Mapping[Replicated, Any] | None = None) -> None:
        self.progress = progress
        self._clock = clock
        self._outcomes: Mapping[Replicated, Any] = outcomes or {r: r for r in Replicated}
        self._pending = GroupTransfer()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_when = 0.0

    def when_replicated(self, end_offset: int, timeout: float, callback: Callable[[Any], None]) -> None:
        """Call ``callback`` once a slave acknowledged ``end_offset`` (now, if one has), when ``timeout``
        seconds pass, or when the last slave leaves. Callbacks run inside an ack's or the timer's handling; one
        that raises is logged, and the others released with it still run."""
        if self.progress.push2slave_max_offset >= end_offset:
            callback(self._outcomes[Replicated.ACKED])
            return
        deadline = self._clock() + timeout
        self._pending.submit(end_offset, deadline, callback)
        if self._timer is None or self._timer_when > deadline:  # else the armed timer comes first anyway
            self._arm(asyncio.get_running_loop())

    def notify_ack(self, offset: int) -> None:
        """Called for every ack from any slave."""
        self.progress.on_ack(offset)
        acked = self._outcomes[Replicated.ACKED]
        for waiter in self._pending.release(self.progress.push2slave_max_offset):
            _call(waiter, acked)

    def no_slave_left(self) -> None:
        """The last slave connection closed: every waiting put is answered now, as not replicated,
        rather than when its wait times out (Apache keeps it waiting for the dead slave until
        syncFlushTimeout, past a client's 3 s send timeout, so the producer never learns the outcome)."""
        for waiter in self._pending.drain():
            _call(waiter, self._outcomes[Replicated.NO_SLAVE])

    def pending(self) -> int:
        return len(self._pending)

    def shutdown(self) -> None:
        """Fail every waiter."""
        if self._timer:
            self._timer.cancel()
        for waiter in self._pending.drain():
            _call(waiter, self._outcomes[Replicated.TIMED_OUT])

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        deadline = self._pending.next_deadline()
        if deadline is None:
            return
        if self._timer is not None and not self._timer.cancelled() and self._timer_when <= deadline:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_when = deadline
        self._timer = loop.call_later(max(0.0, deadline - self._clock()), self._on_timer, loop)

    def _on_timer(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        for waiter in self._pending.expire(self._clock()):
            _call(waiter, self._outcomes[Replicated.TIMED_OUT])
        self._arm(loop)


def _call(waiter: _Waiter, outcome: Any) -> None:
    try:
        waiter.callback(outcome)
    except Exception:
        log.exception("the callback of a SYNC_MASTER wait for offset %d failed", waiter.end_offset)
