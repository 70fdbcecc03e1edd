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
    the one whose deadline is soonest (its POP); of equal deadlines the last to arrive, where a POP's is the
    first."""


Entry = tuple[float, int, HeldPull]
"""A request in a heap, first given out first (unique: its seq; flat, as 100,000 parked POPs make 900,000)."""


def _wake_entry(held: HeldPull) -> Entry:
    """Where `held` stands among its waker's requests, first woken first: Apache's PopRequest order (deadline, then
    arrival) for a POP, and the reverse for a NOTIFICATION (notifyLast)."""
    return (-held.deadline, -held.seq, held) if held.latest else (held.deadline, held.seq, held)


class _ConnHeld:
    """A connection's requests, for its close; the done ones leave once they outnumber the rest."""

    __slots__ = ("helds", "live")

    def __init__(self) -> None:
        self.helds: list[HeldPull] = []
        self.live = 0


class _Waiting:
    """What waits on one queue: its pulls (each woken when satisfied), and per waker its requests in wake order.
    Requests done elsewhere (expired, woken through another queue, their connection closed) leave the heaps
    lazily; `stale` counts them, and the heaps are rebuilt once they outnumber the live ones."""

    __slots__ = ("live", "pulls", "stale", "wakers")

    def __init__(self) -> None:
        self.pulls: dict[int, HeldPull] = {}
        self.wakers: dict[Hashable, list[Entry]] = {}
        self.live = 0  # requests in the heaps not done
        self.stale = 0  # done ones still in them

    def compact(self) -> None:
        wakers = {}
        for waker, heap in self.wakers.items():
            kept = [entry for entry in heap if not entry[2].done]
            if kept:
                heapq.heapify(kept)
                wakers[waker] = kept
        self.wakers, self.stale = wakers, 0


def _satisfies(held: HeldPull, max_offset: int, tags_code: int | None) -> bool:
    return max_offset > held.offset and (tags_code is None or held.tag_filter is None or held.tag_filter(tags_code))


class HoldTable:
    """Suspended pulls by queue, plus a deadline heap; no I/O, no clock of its own. A request ends through
    `finish` (woken, expired, its connection closed, or done by its owner), which keeps every index's count,
    so that an arrival costs what its own queue's pulls and each waker's first satisfied request cost, and a
    closed connection what it held: with 100,000 POPs parked (maxPopPollingSize) a scan of them all cost 49 ms
    an arrival and 73 ms a closed connection."""

    def __init__(self) -> None:
        self.by_queue: dict[Key, _Waiting] = {}
        self._deadlines: list[Entry] = []
        self._by_conn: dict[RemotingConnection, _ConnHeld] = {}
        self._live = 0

    def __len__(self) -> int:
        return self._live

    def add(self, held: HeldPull) -> None:
        waiting = self.by_queue.get((held.topic, held.queue_id))
        if waiting is None:
            waiting = self.by_queue[(held.topic, held.queue_id)] = _Waiting()
        if held.waker is None:
            waiting.pulls[held.seq] = held
        else:
            heapq.heappush(waiting.wakers.setdefault(held.waker, []), _wake_entry(held))
            waiting.live += 1
        self._compact_deadlines()
        heapq.heappush(self._deadlines, (held.deadline, held.seq, held))
        mine = self._by_conn.get(held.conn)
        if mine is None:
            mine = self._by_conn[held.conn] = _ConnHeld()
        elif len(mine.helds) > 2 * mine.live + 32:
            mine.helds = [h for h in mine.helds if not h.done]
        mine.helds.append(held)
        mine.live += 1
        self._live += 1

    def finish(self, held: HeldPull) -> None:
        """`held` is answered or gone: it leaves every index (the heaps lazily)."""
        if held.done:
            return
        held.done = True
        self._live -= 1
        mine = self._by_conn.get(held.conn)
        if mine is not None:
            mine.live -= 1
            if not mine.live:
                del self._by_conn[held.conn]
        key = (held.topic, held.queue_id)
        waiting = self.by_queue.get(key)
        if waiting is None:
            return
        if held.waker is None:
            waiting.pulls.pop(held.seq, None)
        else:
            waiting.live -= 1
            waiting.stale += 1
        if not waiting.live and not waiting.pulls:
            del self.by_queue[key]  # the store's arrival listener skips queues nobody waits on
        elif waiting.stale > waiting.live + 32:
            waiting.compact()

    def wake(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None) -> list[HeldPull]:
        """Requests this arrival satisfies: every pull, and of each waker's requests the first in its wake order;
        they leave the table."""
        waiting = self.by_queue.get((topic, queue_id))
        if waiting is None:
            return []
        woken = [held for held in waiting.pulls.values() if _satisfies(held, max_offset, tags_code)]
        for heap in list(waiting.wakers.values()):
            chosen = self._first_satisfied(heap, waiting, max_offset, tags_code)
            if chosen is not None:
                woken.append(chosen)
        for held in woken:
            self.finish(held)
        return woken

    @staticmethod
    def _first_satisfied(heap: list[Entry], waiting: _Waiting, max_offset: int,
                         tags_code: int | None) -> HeldPull | None:
        """The first of a waker's requests in wake order that the arrival satisfies; those before it that it does
        not (their filter refuses its tag) stay, and done ones met on the way leave."""
        passed: list[Entry] = []
        chosen = None
        while heap:
            entry = heapq.heappop(heap)
            if entry[2].done:
                waiting.stale -= 1
            elif _satisfies(entry[2], max_offset, tags_code):
                chosen = entry[2]
                waiting.stale -= 1  # out of the heap already: the caller's finish counts it stale again
                break
            else:
                passed.append(entry)
        for entry in passed:
            heapq.heappush(heap, entry)
        return chosen

    def expire(self, now: float) -> list[HeldPull]:
        """Requests whose deadline passed."""
        out = []
        while self._deadlines and self._deadlines[0][0] <= now:
            held = heapq.heappop(self._deadlines)[2]
            if not held.done:
                self.finish(held)
                out.append(held)
        return out

    def drop_connection(self, conn: RemotingConnection) -> None:
        """A closed connection's requests will never be answered."""
        mine = self._by_conn.get(conn)
        for held in list(mine.helds) if mine is not None else []:
            self.finish(held)

    def next_deadline(self) -> float | None:
        while self._deadlines and self._deadlines[0][2].done:
            heapq.heappop(self._deadlines)
        return self._deadlines[0][0] if self._deadlines else None

    def _compact_deadlines(self) -> None:
        """Requests answered before their deadline leave the heap when they reach its top; behind one that waits
        long (a POP may wait up to a day) they would pile up, so the heap is rebuilt once they outnumber the rest."""
        if len(self._deadlines) > 2 * self._live + 64:
            self._deadlines = [entry for entry in self._deadlines if not entry[2].done]
            heapq.heapify(self._deadlines)


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
