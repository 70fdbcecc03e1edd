"""PopLongPollingService: where POP and NOTIFICATION requests that found nothing wait.

A parked request waits on every queue it looked at (every queue of the topic and its retry topics for a POP of
queue -1), each a HeldPull in mq's `PullRequestHoldService`, reused with this module's answer callback. An
arrival wakes one waiting request of each group (its POPs and, apart from them, its NOTIFICATIONs, as Apache
polls the two in separate services); once woken, a request is done on every queue it waited on, and it runs
again through its handler. A closed connection's requests leave at once, so that no arrival goes to them.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mqtools.remoting.codes import RequestCode, ResponseCode, java_short
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.server import reply
from mqtools.server.broker.long_polling import HeldPull, PullRequestHoldService

if TYPE_CHECKING:
    from mqtools.remoting.transport import RemotingConnection

TagFilter = Callable[[int], bool] | None
Wait = tuple[str, int, int]  # topic, queue id, the offset a new message must pass
Handler = Callable[
    ["RemotingConnection", RemotingCommand, float | None], "RemotingCommand | None | Awaitable"
]
#: A max offset past any queue's: a released FIFO queue wakes what waits on it whatever its offset.
ANY_OFFSET = 1 << 62
#: BrokerConfig.popPollingSize and maxPopPollingSize's defaults: requests parked under one topic, group and queue
#: id (more than this many and the next is refused), and in all (this many and the next is refused), each kind
#: (POP, NOTIFICATION) apart as Apache's two services count them.
POP_POLLING_SIZE = 1024
MAX_POP_POLLING_SIZE = 100_000


@dataclass(slots=True)
class Parked:
    conn: RemotingConnection
    request: RemotingCommand
    deadline: float
    handler: Handler
    waits: list[HeldPull]
    """Where it waits, one entry a queue: once one of them wakes it, the others are done."""


def _key(req: RemotingCommand) -> tuple[int, str | None, str | None, str | None]:
    """What Apache's polling map keys a parked request by (topic, group, queue id asked), per kind of request."""
    ext = req.ext_fields
    return java_short(req.code), ext.get("topic"), ext.get("consumerGroup"), ext.get("queueId")


class PopLongPollingService:
    def __init__(self, clock: Callable[[], float], per_key: int = POP_POLLING_SIZE,
                 total: int = MAX_POP_POLLING_SIZE) -> None:
        self.clock = clock
        self.hold = PullRequestHoldService(self._wake, clock)
        self.per_key, self.total = per_key, total
        self._parked: dict[int, Parked] = {}
        self._by_conn: dict[RemotingConnection, set[int]] = {}
        self._counts: Counter[tuple[int, str | None, str | None, str | None]] = Counter()
        self._kinds: Counter[int] = Counter()
        self._tasks: set[asyncio.Task] = set()

    def park(self, conn: RemotingConnection, req: RemotingCommand, deadline: float, waits: list[Wait],
             tag_filter: TagFilter, handler: Handler, *, latest: bool = False) -> bool:
        """Hold `req` until a message passes one of `waits` or `deadline`; then `handler` runs it again. Of a
        group's requests with the same handler an arrival wakes one: the soonest to expire, or with `latest` (a
        NOTIFICATION) the latest. False, and nothing held, when as many of its kind wait already as the broker
        allows (Apache's POLLING_FULL): clients that park and never come back must not grow the broker without
        bound."""
        key = _key(req)
        if self._kinds[key[0]] >= self.total or self._counts[key] > self.per_key:
            return False
        waker = (req.ext_fields.get("consumerGroup"), handler)
        helds = [HeldPull(conn, req, topic, qid, offset, deadline, tag_filter, waker=waker, latest=latest)
                 for topic, qid, offset in waits or [("", 0, 0)]]
        self._parked[id(req)] = Parked(conn, req, deadline, handler, helds)
        self._by_conn.setdefault(conn, set()).add(id(req))
        self._counts[key] += 1
        self._kinds[key[0]] += 1
        for held in helds:
            self.hold.suspend(held)
        return True

    def _unpark(self, key: int) -> Parked:
        parked = self._parked.pop(key)
        mine = self._by_conn.get(parked.conn)
        if mine is not None:
            mine.discard(key)
            if not mine:
                del self._by_conn[parked.conn]
        counted = _key(parked.request)
        self._counts[counted] -= 1
        if not self._counts[counted]:
            del self._counts[counted]
        self._kinds[counted[0]] -= 1
        return parked

    def notify(self, topic: str, queue_id: int, max_offset: int = ANY_OFFSET) -> None:
        """The queue holds messages up to `max_offset` (a FIFO queue released: any): one waiting request of each
        group looks again."""
        self.hold.notify(topic, queue_id, max_offset)

    def wake_at_release(self, held: list[tuple[str, int, int]], now_ms: int, until: float) -> None:
        """A POP parked on FIFO queues held by a batch looks again when the batch's invisible time ends."""
        loop = asyncio.get_running_loop()
        for topic, qid, release_ms in held:
            delay = max(release_ms - now_ms, 0) / 1000
            if self.clock() + delay < until:
                loop.call_later(delay + 0.001, self.notify, topic, qid)

    def parked_pops(self, group: str, topic: str, queue_id: int) -> int:
        """POP requests of the group parked for the topic and queue id they asked for (POLLING_INFO's
        pollingNum; a POP of queue -1 counts under -1, as Apache keys its polling map). A closed connection's
        leave when it closes."""
        return self._counts[(java_short(RequestCode.POP_MESSAGE), topic, group, str(queue_id))]

    def connection_closed(self, conn: RemotingConnection) -> None:
        """A closed connection's waiting POPs and NOTIFICATIONs are gone: an arrival, which wakes one of a group,
        must not go to one of them (Apache skips inactive channels when it polls its waiting requests)."""
        self.hold.connection_closed(conn)
        for key in list(self._by_conn.get(conn, ())):
            self._unpark(key)

    def _wake(self, held: HeldPull) -> None:
        """A parked POP or NOTIFICATION's queue got a message, or its time ended: run it again, on the next
        loop turn. The arrival comes from inside the store's dispatch of another put, and a POP puts its
        checkpoint: a put must not run inside another one."""
        asyncio.get_running_loop().call_soon(self._wake_now, held)

    def _wake_now(self, held: HeldPull) -> None:
        parked = self._parked.get(id(held.request))
        if parked is None or parked.request is not held.request:
            return
        self._unpark(id(held.request))
        for other in parked.waits:  # an arrival on another of its queues must not run it again
            self.hold.table.finish(other)
        conn, req = parked.conn, parked.request
        if not conn.is_open:
            return
        try:
            resp = parked.handler(conn, req, parked.deadline)
        except Exception as exc:  # noqa: BLE001 - a failing wake must answer, not vanish
            resp = req.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        if resp is None or isinstance(resp, RemotingCommand):
            reply(conn, req, resp)
            return
        task = asyncio.ensure_future(self._reply_later(conn, req, resp))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _reply_later(conn: RemotingConnection, req: RemotingCommand, pending: Awaitable) -> None:
        try:
            resp = await pending
        except Exception as exc:  # noqa: BLE001
            resp = req.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        reply(conn, req, resp)
