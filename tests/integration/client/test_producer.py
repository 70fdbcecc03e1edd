"""Producer send modes against real `mq namesrv` + two `mq broker` processes."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest
from support.clientsupport import Cluster, create_topic

from mqtools.client.errors import MQClientError
from mqtools.client.producer import Producer, select_by_hash
from mqtools.client.pull_consumer import PullConsumer
from mqtools.client.sync import SyncProducer
from mqtools.client.types import PullStatus, SendResult, SendStatus
from mqtools.common.message import Message
from mqtools.remoting.bodies import MessageQueue

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


async def read_all(namesrv: str, topic: str, expected: int, within: float = 10.0) -> dict[str, Message]:
    """Everything in the topic, by body, read with a pull consumer from offset 0 of each queue.

    An auto-created topic reaches the name server when each broker's next registration lands
    (asynchronously, as in RocketMQ), and a oneway send may still be on its way: read again,
    with a fresh route, until `expected` messages are there or `within` seconds have passed.
    """
    deadline = time.monotonic() + within
    while True:
        got: dict[str, Message] = {}
        async with PullConsumer("CG_READER", namesrv=namesrv) as consumer:
            for mq in await consumer.fetch_queues(topic):
                offset = 0
                while True:
                    result = await consumer.pull(mq, "*", offset)
                    if result.status is not PullStatus.FOUND:
                        break
                    for msg in result.messages:
                        got[msg.body.decode(errors="replace")[:40]] = msg
                    offset = result.next_begin_offset
        if len(got) >= expected or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    assert len(got) == expected, f"expected {expected} messages in {topic}, found {len(got)}"
    return got


async def test_sync_send_returns_typed_result_and_spreads_over_brokers(cluster: Cluster) -> None:
    async with Producer("PG_SYNC", namesrv=cluster.namesrv.addr) as producer:
        results = [await producer.send(Message("ClientSync", f"sync-{i}".encode(),
                                               properties={"TAGS": "T", "KEYS": f"k{i}"})) for i in range(16)]
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert {r.queue.broker_name for r in results} == {"broker-a", "broker-b"}
    assert len({r.msg_id for r in results}) == 16
    assert all(len(r.offset_msg_id) == 32 for r in results)
    got = await read_all(cluster.namesrv.addr, "ClientSync", 16)
    assert got["sync-3"].keys == ["k3"] and got["sync-3"].tags == "T"


async def test_async_oneway_and_given_queue(cluster: Cluster) -> None:
    called: list[SendResult | None] = []
    async with Producer("PG_ASYNC", namesrv=cluster.namesrv.addr) as producer:
        futures = [producer.send_async(Message("ClientModes", f"async-{i}".encode()),
                                       lambda r, e: called.append(r)) for i in range(10)]
        results = await asyncio.gather(*futures)
        for i in range(5):
            await producer.send_oneway(Message("ClientModes", f"oneway-{i}".encode()))
        pinned = MessageQueue("ClientModes", "broker-b", 2)
        fixed = await producer.send(Message("ClientModes", b"pinned-0"), queue=pinned)
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert len(called) == 10 and all(r is not None for r in called)
    assert fixed.queue == pinned
    got = await read_all(cluster.namesrv.addr, "ClientModes", 16)
    assert all(f"oneway-{i}" in got for i in range(5))
    assert got["pinned-0"].queue_id == 2


async def test_batch_and_compression_round_trip(cluster: Cluster) -> None:
    big = bytes(range(256)) * 400  # 100 KiB, above the 4 KiB compression threshold
    async with Producer("PG_BATCH", namesrv=cluster.namesrv.addr) as producer:
        batch = await producer.send_batch([Message("ClientBatch", f"batch-{i}".encode()) for i in range(10)])
        compressed = await producer.send(Message("ClientBatch", big, properties={"KEYS": "big"}))
    assert batch.status is SendStatus.SEND_OK and batch.msg_id.count(",") == 9
    assert compressed.status is SendStatus.SEND_OK
    async with PullConsumer("CG_BATCH", namesrv=cluster.namesrv.addr) as consumer:
        mq = compressed.queue
        result = await consumer.pull(mq, "*", compressed.queue_offset, 1)
        assert result.messages[0].body == big
        batch_msgs = (await consumer.pull(batch.queue, "*", batch.queue_offset, 32)).messages
    assert [m.body for m in batch_msgs[:10]] == [f"batch-{i}".encode() for i in range(10)]


async def test_ordered_sends_by_sharding_key_stay_on_one_queue(cluster: Cluster) -> None:
    await create_topic(cluster, "ClientOrder", 4)
    async with Producer("PG_ORDER", namesrv=cluster.namesrv.addr) as producer:
        results = {key: [await producer.send(Message("ClientOrder", f"{key}-{i}".encode()),
                                             selector=select_by_hash, arg=key) for i in range(10)]
                   for key in ("alpha", "beta", "gamma")}
    for key, sent in results.items():
        assert len({r.queue for r in sent}) == 1, key
        offsets = [r.queue_offset for r in sent]
        assert offsets == sorted(offsets)


async def test_validation_refuses_before_sending(cluster: Cluster) -> None:
    async with Producer("PG_BAD", namesrv=cluster.namesrv.addr, max_message_size=1024) as producer:
        with pytest.raises(MQClientError, match="empty"):
            await producer.send(Message("ClientBad", b""))
        with pytest.raises(MQClientError, match="exceeds"):
            await producer.send(Message("ClientBad", b"x" * 2048))
        with pytest.raises(MQClientError, match="illegal characters"):
            await producer.send(Message("bad topic!", b"x"))


def test_blocking_facade_sends(cluster: Cluster) -> None:
    with SyncProducer("PG_BLOCKING", namesrv=cluster.namesrv.addr) as producer:
        result = producer.send(Message("ClientBlocking", b"blocking"))
    assert result.status is SendStatus.SEND_OK


async def test_stalled_broker_moves_sends_to_the_other_broker_within_budget(cluster: Cluster) -> None:
    await create_topic(cluster, "ClientStall", 2)
    stalled = cluster.brokers["broker-a"]
    async with Producer("PG_STALL", namesrv=cluster.namesrv.addr, send_timeout=3.0,
                        latency_fault_enabled=True) as producer:
        await producer.send(Message("ClientStall", b"warm-up"))
        stalled.signal(signal.SIGSTOP)
        try:
            timings = []
            for i in range(6):
                began = time.monotonic()
                result = await producer.send(Message("ClientStall", f"stall-{i}".encode()))
                timings.append(time.monotonic() - began)
                assert result.queue.broker_name == "broker-b"
                assert result.status is SendStatus.SEND_OK
        finally:
            stalled.signal(signal.SIGCONT)
    assert max(timings) < 3.0, timings
