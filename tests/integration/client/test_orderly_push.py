"""An orderly push consumer against real brokers: a message its listener keeps refusing holds back only its own
queue."""

from __future__ import annotations

import asyncio

import pytest
from support.clientsupport import Cluster, create_topic, until

from mqtools.client.producer import Producer
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult
from mqtools.common.message import Message, MessageExt
from mqtools.remoting.bodies import MessageQueue

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


async def test_a_message_refused_for_good_holds_back_only_its_own_queue(cluster: Cluster) -> None:
    """The other queues' messages are consumed while broker-a's queue 0 retries its first message (one refusing
    listener held the consumer's only slot, and nothing else was consumed at all)."""
    topic, group = "ClientOrderlyRefused", "CG_ORDERLY_REFUSED"
    await create_topic(cluster, topic, 2, order=True)
    refused = asyncio.Event()
    consumed: list[str] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        body = msgs[0].body.decode()
        if body == "refused":
            refused.set()
            return ConsumeResult.RECONSUME_LATER
        consumed.append(body)
        return ConsumeResult.CONSUME_SUCCESS

    consumer = PushConsumer(group, namesrv=cluster.namesrv.addr, orderly=True, rebalance_interval=2.0,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic).register_listener(listener)
    others = [MessageQueue(topic, "broker-a", 1), MessageQueue(topic, "broker-b", 0), MessageQueue(topic, "broker-b", 1)]
    sent = [f"m-{i}" for i in range(12)]
    async with Producer(f"PG_{topic}", namesrv=cluster.namesrv.addr) as producer:
        await producer.send(Message(topic, b"refused"), queue=MessageQueue(topic, "broker-a", 0))
        await consumer.start()
        try:
            await asyncio.wait_for(refused.wait(), 30)
            for i, body in enumerate(sent):
                await producer.send(Message(topic, body.encode()), queue=others[i % len(others)])
            await until(lambda: len(consumed) >= len(sent), 30, "the other queues' messages")
        finally:
            await consumer.shutdown(drain_timeout=1.0)
    assert sorted(consumed) == sorted(sent)
