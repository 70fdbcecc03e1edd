"""OrderlyConsumeService: one queue's refusal holds only that queue, the consumer's concurrency bounds the listener,
an expired lock pauses its queue until renewed, and a reset or dropped queue's rest is left alone."""

from __future__ import annotations

import asyncio

from mqtools.client.consume_service import OrderlyConsumeService
from mqtools.client.offset_store import OffsetStore
from mqtools.client.process_queue import LOCK_MAX_LIVE_MS, ProcessQueue, now_ms
from mqtools.client.types import ConsumeResult
from mqtools.common.message import MessageExt
from mqtools.remoting.bodies import MessageQueue

A, B, C = (MessageQueue("T", f"broker-{n}", 0) for n in "abc")


def pulled(pq: ProcessQueue, first: int, n: int) -> list[MessageExt]:
    """Messages of `pq` at offsets first.., their body naming the broker and the offset (b"a:3")."""
    msgs = [MessageExt(topic="T", body=f"{pq.mq.broker_name[-1]}:{first + i}".encode(), queue_offset=first + i)
            for i in range(n)]
    pq.put(msgs)
    pq.next_offset = first + n
    return msgs


def service(listener, concurrency: int = 1) -> OrderlyConsumeService:
    return OrderlyConsumeService(None, "G", listener, OffsetStore(),  # type: ignore[arg-type]
                                 concurrency=concurrency, clustering=True)


async def turns(n: int = 10) -> None:
    """Let the consuming tasks run as far as they can without anything new happening."""
    for _ in range(n):
        await asyncio.sleep(0)


async def test_a_refused_message_holds_only_its_own_queue_and_no_slot_while_it_waits() -> None:
    """One slot: while a:0 waits out its retry delay, b's messages get the slot (they waited for good before, the
    whole consumer stopped behind one message)."""
    seen: list[str] = []
    b_done = asyncio.Event()

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        body = msgs[0].body.decode()
        seen.append(body)
        if body == "b:1":
            b_done.set()
        return ConsumeResult.RECONSUME_LATER if body.startswith("a:") else ConsumeResult.CONSUME_SUCCESS

    svc = service(listener)
    pa, pb = ProcessQueue(A, 0, locked=True), ProcessQueue(B, 0, locked=True)
    svc.submit(pa, pulled(pa, 0, 2))
    svc.submit(pb, pulled(pb, 0, 2))
    await asyncio.wait_for(b_done.wait(), 2)
    assert seen == ["a:0", "b:0", "b:1"]
    assert pb.commit_point() == 2 and pa.commit_point() == 0
    svc.close()


async def test_the_listener_runs_for_as_many_queues_at_once_as_the_consumer_s_concurrency() -> None:
    release = asyncio.Event()
    running: set[str] = set()
    most = 0

    async def listener(msgs: list[MessageExt]) -> ConsumeResult:
        nonlocal most
        running.add(msgs[0].body.decode())
        most = max(most, len(running))
        await release.wait()
        running.discard(msgs[0].body.decode())
        return ConsumeResult.CONSUME_SUCCESS

    svc = service(listener, concurrency=2)
    queues = [ProcessQueue(mq, 0, locked=True) for mq in (A, B, C)]
    for pq in queues:
        svc.submit(pq, pulled(pq, 0, 2))
    await turns()
    assert most == 2 and len(running) == 2
    release.set()
    await asyncio.wait_for(asyncio.gather(*(pq.idle.wait() for pq in queues)), 2)
    assert most == 2 and [pq.commit_point() for pq in queues] == [2, 2, 2]


async def test_an_expired_lock_pauses_its_queue_until_the_lock_is_renewed() -> None:
    """Apache's isLockExpired: past LOCK_MAX_LIVE_MS without a renewal the broker's lock may soon be another
    member's, so nothing more of the queue is consumed until it is renewed (it went on until the next rebalance
    dropped the queue)."""
    seen: list[str] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        seen.append(msgs[0].body.decode())
        return ConsumeResult.CONSUME_SUCCESS

    svc = service(listener)
    pq = ProcessQueue(A, 0, locked=True)
    pq.last_lock_ms -= LOCK_MAX_LIVE_MS + 1
    svc.submit(pq, pulled(pq, 0, 2))
    await turns()
    assert seen == []
    pq.lock_renewed(now_ms())
    await asyncio.wait_for(pq.idle.wait(), 2)
    assert seen == ["a:0", "a:1"]


async def test_a_paused_queue_that_is_dropped_stops_waiting() -> None:
    """Else its task held the queue's lock for good, and the queue taken again later waited behind it."""
    svc = service(lambda msgs: ConsumeResult.CONSUME_SUCCESS)
    pq = ProcessQueue(A, 0, locked=True)
    pq.last_lock_ms -= LOCK_MAX_LIVE_MS + 1
    svc.submit(pq, pulled(pq, 0, 2))
    await turns()
    (task,) = svc._workers
    pq.drop()
    await asyncio.wait_for(task, 2)
    assert pq.commit_point() == 0


async def test_a_reset_while_the_listener_runs_loses_nothing_of_the_new_offsets() -> None:
    """The message in the listener when the queue was reset is not taken off the new buffer (it removed the first
    message pulled from the new offset, never consumed)."""
    seen: list[str] = []
    release = asyncio.Event()

    async def listener(msgs: list[MessageExt]) -> ConsumeResult:
        seen.append(msgs[0].body.decode())
        if msgs[0].queue_offset == 0:
            await release.wait()
        return ConsumeResult.CONSUME_SUCCESS

    svc = service(listener)
    pq = ProcessQueue(A, 0, locked=True)
    svc.submit(pq, pulled(pq, 0, 1))
    await turns()
    pq.restart(100)
    svc.submit(pq, pulled(pq, 100, 2))
    release.set()
    await asyncio.wait_for(pq.idle.wait(), 2)
    assert seen == ["a:0", "a:100", "a:101"]
