"""Push and pull consumers against real `mq namesrv` + two `mq broker` processes."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest
from support.clientsupport import Cluster, create_topic, until

from mqtools.client.instance import ClientInstance
from mqtools.client.producer import Producer, select_by_hash
from mqtools.client.pull_consumer import PullConsumer
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult, MessageModel, PullStatus
from mqtools.common.message import Message, MessageExt
from mqtools.common.topics import dlq_topic
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import ResetOffsetRequestHeader

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]


def collector(sink: list[MessageExt], result: ConsumeResult = ConsumeResult.CONSUME_SUCCESS):
    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        sink.extend(msgs)
        return result

    return listener


def push(cluster: Cluster, group: str, topic: str, sink: list[MessageExt], expression: str = "*", **options
         ) -> PushConsumer:
    consumer = PushConsumer(group, namesrv=cluster.namesrv.addr, rebalance_interval=2.0, **options)
    consumer.subscribe(topic, expression)
    consumer.register_listener(collector(sink))
    return consumer


def owned(consumer: PushConsumer, topic: str) -> int:
    """Queues of `topic` the consumer holds (its %RETRY% topic's queues are not counted)."""
    return sum(1 for mq in consumer.owned_queues if mq.topic == topic)


async def produce(cluster: Cluster, topic: str, count: int, prefix: str, **props: str) -> None:
    async with Producer(f"PG_{topic}", namesrv=cluster.namesrv.addr) as producer:
        for i in range(count):
            await producer.send(Message(topic, f"{prefix}-{i}".encode(), properties=dict(props)))


async def test_tag_subscription_filters_exactly(cluster: Cluster) -> None:
    await create_topic(cluster, "ClientTags", 2)
    async with Producer("PG_TAGS", namesrv=cluster.namesrv.addr) as producer:
        for i in range(30):
            await producer.send(Message("ClientTags", f"t-{i}".encode(), properties={"TAGS": f"Tag{i % 3}"}))
    got: list[MessageExt] = []
    consumer = push(cluster, "CG_TAGS", "ClientTags", got, "Tag0 || Tag2",
                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    async with consumer:
        await until(lambda: len(got) >= 20, 30, "20 messages tagged Tag0 or Tag2")
        await asyncio.sleep(0.5)
    assert sorted(m.tags for m in got) == ["Tag0"] * 10 + ["Tag2"] * 10


async def test_orderly_consumer_sees_each_key_in_send_order(cluster: Cluster) -> None:
    await create_topic(cluster, "ClientOrderly", 4)
    keys = ["k1", "k2", "k3", "k4", "k5"]
    async with Producer("PG_ORDERLY", namesrv=cluster.namesrv.addr) as producer:
        for i in range(20):
            for key in keys:
                await producer.send(Message("ClientOrderly", f"{key}:{i}".encode()), selector=select_by_hash,
                                    arg=key)
    got: list[MessageExt] = []
    consumer = push(cluster, "CG_ORDERLY", "ClientOrderly", got, orderly=True,
                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    async with consumer:
        await until(lambda: len(got) >= 100, 30, "100 ordered messages")
    for key in keys:
        seq = [int(m.body.decode().split(":")[1]) for m in got if m.body.decode().startswith(f"{key}:")]
        assert seq == list(range(20)), key


async def test_rebalance_on_join_and_leave_loses_nothing_and_duplicates_nothing(cluster: Cluster) -> None:
    await create_topic(cluster, "ClientRebalance", 4)
    first: list[MessageExt] = []
    second: list[MessageExt] = []
    c1 = push(cluster, "CG_REBALANCE", "ClientRebalance", first)
    c2 = push(cluster, "CG_REBALANCE", "ClientRebalance", second)
    await c1.start()
    sent = 0
    async with Producer("PG_REBALANCE", namesrv=cluster.namesrv.addr) as producer:

        async def send_some(n: int) -> None:
            nonlocal sent
            for _ in range(n):
                await producer.send(Message("ClientRebalance", f"r-{sent}".encode()))
                sent += 1
                await asyncio.sleep(0.005)

        await until(lambda: owned(c1, "ClientRebalance") == 8, 20, "c1 owning all 8 queues")
        await send_some(150)
        await c2.start()
        await send_some(150)
        await until(lambda: owned(c1, "ClientRebalance") == owned(c2, "ClientRebalance") == 4, 20, "an even split")
        await send_some(150)
        await c1.shutdown()
        await send_some(150)
        await until(lambda: owned(c2, "ClientRebalance") == 8, 20, "c2 taking every queue")
    await until(lambda: len(first) + len(second) >= sent, 40, f"all {sent} messages")
    await asyncio.sleep(1.0)
    await c2.shutdown()
    counts = Counter(m.body for m in first + second)
    assert len(counts) == sent, "a message was lost"
    assert max(counts.values()) == 1, [b for b, n in counts.items() if n > 1][:5]
    assert first and second


async def test_broadcasting_gives_every_consumer_every_message(cluster: Cluster, tmp_path) -> None:
    await create_topic(cluster, "ClientBroadcast", 2)
    sinks: list[list[MessageExt]] = [[], []]
    consumers = [push(cluster, "CG_BROADCAST", "ClientBroadcast", sink, message_model=MessageModel.BROADCASTING,
                      offset_store_dir=tmp_path / "offsets") for sink in sinks]
    for consumer in consumers:
        await consumer.start()
    await until(lambda: all(owned(c, "ClientBroadcast") == 4 for c in consumers), 20, "each consumer owning all queues")
    await produce(cluster, "ClientBroadcast", 40, "b")
    await until(lambda: all(len(s) >= 40 for s in sinks), 30, "40 messages at each consumer")
    for consumer in consumers:
        await consumer.shutdown()
    assert all(sorted(m.body for m in s) == sorted(f"b-{i}".encode() for i in range(40)) for s in sinks)
    assert list((tmp_path / "offsets").rglob("offsets.json"))


async def test_reconsume_later_goes_through_retry_then_dlq(cluster: Cluster) -> None:
    await create_topic(cluster, "ClientRetry", 1)
    await produce(cluster, "ClientRetry", 1, "doomed")
    deliveries: list[MessageExt] = []
    consumer = PushConsumer("CG_RETRY", namesrv=cluster.namesrv.addr, rebalance_interval=2.0, max_reconsume_times=2,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe("ClientRetry", "*")
    consumer.register_listener(collector(deliveries, ConsumeResult.RECONSUME_LATER))
    async with consumer:
        await until(lambda: len(deliveries) >= 3, 60, "the first delivery and two retries")
        await asyncio.sleep(1.0)
    assert [m.reconsume_times for m in deliveries] == [0, 1, 2]
    assert {m.topic for m in deliveries} == {"ClientRetry"}
    async with PullConsumer("CG_DLQ_READER", namesrv=cluster.namesrv.addr) as reader:

        async def in_dlq() -> bool:
            try:
                queues = await reader.fetch_queues(dlq_topic("CG_RETRY"))
            except Exception:  # noqa: BLE001 - no route yet
                return False
            results = [await reader.pull(mq, "*", 0) for mq in queues]
            return any(r.status is PullStatus.FOUND and r.messages[0].body == b"doomed-0" for r in results)

        await until(in_dlq, 30, "the message in the DLQ")


async def test_reset_offsets_by_time_replays_to_an_online_consumer(cluster: Cluster) -> None:
    await create_topic(cluster, "ClientReset", 1)
    got: list[MessageExt] = []
    consumer = push(cluster, "CG_RESET", "ClientReset", got,
                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    async with consumer:
        await produce(cluster, "ClientReset", 10, "reset")
        await until(lambda: len(got) >= 10, 30, "10 messages")
        await consumer.persist_offsets()
        before = int((time.time() - 3600) * 1000)
        instance = ClientInstance(cluster.namesrv.addr)
        try:
            for broker in cluster.brokers.values():
                header = ResetOffsetRequestHeader(topic="ClientReset", group="CG_RESET", timestamp=before,
                                                  is_force=True)
                resp = await instance.invoke(broker.addr, RemotingCommand.request(
                    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header.to_ext()))
                assert resp.code == ResponseCode.SUCCESS, resp.remark
        finally:
            await instance.shutdown()
        await until(lambda: len(got) >= 20, 30, "the 10 messages again after the reset")
    assert Counter(m.body for m in got) == Counter({f"reset-{i}".encode(): 2 for i in range(10)})
