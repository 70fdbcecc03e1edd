"""Producer auto-batching: RocketMQ 5's ProduceAccumulator role.

Async sends to a topic are gathered into one SEND_BATCH_MESSAGE while an earlier batch of
that topic is in flight (Nagle-like: a lone send goes at once, so auto-batching costs an idle
producer no latency). A gathered batch goes when an earlier one comes back, when its bodies exceed
`max_bytes`, or `max_delay` seconds after its first send, whichever is first. The batch as a
whole goes through the producer's send loop (queue choice, retries, fault strategy), and each
send's future gets its own slice of the answer or the batch's failure.

`BatchAccumulator` is the sans-IO bookkeeping (the caller passes the time in); `AutoBatcher`
is the asyncio side: futures, the delay timer, the memory waiters and one task per batch.
Memory is bounded: body bytes gathered or in flight never exceed `total_max_bytes` (a send
larger than the bound alone still goes when nothing else is held); a send that does not fit
waits, in arrival order, and is never dropped. Sizes are body bytes, as RocketMQ's
ProduceAccumulator counts them for both bounds: properties and the batch framing are not
counted (the producer still refuses a batch over `max_message_size`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from mqtools.client.errors import MQClientError
from mqtools.client.types import SendResult
from mqtools.common import properties as P
from mqtools.common.message import Message

#: Sends one batch (messages of one topic) within a budget in seconds; the producer's send loop.
SendBatch = Callable[[list[Message], float], Awaitable[SendResult]]
T = TypeVar("T")


@dataclass(slots=True)
class Batch(Generic[T]):
    """Sends of one topic gathered to go as one request."""

    key: str
    opened_at: float
    items: list[T] = field(default_factory=list)
    size: int = 0


class BatchAccumulator(Generic[T]):
    """Which sends go together and when; sizes are body bytes, times are the caller's clock in seconds."""

    def __init__(self, max_delay: float, max_bytes: int, total_max_bytes: int) -> None:
        self.max_delay = max_delay
        self.max_bytes = max_bytes
        self.total_max_bytes = total_max_bytes
        self.held = 0
        """Body bytes gathered or in flight: what the memory bound counts."""
        self._open: dict[str, Batch[T]] = {}
        self._in_flight: dict[str, int] = {}
        self._closing = False

    def has_room(self, size: int) -> bool:
        """Whether a send of `size` bytes fits; an empty accumulator takes anything, so nothing waits forever."""
        return self.held == 0 or self.held + size <= self.total_max_bytes

    def add(self, key: str, item: T, size: int, now: float) -> Batch[T] | None:
        """Gather one send; the batch it completes when that batch must go now."""
        self.held += size
        batch = self._open.get(key)
        if batch is None:
            batch = self._open[key] = Batch(key, now)
        batch.items.append(item)
        batch.size += size
        if self._closing or not self._in_flight.get(key) or batch.size > self.max_bytes:
            return self._take(key)
        return None

    def due(self, now: float) -> list[Batch[T]]:
        """Batches held `max_delay` or longer: they go even though earlier ones are still out."""
        return [self._take(k) for k, b in list(self._open.items()) if now >= b.opened_at + self.max_delay]

    def next_due(self) -> float | None:
        """When the oldest held batch falls due; None when nothing is held back."""
        if not self._open:
            return None
        return min(b.opened_at for b in self._open.values()) + self.max_delay

    def done(self, batch: Batch[T]) -> Batch[T] | None:
        """A batch came back (answered or failed): free its bytes; the key's held batch now goes."""
        self.held -= batch.size
        left = self._in_flight[batch.key] - 1
        if left:
            self._in_flight[batch.key] = left
        else:
            del self._in_flight[batch.key]
        return self._take(batch.key) if batch.key in self._open else None

    def close(self) -> list[Batch[T]]:
        """Shutdown: everything held goes now, and later sends go at once."""
        self._closing = True
        return [self._take(k) for k in list(self._open)]

    def _take(self, key: str) -> Batch[T]:
        batch = self._open.pop(key)
        self._in_flight[key] = self._in_flight.get(key, 0) + 1
        return batch


@dataclass(slots=True)
class PendingSend:
    msg: Message
    size: int
    deadline: float
    future: asyncio.Future[SendResult]


class AutoBatcher:
    """Runs a BatchAccumulator on the event loop; batch tasks join `tasks` so shutdown can await them."""

    def __init__(self, accumulator: BatchAccumulator[PendingSend], send_batch: SendBatch,
                 clock: Callable[[], float], tasks: set[asyncio.Task],
                 loop: Callable[[], asyncio.AbstractEventLoop]) -> None:
        self.acc = accumulator
        self._send_batch = send_batch
        self._clock = clock
        self._loop = loop
        self._tasks = tasks
        self._waiters: deque[PendingSend] = deque()
        self._timer: asyncio.TimerHandle | None = None
        #: What abandon() failed the held sends with: also what a batch cancelled before it started gives its own.
        self._abandoned: Exception | None = None

    def submit(self, msg: Message, budget: float) -> asyncio.Future[SendResult]:
        """Gather one prepared message; its future resolves with its own result or failure."""
        now = self._clock()
        future = self._loop().create_future()
        pending = PendingSend(msg, len(msg.body), now + budget, future)
        if self._waiters or not self.acc.has_room(pending.size):
            self._waiters.append(pending)
        else:
            self._admit(pending, now)
        return future

    def close(self) -> None:
        """Send everything held now (shutdown flushes, it does not drop)."""
        for batch in self.acc.close():
            self._launch(batch)

    def abandon(self, error: Exception) -> None:
        """Shutdown stopped waiting: the sends held back for room fail with `error` (none went out), so that the
        batches shutdown then cancels let none in."""
        self._abandoned = error
        while self._waiters:
            future = self._waiters.popleft().future
            if not future.done():
                future.set_exception(error)

    def _admit(self, pending: PendingSend, now: float) -> None:
        batch = self.acc.add(pending.msg.topic, pending, pending.size, now)
        if batch is not None:
            self._launch(batch)
        elif self._timer is None:
            self._arm()

    def _arm(self) -> None:
        due = self.acc.next_due()
        if due is None:
            return
        self._timer = self._loop().call_later(max(0.0, due - self._clock()), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        for batch in self.acc.due(self._clock()):
            self._launch(batch)
        self._arm()

    def _launch(self, batch: Batch[PendingSend]) -> None:
        task = self._loop().create_task(self._run(batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda t: self._unsent(t, batch))

    def _unsent(self, task: asyncio.Task[None], batch: Batch[PendingSend]) -> None:
        """A batch task cancelled before its first step (shutdown's cancel in the turn it was launched) ran no
        `_run`, so nothing resolved its sends: they fail as held sends do (nothing went out), else are cancelled."""
        if not task.cancelled():
            return
        for pending in batch.items:
            if pending.future.done():
                continue
            if self._abandoned is not None:
                pending.future.set_exception(self._abandoned)
            else:
                pending.future.cancel()

    async def _run(self, batch: Batch[PendingSend]) -> None:
        try:
            await self._deliver([p for p in batch.items if not p.future.done()])
        finally:
            following = self.acc.done(batch)
            if following is not None:
                self._launch(following)
            while self._waiters and self.acc.has_room(self._waiters[0].size):
                self._admit(self._waiters.popleft(), self._clock())

    async def _deliver(self, live: list[PendingSend]) -> None:
        """One request for the live sends of a batch; the answer split, or the failure given to each."""
        if not live:
            return
        budget = min(p.deadline for p in live) - self._clock()
        msgs = [p.msg for p in live]
        try:
            results = split_result(await self._send_batch(msgs, budget), msgs)
        except asyncio.CancelledError:
            for p in live:
                p.future.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - every failure belongs to the sends it held
            results = [exc] * len(live)
        for p, outcome in zip(live, results, strict=True):
            if p.future.done():
                continue
            if isinstance(outcome, SendResult):
                p.future.set_result(outcome)
            else:
                p.future.set_exception(outcome)


def split_result(result: SendResult, msgs: list[Message]) -> list[SendResult]:
    """Each message's own result: the broker answers a batch with every offset msg id and the queue offset
    of the first, the rest following it in the same queue."""
    ids = result.offset_msg_id.split(",")
    if len(ids) != len(msgs):
        raise MQClientError(f"the broker answered {len(ids)} ids for a batch of {len(msgs)}")
    status, queue, first, uniq = result.status, result.queue, result.queue_offset, P.UNIQ_KEY
    offsets = range(first, first + len(msgs)) if first >= 0 else [-1] * len(msgs)
    return [SendResult(status, m.properties.get(uniq, ""), i, queue, o) for m, i, o in zip(msgs, ids, offsets)]
