"""The toolkit on POP groups against a real `mq namesrv` + `mq broker`: `mq admin group progress` shows what is
popped and not acknowledged per queue (the broker moved the offsets at pop time, so the diff cannot), and
`mq admin diagnose group` says "not acknowledging" for a group whose popped messages come back.

Members of the diagnosed group are raw heartbeating connections (mq's PopConsumer sends no heartbeat) that
refuse running-info requests at once, as a client without that group would.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from support.adminsupport import json_of, mq, mq_here
from support.clientsupport import Cluster, broker_cluster, call, create_topic, until

from mqtools.client.admin import MQAdmin
from mqtools.client.pop_consumer import PopConsumer
from mqtools.client.producer import Producer
from mqtools.common.message import Message, MessageExt
from mqtools.remoting.bodies import ConsumerData, HeartbeatData, SubscriptionData, SubscriptionGroupConfig
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import UpdateConsumerOffsetRequestHeader
from mqtools.remoting.pop_stats import PopInFlightBody, PopInFlightRequestHeader
from mqtools.remoting.transport import RemotingConnection

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

DEADLINE = 30.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from broker_cluster(tmp_path_factory.mktemp("popprog"), ("broker-a",), brokerClusterName="PopProgIT")


@pytest.fixture
async def popper(cluster: Cluster) -> AsyncIterator:
    made: list[PopConsumer] = []

    async def make(group: str) -> PopConsumer:
        consumer = await PopConsumer(group, namesrv=cluster.namesrv.addr).start()
        made.append(consumer)
        return consumer

    yield make
    for consumer in made:
        await consumer.shutdown()


async def send(cluster: Cluster, topic: str, n: int) -> None:
    async with Producer(f"PG_{topic}", namesrv=cluster.namesrv.addr) as producer:
        for i in range(n):
            await producer.send(Message(topic, f"{topic}-{i}".encode()))


async def pop_n(consumer: PopConsumer, topic: str, n: int, invisible_ms: int) -> list[MessageExt]:
    got: list[MessageExt] = []
    loop = asyncio.get_running_loop()
    end = loop.time() + DEADLINE
    while len(got) < n:
        assert loop.time() < end, f"only {len(got)} of {n} popped"
        got.extend((await consumer.pop(topic, n - len(got), invisible_ms, 1000)).messages)
    return got


async def test_progress_of_a_pop_group_shows_popped_and_not_acknowledged(cluster: Cluster, popper) -> None:
    await create_topic(cluster, "PopProg", 2)
    await send(cluster, "PopProg", 10)
    consumer = await popper("CG_POP_PROG")
    got = await pop_n(consumer, "PopProg", 10, 60_000)
    for msg in got[:4]:
        await consumer.ack(msg)
    async with MQAdmin(cluster.namesrv.addr) as admin:
        async def six_in_flight():
            p = await admin.groups.consumer_progress("CG_POP_PROG", "PopProg")
            return p if p.pop is not None and p.pop.inflight == 6 else None

        progress = await until(six_in_flight, DEADLINE, "6 POP messages in flight")
    assert progress.total_diff == 0  # the broker committed past them at pop time: the diff cannot show them
    assert progress.pop is not None and progress.pop.popped and progress.pop.complete
    assert (progress.pop.revive_due, progress.pop.revived, progress.pop.retry_inflight) == (0, 0, 0)
    assert sum(q.pop_inflight or 0 for q in progress.queues) == 6
    assert all(q.pop_inflight is not None and q.revive_due == 0 for q in progress.queues)

    doc = json_of(mq_here("admin", "group", "progress", "CG_POP_PROG", "-o", "json", namesrv=cluster.namesrv.addr),
                  "GroupProgress")
    assert doc["pop"]["popped"] and doc["pop"]["inflightTotal"] == 6
    table = mq_here("admin", "group", "progress", "CG_POP_PROG", namesrv=cluster.namesrv.addr)
    assert table.returncode == 0 and "POP: 6 popped and not acknowledged" in table.stdout

    addr = cluster.broker.addr  # a group that never popped: figures, but no POP line
    async with MQAdmin(cluster.namesrv.addr) as admin:
        await admin.groups.create_subscription_group(SubscriptionGroupConfig("CG_PLAIN_PROG"), broker_addr=addr)
    ext = UpdateConsumerOffsetRequestHeader("CG_PLAIN_PROG", "PopProg", 0, 3).to_ext()
    assert (await call(addr, RequestCode.UPDATE_CONSUMER_OFFSET, ext)).code == ResponseCode.SUCCESS
    plain = json_of(mq_here("admin", "group", "progress", "CG_PLAIN_PROG", "-t", "PopProg", "-o", "json",
                       namesrv=cluster.namesrv.addr), "GroupProgress")
    assert plain["pop"]["popped"] is False and plain["pop"]["inflightTotal"] == 0


async def test_the_private_request_counts_expired_ones_as_revive_due(cluster: Cluster, popper) -> None:
    await create_topic(cluster, "PopDue", 1)
    await send(cluster, "PopDue", 3)
    consumer = await popper("CG_POP_DUE")
    await pop_n(consumer, "PopDue", 3, 60_000)
    ext = PopInFlightRequestHeader("CG_POP_DUE", "PopDue").to_ext()

    async def answer() -> PopInFlightBody | None:
        resp = await call(cluster.broker.addr, RequestCode.GET_POP_IN_FLIGHT, ext)
        body = PopInFlightBody.from_json(resp.body)
        return body if body.queues else None

    body = await until(answer, DEADLINE, "the checkpoint read by the revive service")
    assert body.tracked and body.popped
    assert [(q.topic, q.queue_id, q.in_flight, q.revive_due) for q in body.queues] == [("PopDue", 0, 3, 0)]
    other = await call(cluster.broker.addr, RequestCode.GET_POP_IN_FLIGHT,
                       PopInFlightRequestHeader("CG_NEVER_POPPED").to_ext())
    assert PopInFlightBody.from_json(other.body) == PopInFlightBody(True, False, 0, [])


def _refuse(conn: RemotingConnection, req: RemotingCommand) -> None:
    """A member that cannot give its running info (answers at once instead of letting the broker wait)."""
    if not req.is_oneway:
        resp = req.response(ResponseCode.SYSTEM_ERROR, "no running info here")
        resp.opaque = req.opaque
        resp.flag |= 1
        conn.send(resp)


async def test_diagnose_says_a_pop_group_does_not_acknowledge(cluster: Cluster, popper) -> None:
    await create_topic(cluster, "PopNoAck", 2)
    member = RemotingClient(on_request=_refuse)
    try:
        data = HeartbeatData("127.0.0.1@noack", [], [ConsumerData("CG_POP_NOACK", "CONSUME_POP",
                                                                  subscription_data_set=[SubscriptionData("PopNoAck")])])
        resp = await member.invoke(cluster.broker.addr, RemotingCommand.request(RequestCode.HEART_BEAT, {},
                                                                                 data.to_json()), 10)
        assert resp.code == ResponseCode.SUCCESS
        await send(cluster, "PopNoAck", 5)
        consumer = await popper("CG_POP_NOACK")
        await pop_n(consumer, "PopNoAck", 5, 6_000)  # never acknowledged: they come back after 6 s
        result = await asyncio.to_thread(mq, "admin", "diagnose", "group", "CG_POP_NOACK", "--window", "12",
                                         "-o", "json", namesrv=cluster.namesrv.addr)
        doc = json_of(result, "GroupDiagnosis", 1)
    finally:
        await member.close()
    assert doc["verdict"] == "not acknowledging", doc["summary"]
    assert doc["pop"]["revivedInWindow"] == 5
    assert "5 popped message(s) came back after their invisible time" in doc["summary"]
    assert "unowned queues" not in doc["also"]
