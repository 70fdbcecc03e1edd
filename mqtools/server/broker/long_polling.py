"""Long polling (RocketMQ's PullRequestHoldService): pulls that found nothing wait here until a
message for their queue arrives.

`HoldTable` is the sans-IO core: requests keyed by (topic, queue id), woken by an arrival
whose new max offset passes the request's offset and whose tags code the request's
filter accepts, or expired by an explicit `now`. `PullRequestHoldService` wires it to the
event loop: the store's arrival listener calls `notify()` (from any thread) and the
woken requests are answered at once by re-running the pull processor without suspension,
so a message sent while a pull is parked reaches the consumer in one dispatch, not on a
polling tick. A timer answers the requests whose suspend timeout ran out.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.transport import RemotingConnection

Key = tuple[str, int]
log = logging.getLogger(__name__)


@dataclass(slots=True)
class HeldPull:
    """One suspended pull: the connection and request to answer later, and its wait rule."""

    conn: RemotingConnection
    request: RemotingCommand
    topic: str
    queue_id: int
    offset: int
    deadline: float
    tag_filter: Callable[[int], bool] | None = None
    seq: int = field(default_factory=itertools.count().__next__)
    done: bool = False
    waker: Hashable | None = None
    """Of the requests with the same waker (a group's POPs) an arrival wakes one it satisfies, as Apache's
    PopLongPollingService wakes one POP a notification: waking every one ran them all again for one message.
    None: woken whenever satisfied (a pull)."""
    latest: bool = False
    """Of its waker's requests wake the one whose deadline is latest (Apache's NOTIFICATION, notifyLast), not
    the one whose deadline is soonest (its POP); the first to arrive of equal deadlines, or the last."""


def _sooner(a: HeldPull, b: HeldPull) -> bool:
    """`a` comes before `b` in Apache's PopRequest order: its deadline first, then its arrival."""
    return (a.deadline, a.seq) < (b.deadline, b.seq)


class HoldTable:
    """Suspended pulls by queue, plus a deadline heap; no I/O, no clock of its own."""

    def __init__(self) -> None:
        self.by_queue: dict[Key, list[HeldPull]] = {}
        self._deadlines: list[tuple[float, int, HeldPull]] = []
        self._counter = itertools.count()

    def __len__(self) -> int:
        return sum(1 for v in self.by_queue.values() for held in v if not held.done)

    def add(self, held: HeldPull) -> None:
        self.by_queue.setdefault((held.topic, held.queue_id), []).append(held)
        heapq.heappush(self._deadlines, (held.deadline, next(self._counter), held))

    def wake(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None) -> list[HeldPull]:
        """Requests this arrival satisfies; they leave the table."""
        waiting = self.by_queue.get((topic, queue_id))
        if not waiting:
            return []
        woken: list[HeldPull] = []
        chosen: dict[Hashable, HeldPull] = {}
        for held in waiting:
            if held.done:
                continue
            matched = tags_code is None or held.tag_filter is None or held.tag_filter(tags_code)
            if max_offset > held.offset and matched:
                if held.waker is None:
                    held.done = True
                    woken.append(held)
                elif (other := chosen.get(held.waker)) is None or _sooner(held, other) != held.latest:
                    chosen[held.waker] = held
        for held in chosen.values():
            held.done = True
            woken.append(held)
        self._store((topic, queue_id), [held for held in waiting if not held.done])
        return woken

    def expire(self, now: float) -> list[HeldPull]:
        """Requests whose deadline passed. Each queue they waited on is swept once, of these and of the requests
        answered meanwhile (done): one sweep a request made many expiries a loop stall."""
        out = []
        touched: set[Key] = set()
        while self._deadlines and self._deadlines[0][0] <= now:
            _d, _n, held = heapq.heappop(self._deadlines)
            touched.add((held.topic, held.queue_id))
            if held.done:
                continue
            held.done = True
            out.append(held)
        for key in touched:
            self._store(key, [h for h in self.by_queue.get(key, []) if not h.done])
        return out

    def drop_connection(self, conn: RemotingConnection) -> None:
        """A closed connection's requests will never be answered."""
        for key, waiting in list(self.by_queue.items()):
            for held in waiting:
                if held.conn is conn:
                    held.done = True
            self._store(key, [h for h in waiting if not h.done])

    def next_deadline(self) -> float | None:
        while self._deadlines and self._deadlines[0][2].done:
            heapq.heappop(self._deadlines)
        return self._deadlines[0][0] if self._deadlines else None

    def _store(self, key: Key, keep: list[HeldPull]) -> None:
        if keep:
            self.by_queue[key] = keep
        else:
            self.by_queue.pop(key, None)


Answer = Callable[[HeldPull], None]


class PullRequestHoldService:
    """Asyncio shell around HoldTable; `answer(held)` re-runs the pull and replies."""

    def __init__(self, answer: Answer, clock: Callable[[], float] = time.time) -> None:
        self.table = HoldTable()
        self.answer = answer
        self.clock = clock
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    async def shutdown(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None

    def suspend(self, held: HeldPull) -> None:
        self.table.add(held)
        self._arm()

    def notify(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None = None) -> None:
        """A message reached (topic, queue_id); safe to call from the store's threads."""
        if self._loop is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._wake(topic, queue_id, max_offset, tags_code)
        else:
            self._loop.call_soon_threadsafe(self._wake, topic, queue_id, max_offset, tags_code)

    def arrival_listener(self, topic: str, queue_id: int, logic_offset_after: int, tags_code: int,
                         _store_ts: int | None = None) -> None:
        """Signature of the store's add_arrival_listener callback."""
        if self.table.by_queue.get((topic, queue_id)) is None and threading.get_ident() == self._loop_thread:
            return
        self.notify(topic, queue_id, logic_offset_after, tags_code)

    def connection_closed(self, conn: RemotingConnection) -> None:
        self.table.drop_connection(conn)

    def _wake(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None) -> None:
        for held in self.table.wake(topic, queue_id, max_offset, tags_code):
            self._answer(held)

    def _expire(self) -> None:
        self._timer = None
        self._timer_at = None
        for held in self.table.expire(self.clock()):
            self._answer(held)
        self._arm()

    def _answer(self, held: HeldPull) -> None:
        """One failing answer must neither break the store's dispatch nor the others."""
        try:
            self.answer(held)
        except Exception:
            log.exception("answering a held pull for %s:%d failed", held.topic, held.queue_id)

    def _arm(self) -> None:
        """Keep one loop timer at the earliest deadline."""
        if self._loop is None:
            return
        nxt = self.table.next_deadline()
        if nxt is None or (self._timer_at is not None and self._timer_at <= nxt):
            return
        if self._timer is not None:
            self._timer.cancel()
        delay = max(0.0, nxt - self.clock())
        self._timer_at = nxt
        self._timer = self._loop.call_later(delay + 0.001, self._expire)
