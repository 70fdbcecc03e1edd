"""Client-management processors over a real RemotingServer on loopback (no store needed)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest

from mqtools.remoting.bodies import (
    ConsumerConnection,
    ConsumerListBody,
    LockBatchResponseBody,
    ProducerConnection,
    ProducerTableInfo,
    TopicConfig,
)
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import LanguageCode, RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.server import RemotingServer
from mqtools.server.broker.clients import ConsumerManager, ProducerManager
from mqtools.server.broker.processors import client as client_processors
from mqtools.server.broker.rebalance_lock import RebalanceLockManager
from mqtools.server.broker.subscription import SubscriptionGroupManager


class Topics:
    """Only what these processors use of TopicConfigManager: two calls, and `unwritten` (this table is
    never written, so no write is ever in flight)."""

    unwritten = None

    def __init__(self) -> None:
        self.table: dict[str, TopicConfig] = {}

    def create_topic_in_send_message_back_method(self, topic: str, queue_nums: int, perm: int,
                                                 sys_flag: int) -> TopicConfig:
        return self.table.setdefault(topic, TopicConfig(topic, queue_nums, queue_nums, perm, topic_sys_flag=sys_flag))

    def select(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)


def cpp_heartbeat(client_id: str, group: str, topic: str) -> bytes:
    """The body shape rocketmq-client-cpp 1.x sends: enums as ordinals, subVersion as a string."""
    return orjson.dumps({
        "clientID": client_id,
        "consumerDataSet": [{
            "groupName": group, "consumeFromWhere": 0, "consumeType": 1, "messageModel": 1,
            "subscriptionDataSet": [
                {"subString": "*", "subVersion": "1700000000000", "topic": topic, "tagsSet": [], "codeSet": []},
                {"subString": "*", "subVersion": "1700000000000", "topic": f"%RETRY%{group}"},
            ],
        }],
        "producerDataSet": [{"groupName": "pg"}],
    })


@pytest.fixture
async def broker(tmp_path: Path):
    server = RemotingServer("127.0.0.1", 0)
    controller = SimpleNamespace(
        groups=SubscriptionGroupManager(tmp_path),
        consumers=ConsumerManager(),
        producers=ProducerManager(),
        locks=RebalanceLockManager(),
        topics=Topics(),
    )
    client_processors.register(server, controller)
    await server.start()
    yield f"127.0.0.1:{server.port}", controller
    await server.shutdown()


class Member:
    """One client connection that records the requests the broker pushes to it."""

    def __init__(self) -> None:
        self.pushed: list[RemotingCommand] = []
        self.client = RemotingClient(on_request=lambda conn, cmd: self.pushed.append(cmd))

    async def call(self, addr: str, code: int, ext: dict | None = None, body: bytes | None = None) -> RemotingCommand:
        cmd = RemotingCommand.request(code, ext or {}, body, language=LanguageCode.CPP)
        return await self.client.invoke(addr, cmd, 5)

    async def wait_pushed(self, n: int) -> None:
        for _ in range(250):
            if len(self.pushed) >= n:
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"expected {n} pushed requests, got {len(self.pushed)}")


async def test_heartbeats_membership_and_notifications(broker) -> None:
    addr, controller = broker
    a, b = Member(), Member()
    resp = await a.call(addr, RequestCode.HEART_BEAT, body=cpp_heartbeat("A@1", "cg", "T"))
    assert resp.code == ResponseCode.SUCCESS
    assert "%RETRY%cg" in controller.topics.table
    assert controller.groups.find("cg", create=False) is not None
    await a.wait_pushed(1)  # A learns about its own arrival too, as RocketMQ does
    resp = await b.call(addr, RequestCode.HEART_BEAT, body=cpp_heartbeat("B@2", "cg", "T"))
    assert resp.code == ResponseCode.SUCCESS
    await a.wait_pushed(2)
    notify = a.pushed[-1]
    assert notify.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED and notify.is_oneway
    assert notify.ext_fields == {"consumerGroup": "cg"}

    resp = await a.call(addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "cg"})
    assert sorted(ConsumerListBody.from_json(resp.body).consumer_id_list) == ["A@1", "B@2"]

    resp = await a.call(addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "cg"})
    conn = ConsumerConnection.from_json(resp.body)
    assert sorted(c.client_id for c in conn.connection_set) == ["A@1", "B@2"]
    assert {c.language for c in conn.connection_set} == {"CPP"}
    assert conn.message_model == "CLUSTERING" and conn.consume_type == "CONSUME_PASSIVELY"
    assert set(conn.subscription_table) == {"T", "%RETRY%cg"}

    resp = await a.call(addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "pg"})
    assert sorted(c.client_id for c in ProducerConnection.from_json(resp.body).connection_set) == ["A@1", "B@2"]

    # B's connection drops: it leaves at once and A is told
    seen = len(a.pushed)
    await b.client.close()
    await a.wait_pushed(seen + 1)
    resp = await a.call(addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "cg"})
    assert ConsumerListBody.from_json(resp.body).consumer_id_list == ["A@1"]

    resp = await a.call(addr, RequestCode.UNREGISTER_CLIENT,
                        {"clientID": "A@1", "consumerGroup": "cg", "producerGroup": "pg"})
    assert resp.code == ResponseCode.SUCCESS
    resp = await a.call(addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "cg"})
    assert resp.code == ResponseCode.SYSTEM_ERROR and "no consumer" in resp.remark
    resp = await a.call(addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "cg"})
    assert resp.code == ResponseCode.CONSUMER_NOT_ONLINE
    resp = await a.call(addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "pg"})
    assert resp.code == ResponseCode.SYSTEM_ERROR
    await a.client.close()


async def test_group_without_notification_is_not_notified(broker) -> None:
    addr, controller = broker
    controller.groups.find("quiet").notify_consumer_ids_changed_enable = False
    a = Member()
    await a.call(addr, RequestCode.HEART_BEAT, body=cpp_heartbeat("A@1", "quiet", "T"))
    b = Member()
    await b.call(addr, RequestCode.HEART_BEAT, body=cpp_heartbeat("B@2", "quiet", "T"))
    await a.call(addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "quiet"})
    assert a.pushed == [] and b.pushed == []
    await a.client.close()
    await b.client.close()


async def test_lock_and_unlock_batch(broker) -> None:
    addr, _ = broker
    a = Member()
    mqs = [{"topic": "T", "brokerName": "b", "queueId": i} for i in range(3)]

    def body(client: str, queues: list) -> bytes:
        return orjson.dumps({"consumerGroup": "cg", "clientId": client, "mqSet": queues})

    resp = await a.call(addr, RequestCode.LOCK_BATCH_MQ, body=body("A", mqs[:2]))
    assert {mq.queue_id for mq in LockBatchResponseBody.from_json(resp.body).lock_ok_mq_set} == {0, 1}
    assert b'"lockOKMQSet"' in resp.body
    resp = await a.call(addr, RequestCode.LOCK_BATCH_MQ, body=body("B", mqs))
    assert {mq.queue_id for mq in LockBatchResponseBody.from_json(resp.body).lock_ok_mq_set} == {2}
    resp = await a.call(addr, RequestCode.UNLOCK_BATCH_MQ, body=body("A", mqs[:1]))
    assert resp.code == ResponseCode.SUCCESS
    resp = await a.call(addr, RequestCode.LOCK_BATCH_MQ, body=body("B", mqs))
    assert {mq.queue_id for mq in LockBatchResponseBody.from_json(resp.body).lock_ok_mq_set} == {0, 2}
    await a.client.close()


@pytest.mark.parametrize(
    ("code", "ext", "body"),
    [
        (RequestCode.HEART_BEAT, {}, b"{not json"),
        (RequestCode.HEART_BEAT, {}, b"[1,2]"),
        (RequestCode.HEART_BEAT, {}, b'{"consumerDataSet":[{"groupName":"g"}]}'),
        (RequestCode.GET_CONSUMER_LIST_BY_GROUP, {}, None),
        (RequestCode.UNREGISTER_CLIENT, {}, None),
        (RequestCode.LOCK_BATCH_MQ, {}, b"\xff\xfe"),
        (RequestCode.LOCK_BATCH_MQ, {}, b'{"consumerGroup":"bad group!","mqSet":[]}'),
        (RequestCode.UNLOCK_BATCH_MQ, {}, b'{"mqSet":[{"topic":1}]}'),
    ],
)
async def test_bad_requests_get_codes_and_the_server_lives(broker, code: int, ext: dict, body: bytes | None) -> None:
    addr, _ = broker
    a = Member()
    resp = await a.call(addr, code, ext, body)
    assert resp.code in (ResponseCode.SYSTEM_ERROR, ResponseCode.INVALID_PARAMETER)
    assert resp.remark
    resp = await a.call(addr, 9999)
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    resp = await a.call(addr, RequestCode.HEART_BEAT, body=cpp_heartbeat("A@1", "cg", "T"))
    assert resp.code == ResponseCode.SUCCESS
    await a.client.close()


async def test_all_producer_info_lists_each_group_with_its_producers(broker) -> None:
    """GET_ALL_PRODUCER_INFO (mqadmin producer): every group, each producer as Apache's ProducerInfo (the address as
    Netty prints it, the client's language and version, its last heartbeat in ms); a closed producer leaves."""
    addr, _ = broker
    a, b = Member(), Member()
    for member, client_id in ((a, "A@1"), (b, "B@2")):
        resp = await member.call(addr, RequestCode.HEART_BEAT, body=cpp_heartbeat(client_id, "cg", "T"))
        assert resp.code == ResponseCode.SUCCESS
    resp = await a.call(addr, RequestCode.GET_ALL_PRODUCER_INFO)
    assert resp.code == ResponseCode.SUCCESS
    table = ProducerTableInfo.from_json(resp.body).data
    assert list(table) == ["pg"] and sorted(p.client_id for p in table["pg"]) == ["A@1", "B@2"]
    wire = orjson.loads(resp.body)["data"]["pg"][0]
    assert wire["remoteIP"].startswith("/127.0.0.1:") and wire["language"] == "CPP"
    assert abs(wire["lastUpdateTimestamp"] / 1000 - time.time()) < 60
    await b.client.close()
    for _ in range(250):
        resp = await a.call(addr, RequestCode.GET_ALL_PRODUCER_INFO)
        if [p.client_id for p in ProducerTableInfo.from_json(resp.body).data["pg"]] == ["A@1"]:
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError("the closed producer is still listed")
    await a.client.close()
