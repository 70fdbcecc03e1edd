"""Rebalance.drop: one drain deadline for all the queues dropped, after which the rest of their messages is left
for the next owner; an orderly queue whose lock is lost is given up without a drain."""

from __future__ import annotations

import asyncio

import pytest
from unit.client.fake_remoting import route_data
from unit.client.test_orderly_consume import pulled, turns
from unit.client.test_rebalance import A0, MemoryOffsets, consumer

from mqtools.client.consume_service import ConcurrentConsumeService, ConsumeService, OrderlyConsumeService
from mqtools.client.errors import MQClientError
from mqtools.client.process_queue import LOCK_MAX_LIVE_MS, now_ms
from mqtools.client.rebalance import DROP_DRAIN_TIMEOUT
from mqtools.client.types import ConsumeResult
from mqtools.common.message import MessageExt
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.errors import RemotingConnectError


class RecordedOffsets(MemoryOffsets):
    """What each persist committed."""

    def __init__(self) -> None:
        super().__init__()
        self.persisted: dict[MessageQueue, int] = {}

    async def persist(self, mqs: list[MessageQueue]) -> None:
        self.persisted.update({mq: self.table[mq] for mq in mqs})


@pytest.mark.parametrize("orderly", [True, False])
async def test_a_dropped_queue_s_rest_is_not_consumed_once_its_drain_gave_up(orderly: bool) -> None:
    """The drop committed the offset of the message in the listener then: what follows it goes to the queue's next
    owner (an orderly consumer went on through the whole buffer, and the queue taken again read it twice)."""
    rebalance, _ = consumer(route_data({"broker-a": 1}), orderly=orderly)
    rebalance.offsets = offsets = RecordedOffsets()
    await rebalance.rebalance(["T"])
    pq = rebalance.table[A0]
    seen: list[int] = []
    started, release = asyncio.Event(), asyncio.Event()

    async def listener(msgs: list[MessageExt]) -> ConsumeResult:
        seen.append(msgs[0].queue_offset)
        started.set()
        await release.wait()
        return ConsumeResult.CONSUME_SUCCESS

    svc: ConsumeService = (
        OrderlyConsumeService(None, "G", listener, offsets, concurrency=1, clustering=True) if orderly  # type: ignore[arg-type]
        else ConcurrentConsumeService(None, "G", listener, offsets, concurrency=1,  # type: ignore[arg-type]
                                      max_reconsume_times=16))
    svc.submit(pq, pulled(pq, 0, 4))
    await started.wait()
    await rebalance.drop([A0], 0.05)
    release.set()
    await turns()
    assert seen == [0] and offsets.persisted == {A0: 0}
    svc.close()


async def test_a_drop_of_many_stuck_queues_waits_one_drain_timeout_in_all() -> None:
    """Each queue waited out its own (a shutdown with 8 stuck queues took 80 s, a rebalance stopped renewing
    the locks as long)."""
    rebalance, _ = consumer(route_data({"broker-a": 4}))
    rebalance.offsets = offsets = RecordedOffsets()
    await rebalance.rebalance(["T"])
    for pq in rebalance.table.values():
        pulled(pq, 0, 1)  # in flight, and nothing consumes it
    loop = asyncio.get_running_loop()
    start = loop.time()
    await rebalance.drop(list(rebalance.table), 0.25)
    assert loop.time() - start < 0.75  # one timeout, not four
    assert set(offsets.persisted.values()) == {0} and len(offsets.persisted) == 4


@pytest.mark.parametrize("how", ["refused", "lapsed"])
async def test_an_orderly_queue_whose_lock_is_lost_is_given_up_without_a_drain(how: str) -> None:
    """Its consumption is paused (the lock another member's, or too old to trust), so no drain can come: the
    rebalance waited DROP_DRAIN_TIMEOUT for nothing, renewing no other lock meanwhile."""
    rebalance, brokers = consumer(route_data({"broker-a": 1}), orderly=True)
    rebalance.offsets = offsets = RecordedOffsets()
    await rebalance.rebalance(["T"])
    pq = rebalance.table[A0]
    pulled(pq, 0, 3)
    if how == "refused":
        brokers.held_elsewhere.add(A0)
    else:
        brokers.hung.add("broker-a:10911")
        pq.last_lock_ms -= LOCK_MAX_LIVE_MS + 1
    async with asyncio.timeout(DROP_DRAIN_TIMEOUT / 2):
        await rebalance.rebalance(["T"])
    assert A0 not in rebalance.table and pq.dropped and offsets.persisted == {A0: 0}


async def test_an_orderly_consumer_renews_its_locks_with_every_name_server_down() -> None:
    """The rebalance reads routes first, so with the name servers down it fails before its renewal: an orderly
    consumer's queues then paused at the lock's max live time while their brokers answered. The renewal runs
    on its own timer, as Apache's lockMQPeriodically, from the addresses the instance holds."""
    rebalance, _ = consumer(route_data({"broker-a": 2}), orderly=True)
    await rebalance.rebalance(["T"])
    remoting = rebalance.instance.remoting

    async def down(cmd: object, timeout: float) -> object:
        raise RemotingConnectError("namesrv:9876", "connection refused")

    remoting.invoke_namesrv = down  # type: ignore[method-assign]
    with pytest.raises(MQClientError):
        await rebalance.rebalance(["T"])
    for pq in rebalance.table.values():
        pq.last_lock_ms -= LOCK_MAX_LIVE_MS - 1000  # a second from expiring
    renewal = asyncio.create_task(rebalance.renew_locks_periodically(interval=0.01))
    try:
        async with asyncio.timeout(5):
            while any(now_ms() - pq.last_lock_ms > 1000 for pq in rebalance.table.values()):
                await asyncio.sleep(0.01)
    finally:
        renewal.cancel()
    assert len(rebalance.table) == 2 and not any(pq.lock_expired() for pq in rebalance.table.values())
