"""The pull consumers a Python worker's read tasks share, as Spark's Kafka source keeps a consumer cache per executor.

Spark runs one read task after another in the same Python worker. Each task started a loop thread and a consumer
of its own: the name server asked for the topic's route again, the brokers connected again, all thrown away a few
hundred milliseconds later. A stream's micro-batches did it every trigger, for every partition: a stream of 16
queues with a 1 s trigger made 16 route queries and 16 broker connections a second. Here a worker keeps one loop
thread and, per name servers, group and security, one started consumer, which the next task borrows; one left
unused for IDLE_S is shut down (its connections closed), so an idle worker keeps no connection open for long.
Borrowers may overlap (threads of one process): a consumer's pulls are independent requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass

from mqtools.client.pull_consumer import PullConsumer
from mqtools.client.sync import LoopThread
from mqtools.common.security import ClientSecurity

IDLE_S = 60.0
"""A pooled consumer unused this long is shut down (Spark's Kafka source: spark.kafka.consumer.cache.timeout, 5 min;
shorter here: a read task takes a consumer again within a job's seconds, and a stream's within its trigger)."""

Key = tuple[str, str, ClientSecurity | None]


@dataclass
class _Pooled:
    consumer: PullConsumer
    users: int = 0
    #: the shutdown due idle_s after the last borrower gave it back (None while borrowed)
    expiry: asyncio.TimerHandle | None = None


class ConsumerPool:
    """One loop thread and the started consumers its reads borrow (`borrow`, on that loop)."""

    def __init__(self, idle_s: float = IDLE_S) -> None:
        self.idle_s = idle_s
        self.loop = LoopThread("mq-spark-reader")
        self._pooled: dict[Key, _Pooled] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._pooled)

    @contextlib.asynccontextmanager
    async def borrow(self, namesrv: str, group: str, security: ClientSecurity | None) -> AsyncIterator[PullConsumer]:
        """A started consumer of `group` on `namesrv`: the pooled one, or a new one that joins the pool."""
        key = (namesrv, group, security)
        pooled = self._pooled.get(key)
        if pooled is None:
            pooled = self._pooled[key] = _Pooled(PullConsumer(group, namesrv=namesrv, security=security))
            await pooled.consumer.start()
        if pooled.expiry is not None:
            pooled.expiry.cancel()
            pooled.expiry = None
        pooled.users += 1
        try:
            yield pooled.consumer
        finally:
            pooled.users -= 1
            if pooled.users == 0:
                pooled.expiry = self.loop.loop.call_later(self.idle_s, self._expire, key, pooled)

    def close(self) -> None:
        """Shut every pooled consumer down and stop the loop thread."""
        async def shut() -> None:
            pooled, self._pooled = list(self._pooled.values()), {}
            for p in pooled:
                if p.expiry is not None:
                    p.expiry.cancel()
            await asyncio.gather(*(p.consumer.shutdown() for p in pooled), *self._closing, return_exceptions=True)

        self.loop.run(shut())
        self.loop.close()

    def _expire(self, key: Key, pooled: _Pooled) -> None:
        """Nobody has borrowed `pooled` for idle_s: out of the pool, and shut down (the task kept until done)."""
        pooled.expiry = None
        if self._pooled.get(key) is pooled and pooled.users == 0:
            del self._pooled[key]
            task = self.loop.loop.create_task(pooled.consumer.shutdown())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)


_lock = threading.Lock()
_pool: tuple[int, ConsumerPool] | None = None


def worker_pool() -> ConsumerPool:
    """This process's pool, made on first use (a forked child makes its own: a loop thread does not survive fork)."""
    global _pool
    with _lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ConsumerPool())
        return _pool[1]
