"""ConsumerPool: a worker's read tasks borrow one started consumer per name servers, group and security, which is
shut down once unused for idle_s, never while borrowed."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator

import pytest

from mqtools.client.pull_consumer import PullConsumer
from mqtools.common.security import ClientSecurity, SessionCredentials
from mqtools.spark.consumer_pool import ConsumerPool, worker_pool

NAMESRV = "127.0.0.1:9"  # nothing is asked of it: a consumer connects on its first request


@pytest.fixture
def pool() -> Iterator[ConsumerPool]:
    made = ConsumerPool(idle_s=0.05)
    yield made
    made.close()


def borrowed(pool: ConsumerPool, group: str, security: ClientSecurity | None = None) -> PullConsumer:
    """The consumer a borrow hands out, given back at once."""
    async def once() -> PullConsumer:
        async with pool.borrow(NAMESRV, group, security) as consumer:
            return consumer

    return pool.loop.run(once())


def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within the timeout"
        time.sleep(0.01)


def test_a_task_after_another_borrows_the_same_started_consumer(pool: ConsumerPool) -> None:
    pool.idle_s = 60.0
    first = borrowed(pool, "readers")
    assert borrowed(pool, "readers") is first and first.instance._task is not None  # started
    creds = ClientSecurity(credentials=SessionCredentials("ak", "sk"))
    others = {borrowed(pool, "others"), borrowed(pool, "readers", creds)}
    assert first not in others and len(others) == 2 and len(pool) == 3


def test_an_unused_consumer_is_shut_down_after_idle_s_and_a_borrowed_one_never(pool: ConsumerPool) -> None:
    idle = borrowed(pool, "idle")
    eventually(lambda: len(pool) == 0)
    eventually(lambda: idle.instance._task is None)  # its timers stopped, its connections closed

    async def hold() -> PullConsumer:
        async with pool.borrow(NAMESRV, "held", None) as consumer:
            await asyncio.sleep(pool.idle_s * 6)  # the expiry scheduled by an earlier give-back passes meanwhile
            return consumer

    first = borrowed(pool, "held")
    assert pool.loop.run(hold()) is first  # still pooled after 6 x idle_s: it was borrowed
    eventually(lambda: len(pool) == 0)


def test_the_shutdown_is_due_idle_s_after_the_last_give_back(pool: ConsumerPool) -> None:
    """Each give-back moves the consumer's shutdown to idle_s from then: the one an earlier give-back set is called
    off, so a consumer a stream borrows every trigger is never shut down between two of them."""
    pool.idle_s = 60.0

    async def twice() -> tuple[asyncio.TimerHandle | None, asyncio.TimerHandle | None, bool]:
        async with pool.borrow(NAMESRV, "stream", None):
            pass
        first = pool._pooled[(NAMESRV, "stream", None)].expiry
        async with pool.borrow(NAMESRV, "stream", None):
            while_borrowed = pool._pooled[(NAMESRV, "stream", None)].expiry is None
        return first, pool._pooled[(NAMESRV, "stream", None)].expiry, while_borrowed

    first, second, while_borrowed = pool.loop.run(twice())
    assert first is not None and second is not None and while_borrowed
    assert first.cancelled() and not second.cancelled() and second.when() >= first.when()


def test_a_process_has_one_pool_and_a_forked_child_its_own() -> None:
    """A pool's loop thread does not survive fork: the child's first call makes a pool of its own."""
    parent = worker_pool()
    assert worker_pool() is parent
    pid = os.fork()
    if pid == 0:  # the child: exit 0 when it got a pool of its own whose loop runs
        ok = False
        try:
            child = worker_pool()
            ok = child is not parent and child.loop.run(asyncio.sleep(0, "ran"), timeout=5) == "ran"
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
