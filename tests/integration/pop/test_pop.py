"""POP consumption against a real `mq namesrv` + `mq broker`: pop and ack, revive after the invisible time,
change of invisible time, the DLQ, more consumers than queues, FIFO, and a broker SIGKILLed mid-flight.

Invisible times are 1-3 s; every wait is a poll with a generous deadline, never a bare sleep.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from support.clientsupport import Cluster, broker_cluster, call, create_topic, until
from support.mqproc import start_broker

from mqtools.client.admin import MQAdmin
from mqtools.client.pop_consumer import PopConsumer, PopStatus, SyncPopConsumer
from mqtools.client.producer import Producer
from mqtools.common.codec import decode_entries
from mqtools.common.message import Message, MessageExt
from mqtools.common.topics import dlq_topic
from mqtools.remoting.bodies import SubscriptionGroupConfig
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode, SerializeType, java_short
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.pop import (
    ExtraInfo,
    NotificationRequestHeader,
    PeekMessageRequestHeader,
    PopMessageRequestHeader,
    pop_retry_topic_v1,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

#: Generous deadlines: a machine twice as slow must pass.
DEADLINE = 30.0
#: Broker and test read the same wall clock; this covers its rounding to milliseconds.
CLOCK_SLACK = 0.01


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from broker_cluster(tmp_path_factory.mktemp("pop"), ("broker-a",), brokerClusterName="PopIT")


@pytest.fixture
async def consumer_factory(cluster: Cluster) -> AsyncIterator:
    made: list[PopConsumer] = []

    async def make(group: str) -> PopConsumer:
        consumer = await PopConsumer(group, namesrv=cluster.namesrv.addr).start()
        made.append(consumer)
        return consumer

    yield make
    for consumer in made:
        await consumer.shutdown()


async def send(namesrv: str, topic: str, bodies: list[str], **props: str) -> None:
    async with Producer(f"PG_{topic}", namesrv=namesrv) as producer:
        for body in bodies:
            await producer.send(Message(topic, body.encode(), properties=dict(props)))


def body(msg: MessageExt) -> str:
    return bytes(msg.body).decode()


def pop_time(msg: MessageExt) -> float:
    """When the broker popped the message (its receipt's pop time), in epoch seconds."""
    return ExtraInfo.parse(msg.properties["POP_CK"]).pop_time / 1000


async def pop_until(
    consumer: PopConsumer,
    topic: str,
    count: int,
    *,
    invisible_ms: int = 60_000,
    deadline: float = DEADLINE,
    **kwargs,
) -> list[MessageExt]:
    """Pop (long polling) until `count` messages came; fail after `deadline` seconds."""
    got: list[MessageExt] = []
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while len(got) < count:
        assert loop.time() < end, f"only {len(got)} of {count} messages popped from {topic}"
        result = await consumer.pop(topic, min(32, count - len(got)), invisible_ms, 1000, **kwargs)
        got.extend(result.messages)
    return got


async def nothing_for(consumer: PopConsumer, topic: str, seconds: float, **kwargs) -> None:
    """Long-poll for `seconds`: nothing may come."""
    result = await consumer.pop(topic, 32, 60_000, int(seconds * 1000), **kwargs)
    assert result.status is PopStatus.POLLING_NOT_FOUND, [body(m) for m in result.messages]


async def group_offset(addr: str, group: str, topic: str, queue_id: int) -> int:
    ext = {"consumerGroup": group, "topic": topic, "queueId": str(queue_id)}
    resp = await call(addr, RequestCode.QUERY_CONSUMER_OFFSET, ext)
    return int(resp.ext_fields.get("offset", -1)) if resp.code == ResponseCode.SUCCESS else -1


async def max_offset(addr: str, topic: str, queue_id: int = 0) -> int:
    resp = await call(addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue_id)})
    return int(resp.ext_fields.get("offset", 0)) if resp.code == ResponseCode.SUCCESS else 0


async def test_pop_then_ack_and_the_group_offset_moves(cluster: Cluster, consumer_factory) -> None:
    await create_topic(cluster, "PopAck", 2)
    await send(cluster.namesrv.addr, "PopAck", [f"a-{i}" for i in range(10)])
    consumer = await consumer_factory("CG_POP_ACK")
    got = await pop_until(consumer, "PopAck", 10)
    assert sorted(body(m) for m in got) == sorted(f"a-{i}" for i in range(10))
    assert all(m.reconsume_times == 0 and "POP_CK" in m.properties for m in got)
    await consumer.batch_ack(got[:5])
    for msg in got[5:]:
        await consumer.ack(msg)
    addr = cluster.broker.addr
    assert sum([await group_offset(addr, "CG_POP_ACK", "PopAck", q) for q in range(2)]) == 10
    async with MQAdmin(cluster.namesrv.addr) as admin:  # what `mq admin group progress` shows
        progress = await admin.groups.consumer_progress("CG_POP_ACK", "PopAck")
    assert len(progress.queues) == 2 and progress.total_diff == 0
    await nothing_for(consumer, "PopAck", 2.5)  # past the 1 s revive tick and more: nothing acked returns


async def test_unacked_comes_back_after_its_invisible_time_with_reconsume_times_plus_one(
    cluster: Cluster, consumer_factory
) -> None:
    await create_topic(cluster, "PopRevive", 2)
    await send(cluster.namesrv.addr, "PopRevive", ["r-0"])
    consumer = await consumer_factory("CG_POP_REVIVE")
    (first,) = await pop_until(consumer, "PopRevive", 1, invisible_ms=1000)
    (again,) = await pop_until(consumer, "PopRevive", 1, invisible_ms=1000)
    assert time.time() >= pop_time(first) + 1.0 - CLOCK_SLACK
    assert body(again) == "r-0" and again.reconsume_times == 1
    assert again.properties.get("UNIQ_KEY") == first.properties.get("UNIQ_KEY")
    assert again.properties["POP_CK"].split(" ")[4] == "1"  # from the POP retry topic
    await consumer.ack(again)
    await nothing_for(consumer, "PopRevive", 2.5)
    assert await max_offset(cluster.broker.addr, pop_retry_topic_v1("PopRevive", "CG_POP_REVIVE")) == 1


async def test_a_checkpoint_whose_group_the_broker_lost_is_revived_into_the_group_created_again(
    cluster: Cluster, consumer_factory
) -> None:
    """The revive finds a checkpoint of a group the broker has no config for (a slave promoted before it synced a
    group its old master first saw; here the group deleted): it creates the group, as Apache's revive does
    through findSubscriptionGroupConfig, and puts the message back, where it used to drop the checkpoint."""
    await create_topic(cluster, "PopLostGroup", 1)
    await send(cluster.namesrv.addr, "PopLostGroup", ["l-0"])
    consumer = await consumer_factory("CG_POP_LOST")
    await pop_until(consumer, "PopLostGroup", 1, invisible_ms=1000)  # not acknowledged: due in 1 s
    resp = await call(cluster.broker.addr, RequestCode.DELETE_SUBSCRIPTIONGROUP,
                      {"groupName": "CG_POP_LOST", "cleanOffset": "false"})
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    retry = pop_retry_topic_v1("PopLostGroup", "CG_POP_LOST")
    end = time.monotonic() + DEADLINE
    while await max_offset(cluster.broker.addr, retry) < 1:  # no POP meanwhile: nothing else creates the group
        assert time.monotonic() < end, "the checkpoint of the deleted group was dropped, not revived"
        await asyncio.sleep(0.1)
    (again,) = await pop_until(consumer, "PopLostGroup", 1, invisible_ms=60_000)
    assert (body(again), again.reconsume_times) == ("l-0", 1)
    await consumer.ack(again)


async def test_a_parked_pop_wakes_when_the_first_revived_message_creates_the_retry_topic(
    cluster: Cluster, consumer_factory
) -> None:
    """A POP parked before the group's retry topic exists gets the message the revive puts there first, as
    the message comes back, not when its 20 s poll ends (Apache's arrival notice for POP retry topics)."""
    await create_topic(cluster, "PopWakeRetry", 1)
    await send(cluster.namesrv.addr, "PopWakeRetry", ["w-0"])
    consumer = await consumer_factory("CG_POP_WAKE")
    await pop_until(consumer, "PopWakeRetry", 1, invisible_ms=1000)  # not acknowledged: back in 1 s
    began = time.monotonic()
    parked = await consumer.pop("PopWakeRetry", 1, 60_000, 20_000)
    waited = time.monotonic() - began
    assert [(body(m), m.reconsume_times) for m in parked.messages] == [("w-0", 1)], parked.status
    assert waited < 12, f"woken after {waited:.1f} s: at the end of the poll, not at the message's return"
    await consumer.ack(parked.messages[0])


async def test_change_invisible_time_postpones_and_the_new_receipt_acks(
    cluster: Cluster, consumer_factory
) -> None:
    await create_topic(cluster, "PopChange", 1)
    await send(cluster.namesrv.addr, "PopChange", ["c-0", "c-1"])
    consumer = await consumer_factory("CG_POP_CHANGE")
    msgs = await pop_until(consumer, "PopChange", 2, invisible_ms=1000)
    by_body = {body(m): m for m in msgs}
    await consumer.change_invisible_time(by_body["c-0"], 4000)  # postponed, then comes back
    await consumer.change_invisible_time(by_body["c-1"], 1000)
    await consumer.ack(by_body["c-1"])  # acked with its new receipt: never back
    await nothing_for(consumer, "PopChange", 2.5)
    (back,) = await pop_until(consumer, "PopChange", 1, invisible_ms=60_000)
    assert body(back) == "c-0" and back.reconsume_times == 1
    assert time.time() >= pop_time(by_body["c-0"]) + 4.0 - CLOCK_SLACK  # the receipt names the new pop
    await consumer.ack(back)


async def test_past_max_reconsume_times_the_message_goes_to_the_dlq(
    cluster: Cluster, consumer_factory
) -> None:
    group = "CG_POP_DLQ"
    resp = await call(
        cluster.broker.addr,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        body=SubscriptionGroupConfig(group_name=group, retry_max_times=1).to_json(),
    )
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    await create_topic(cluster, "PopDlq", 1)
    await send(cluster.namesrv.addr, "PopDlq", ["d-0"])
    consumer = await consumer_factory(group)
    (first,) = await pop_until(consumer, "PopDlq", 1, invisible_ms=1000)
    (second,) = await pop_until(consumer, "PopDlq", 1, invisible_ms=1000)
    assert (first.reconsume_times, second.reconsume_times) == (0, 1)
    await until(lambda: max_offset(cluster.broker.addr, dlq_topic(group)), DEADLINE, "the message in the DLQ")
    await nothing_for(consumer, "PopDlq", 1.5)


async def test_more_consumers_than_queues_all_receive(cluster: Cluster, consumer_factory) -> None:
    await create_topic(cluster, "PopMany", 2)
    await send(cluster.namesrv.addr, "PopMany", [f"m-{i}" for i in range(40)])
    consumers = [await consumer_factory("CG_POP_MANY") for _ in range(5)]
    got: dict[int, list[str]] = {i: [] for i in range(5)}

    async def run(i: int) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + DEADLINE
        while sum(map(len, got.values())) < 40 and loop.time() < end:
            result = await consumers[i].pop("PopMany", 2, 60_000, 300)
            got[i].extend(body(m) for m in result.messages)
            for msg in result.messages:
                await consumers[i].ack(msg)
            await asyncio.sleep(0.01)

    await asyncio.gather(*(run(i) for i in range(5)))
    everything = [b for bodies in got.values() for b in bodies]
    assert sorted(everything) == sorted(f"m-{i}" for i in range(40)), Counter(everything)  # each once
    assert all(got.values()), {i: len(v) for i, v in got.items()}


async def test_an_arrival_wakes_one_waiting_pop_of_the_group_and_the_broker_keeps_answering(
    cluster: Cluster, consumer_factory
) -> None:
    """Eight consumers long-polling a topic of eight queues while 400 messages are sent one at a time: every
    send answered, every message popped once, and each arrival handed to one waiting POP of the group, as
    Apache's PopLongPollingService does. A POP waits on every queue of the topic; before, the one that woke
    it left its waits on the other queues behind, each arrival there ran it again (and parked it again on
    every queue), and at four consumers the broker's loop spent itself sweeping the waits: sends timed out."""
    topic, count = "PopHerd", 400
    await create_topic(cluster, topic, 8)
    consumers = [await consumer_factory("CG_POP_HERD") for _ in range(8)]
    got: Counter[str] = Counter()
    stop = asyncio.Event()

    async def run(consumer: PopConsumer) -> None:
        while not stop.is_set():
            result = await consumer.pop(topic, 32, 60_000, 2_000)
            got.update(body(m) for m in result.messages)
            for msg in result.messages:
                await consumer.ack(msg)

    tasks = [asyncio.create_task(run(c)) for c in consumers]
    try:
        await until(lambda: parked_pops(cluster, "CG_POP_HERD", topic, 8), DEADLINE, "every consumer's POP waiting")
        await send(cluster.namesrv.addr, topic, [f"h-{i}" for i in range(count)])
        await until(lambda: sum(got.values()) >= count, DEADLINE, f"{count} messages popped")
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert got == Counter(f"h-{i}" for i in range(count))


async def parked_pops(cluster: Cluster, group: str, topic: str, n: int) -> bool:
    ext = {"consumerGroup": group, "topic": topic, "queueId": "-1"}
    resp = await call(cluster.brokers["broker-a"].addr, RequestCode.POLLING_INFO, ext)
    return resp.code == ResponseCode.SUCCESS and int(resp.ext_fields["pollingNum"]) == n


async def test_fifo_pop_holds_the_queue_until_acked(cluster: Cluster, consumer_factory) -> None:
    await create_topic(cluster, "PopFifo", 1)
    await send(cluster.namesrv.addr, "PopFifo", [f"f-{i}" for i in range(3)])
    a = await consumer_factory("CG_POP_FIFO")
    b = await consumer_factory("CG_POP_FIFO")
    batch = (await a.pop("PopFifo", 2, 2500, 2000, order=True)).messages
    assert [body(m) for m in batch] == ["f-0", "f-1"]
    await nothing_for(b, "PopFifo", 0.5, order=True)  # held by a's batch
    # a never acks: b's POP, parked on the held queue, is answered when a's batch expires (not at its poll end)
    again = (await b.pop("PopFifo", 2, 60_000, 20_000, order=True)).messages
    assert pop_time(batch[0]) + 2.5 - CLOCK_SLACK <= time.time() < pop_time(batch[0]) + 15
    assert [body(m) for m in again] == ["f-0", "f-1"] and [m.reconsume_times for m in again] == [1, 1]
    await nothing_for(a, "PopFifo", 0.5, order=True)
    for msg in again:
        await b.ack(msg)
    (last,) = await pop_until(a, "PopFifo", 1, invisible_ms=60_000, order=True)
    assert body(last) == "f-2" and last.reconsume_times == 0
    await a.ack(last)
    assert await group_offset(cluster.broker.addr, "CG_POP_FIFO", "PopFifo", 0) == 3


async def test_the_16_bit_code_of_the_binary_serializer_is_served(cluster: Cluster) -> None:
    await create_topic(cluster, "PopShort", 1)
    header = PopMessageRequestHeader("CG_POP_SHORT", "PopShort", -1, 4, 30_000, 0, 0, 0)
    cmd = RemotingCommand.request(
        java_short(RequestCode.POP_MESSAGE), header.to_ext(), serialize_type=SerializeType.ROCKETMQ
    )
    client = RemotingClient()
    try:
        resp = await client.invoke(cluster.broker.addr, cmd, 10)
    finally:
        await client.close()
    assert resp.code == ResponseCode.POLLING_TIMEOUT, resp.remark
    pop = header.to_ext()
    receipt = "0 1 30000 0 0 broker-a 0 0"
    target = {"consumerGroup": "CG_POP_SHORT", "topic": "PopShort", "queueId": "0", "offset": "0"}
    refusals = [  # Apache's codes for each bad request; the broker stays up and answers them all
        (RequestCode.POP_MESSAGE, {**pop, "maxMsgNums": "33"}, None, ResponseCode.INVALID_PARAMETER),
        (RequestCode.POP_MESSAGE, {**pop, "queueId": "7"}, None, ResponseCode.INVALID_PARAMETER),
        (RequestCode.POP_MESSAGE, {**pop, "topic": "NoSuchTopic"}, None, ResponseCode.TOPIC_NOT_EXIST),
        (
            RequestCode.POP_MESSAGE,
            {**pop, "expType": "SQL92", "exp": "a > 1"},
            None,
            ResponseCode.SUBSCRIPTION_PARSE_FAILED,
        ),
        (RequestCode.POP_MESSAGE, {"topic": "PopShort"}, None, ResponseCode.SYSTEM_ERROR),  # fields missing
        (RequestCode.ACK_MESSAGE, {**target, "extraInfo": "x"}, None, ResponseCode.SYSTEM_ERROR),
        (
            RequestCode.ACK_MESSAGE,
            {**target, "extraInfo": receipt, "offset": "5"},
            None,
            ResponseCode.NO_MESSAGE,
        ),
        (
            RequestCode.ACK_MESSAGE,
            {**target, "extraInfo": receipt, "queueId": "3"},
            None,
            ResponseCode.MESSAGE_ILLEGAL,
        ),
        (
            RequestCode.ACK_MESSAGE,
            {**target, "extraInfo": receipt, "topic": "NoSuchTopic"},
            None,
            ResponseCode.TOPIC_NOT_EXIST,
        ),
        (
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
            {**target, "extraInfo": receipt, "invisibleTime": "1000"},
            None,
            ResponseCode.NO_MESSAGE,
        ),  # nothing at offset 0 yet
        (RequestCode.BATCH_ACK_MESSAGE, {}, b'{"acks":[]}', ResponseCode.NO_MESSAGE),
        (RequestCode.BATCH_ACK_MESSAGE, {}, b"not json", ResponseCode.SYSTEM_ERROR),
    ]
    for code, ext, body_bytes, expected in refusals:
        resp = await call(cluster.broker.addr, code, ext, body_bytes)
        assert resp.code == expected, (code, ext, resp.code, resp.remark)
        assert resp.remark or expected == ResponseCode.NO_MESSAGE


async def test_notification_long_polls_and_peek_takes_nothing(cluster: Cluster, consumer_factory) -> None:
    await create_topic(cluster, "PopNotify", 1)
    addr, group = cluster.broker.addr, "CG_POP_NOTIFY"

    def notification(poll_ms: int) -> dict[str, str]:
        return NotificationRequestHeader(group, "PopNotify", -1, poll_ms, int(time.time() * 1000)).to_ext()

    resp = await call(addr, java_short(RequestCode.NOTIFICATION), notification(0))
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["hasMsg"] == "false"
    held = asyncio.ensure_future(call(addr, RequestCode.NOTIFICATION, notification(20_000), timeout=30))
    await asyncio.sleep(0.3)  # let it park: the answer must come from the arrival, not the poll time
    started = time.monotonic()
    await send(cluster.namesrv.addr, "PopNotify", ["n-0"])
    resp = await held
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["hasMsg"] == "true"
    assert time.monotonic() - started < 15
    peek = PeekMessageRequestHeader(group, "PopNotify", -1, 4).to_ext()
    for _ in range(2):  # peeking twice sees the same message: nothing is taken
        resp = await call(addr, RequestCode.PEEK_MESSAGE, peek)
        assert resp.code == ResponseCode.SUCCESS
        assert [body(m) for m in decode_entries(resp.body)] == ["n-0"]
    consumer = await consumer_factory(group)
    (msg,) = await pop_until(consumer, "PopNotify", 1)
    assert body(msg) == "n-0"
    await consumer.ack(msg)


async def test_an_arrival_wakes_a_waiting_notification_and_a_waiting_pop_of_the_same_group(cluster: Cluster) -> None:
    """A group's NOTIFICATIONs and its POPs do not share an arrival (Apache waits for them in two services): one
    message answers both, the notification "has a message" and the POP with it, long before their poll time."""
    await create_topic(cluster, "PopBoth", 1)
    addr, group, now = cluster.broker.addr, "CG_POP_BOTH", int(time.time() * 1000)
    client = RemotingClient()
    try:  # one connection, so the broker parks the notification before it reads the POP
        notify = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(
            RequestCode.NOTIFICATION, NotificationRequestHeader(group, "PopBoth", -1, 20_000, now).to_ext()), 30))
        pop = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(
            RequestCode.POP_MESSAGE, PopMessageRequestHeader(group, "PopBoth", -1, 4, 60_000, 20_000, now, 0).to_ext()),
            30))
        await until(lambda: parked_pops(cluster, group, "PopBoth", 1), DEADLINE, "the POP waiting")
        started = time.monotonic()
        await send(cluster.namesrv.addr, "PopBoth", ["b-0"])
        notified, popped = await asyncio.gather(notify, pop)
    finally:
        await client.close()
    assert time.monotonic() - started < 15
    assert notified.code == ResponseCode.SUCCESS and notified.ext_fields["hasMsg"] == "true"
    assert popped.code == ResponseCode.SUCCESS and [body(m) for m in decode_entries(popped.body)] == ["b-0"]


async def test_a_waiting_pop_whose_connection_closed_takes_no_arrival_from_a_live_one(cluster: Cluster) -> None:
    """An arrival wakes one waiting POP of a group: a POP left by a connection that closed (a consumer restarted,
    a proxy killed) is no longer one of them, so the live POP gets the message at once, not after its poll."""
    await create_topic(cluster, "PopGone", 1)
    addr, group = cluster.broker.addr, "CG_POP_GONE"

    def waiting_pop(client: RemotingClient) -> asyncio.Future:
        header = PopMessageRequestHeader(group, "PopGone", -1, 4, 60_000, 20_000, int(time.time() * 1000), 0)
        return asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(RequestCode.POP_MESSAGE,
                                                                                 header.to_ext()), 30))

    gone, live = RemotingClient(), RemotingClient()
    try:
        left = waiting_pop(gone)
        await until(lambda: parked_pops(cluster, group, "PopGone", 1), DEADLINE, "the first POP waiting")
        await gone.close()
        await asyncio.gather(left, return_exceptions=True)
        await until(lambda: parked_pops(cluster, group, "PopGone", 0), DEADLINE, "the broker seeing it closed")
        pop = waiting_pop(live)
        await until(lambda: parked_pops(cluster, group, "PopGone", 1), DEADLINE, "the live POP waiting")
        started = time.monotonic()
        await send(cluster.namesrv.addr, "PopGone", ["g-0"])
        popped = await pop
    finally:
        await live.close()
    assert time.monotonic() - started < 15
    assert popped.code == ResponseCode.SUCCESS and [body(m) for m in decode_entries(popped.body)] == ["g-0"]


def test_the_blocking_twin_pops_and_acks(cluster: Cluster) -> None:
    asyncio.run(create_topic(cluster, "PopSync", 1))
    asyncio.run(send(cluster.namesrv.addr, "PopSync", ["s-0"]))
    with SyncPopConsumer("CG_POP_SYNC", namesrv=cluster.namesrv.addr) as consumer:
        result = consumer.pop("PopSync", 4, 60_000, 5_000)
        assert [body(m) for m in result.messages] == ["s-0"]
        consumer.change_invisible_time(result.messages[0], 30_000)
        consumer.ack(result.messages[0])
        assert consumer.pop("PopSync", 4, 1_000, 1_000).status is PopStatus.POLLING_NOT_FOUND


async def test_broker_sigkill_loses_no_unacked_and_returns_no_acked(cluster: Cluster, tmp_path: Path) -> None:
    """A broker of its own (beside the module's name server), SIGKILLed right after the acks."""
    namesrv = cluster.namesrv.addr
    own = Cluster(
        cluster.namesrv,
        {"broker-k": start_broker(tmp_path, namesrv, "broker-k", brokerClusterName="PopKillCluster")},
        tmp_path,
    )
    try:
        await create_topic(own, "PopKill", 2)
        bodies = [f"k-{i}" for i in range(20)]
        await send(namesrv, "PopKill", bodies)
        async with PopConsumer("CG_POP_KILL", namesrv=namesrv) as consumer:
            got = await pop_until(consumer, "PopKill", 20, invisible_ms=3000)
            acked = {body(m) for m in got if int(body(m)[2:]) % 2 == 0}
            for msg in got:
                if body(msg) in acked:
                    await consumer.ack(msg)
        own.broker.kill()
        own.brokers["broker-k"] = start_broker(
            tmp_path, namesrv, "broker-k", brokerClusterName="PopKillCluster"
        )
        async with PopConsumer("CG_POP_KILL", namesrv=namesrv) as consumer:

            async def routed() -> bool:
                route = await consumer.instance.route("PopKill", refresh=True)
                return (
                    route is not None and own.broker.addr in route.broker_addrs.get("broker-k", {}).values()
                )

            await until(routed, DEADLINE, "the restarted broker in the route")
            back = await pop_until(consumer, "PopKill", 10, invisible_ms=60_000)
            await nothing_for(consumer, "PopKill", 2.5)
        assert {body(m) for m in back} == set(bodies) - acked, Counter(body(m) for m in back)
        assert all(m.reconsume_times == 1 for m in back)
    finally:
        own.broker.stop()
