"""ConcurrentConsumeService's worker pool: the concurrency bound, the commit point, shutdown."""

from __future__ import annotations

import asyncio

from mqtools.client.consume_service import ConcurrentConsumeService
from mqtools.client.offset_store import OffsetStore
from mqtools.client.process_queue import ProcessQueue
from mqtools.client.types import ConsumeResult
from mqtools.common.message import MessageExt
from mqtools.remoting.bodies import MessageQueue

MQ = MessageQueue("T", "broker-a", 0)


def pulled(pq: ProcessQueue, first: int, n: int) -> list[MessageExt]:
    msgs = [MessageExt(topic="T", queue_offset=first + i) for i in range(n)]
    pq.put(msgs)
    pq.next_offset = first + n
    return msgs


async def test_at_most_concurrency_listeners_run_and_the_offset_follows_the_slowest() -> None:
    release = {i: asyncio.Event() for i in range(10)}
    running: set[int] = set()
    most = 0

    async def listener(msgs: list[MessageExt]) -> ConsumeResult:
        nonlocal most
        offset = msgs[0].queue_offset
        running.add(offset)
        most = max(most, len(running))
        await release[offset].wait()
        running.discard(offset)
        return ConsumeResult.CONSUME_SUCCESS

    service = ConcurrentConsumeService(None, "G", listener, OffsetStore(), concurrency=3,  # type: ignore[arg-type]
                                       max_reconsume_times=16)
    pq = ProcessQueue(MQ, 0)
    service.submit(pq, pulled(pq, 0, 6))
    service.submit(pq, pulled(pq, 6, 4))
    await asyncio.sleep(0)
    assert running == {0, 1, 2}
    for offset in (1, 2, 3):
        release[offset].set()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    assert pq.commit_point() == 0, "offset 0 is still being consumed"
    assert running == {0, 4, 5}
    for offset in range(10):
        release[offset].set()
    await asyncio.wait_for(pq.idle.wait(), 1)
    assert most == 3 and pq.commit_point() == 10 and len(service._workers) == 3
    workers = list(service._workers)
    service.close()
    await asyncio.gather(*workers, return_exceptions=True)
    assert all(w.cancelled() for w in workers)


async def test_a_reset_queue_skips_what_was_queued_before_it() -> None:
    seen: list[int] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        seen.append(msgs[0].queue_offset)
        return ConsumeResult.CONSUME_SUCCESS

    service = ConcurrentConsumeService(None, "G", listener, OffsetStore(), concurrency=2,  # type: ignore[arg-type]
                                       max_reconsume_times=16)
    pq = ProcessQueue(MQ, 0)
    service.submit(pq, pulled(pq, 0, 3))
    pq.restart(100)
    service.submit(pq, pulled(pq, 100, 2))
    for _ in range(3):
        await asyncio.sleep(0)
    assert seen == [100, 101]
    service.close()
