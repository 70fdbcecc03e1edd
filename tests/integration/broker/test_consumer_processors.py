"""Consumer processors and the schedule service over a real MessageStore (temp dir, fake clock)
and a real RemotingServer on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest

from mqtools.common import properties as P
from mqtools.common.message import MessageExtBrokerInner
from mqtools.remoting.bodies import ConsumeStats, ResetOffsetBody, SubscriptionGroupConfig
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import LanguageCode, RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.server import RemotingServer
from mqtools.server.broker.clients import ConsumerManager, ProducerManager
from mqtools.server.broker.config import BrokerConfig
from mqtools.server.broker.consumer_offsets import ConsumerOffsetManager
from mqtools.server.broker.processors import client as client_processors
from mqtools.server.broker.processors import consumer as consumer_processors
from mqtools.server.broker.rebalance_lock import RebalanceLockManager
from mqtools.server.broker.stats import BrokerStats
from mqtools.server.broker.subscription import SubscriptionGroupManager
from mqtools.server.broker.topic_config import TopicConfigManager
from mqtools.server.store.config import MessageStoreConfig
from mqtools.server.store.message_store import MessageStore
from mqtools.server.store.schedule import ScheduleMessageService

T0 = 1_700_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[tuple[str, SimpleNamespace]]:
    clock = Clock()
    cfg = BrokerConfig(broker_name="broker-t", store_path_root_dir=str(tmp_path))
    store = MessageStore(MessageStoreConfig(store_path_root_dir=str(tmp_path),
                                            mapped_file_size_commit_log=1 << 20), clock=clock)
    await store.start()
    config_dir = tmp_path / "config"
    controller = SimpleNamespace(
        config=cfg,
        clock=clock,
        store=store,
        topics=TopicConfigManager(config_dir, cfg, clock),
        offsets=ConsumerOffsetManager(config_dir, clock),
        groups=SubscriptionGroupManager(config_dir, clock),
        consumers=ConsumerManager(clock),
        producers=ProducerManager(clock),
        locks=RebalanceLockManager(clock),
        schedule=ScheduleMessageService(store, config_dir, clock=clock),
        stats=BrokerStats(clock),
    )
    server = RemotingServer("127.0.0.1", 0)
    client_processors.register(server, controller)
    consumer_processors.register(server, controller)
    await server.start()
    yield f"127.0.0.1:{server.port}", controller
    await server.shutdown()
    await store.shutdown()


async def put(c: SimpleNamespace, topic: str, body: bytes, queue_id: int = 0, **props: str) -> MessageExtBrokerInner:
    msg = MessageExtBrokerInner(topic=topic, body=body, properties=dict(props), queue_id=queue_id,
                                born_timestamp=int(c.clock() * 1000), born_host=("127.0.0.1", 5000))
    c.schedule.redirect(msg)
    result = await c.store.put_message(msg)
    assert result.ok, result
    return msg


async def call(addr: str, code: int, ext: dict | None = None, body: bytes | None = None,
               client: RemotingClient | None = None, language: int = LanguageCode.JAVA) -> RemotingCommand:
    own = client is None
    client = client or RemotingClient()
    try:
        cmd = RemotingCommand.request(code, {k: str(v) for k, v in (ext or {}).items()}, body, language=language)
        return await client.invoke(addr, cmd, 5)
    finally:
        if own:
            await client.close()


def stored(c: SimpleNamespace, topic: str, queue_id: int = 0) -> list:
    from mqtools.common.codec import decode_stored

    result = c.store.get_message("t", topic, queue_id, 0, 32)
    return [decode_stored(b) for b in result.buffers]


# ------------------------------------------------------------------ offsets


async def test_query_and_update_offsets(broker) -> None:
    addr, c = broker
    ext = {"consumerGroup": "g", "topic": "T", "queueId": 0}
    resp = await call(addr, RequestCode.QUERY_CONSUMER_OFFSET, ext)
    assert (resp.code, resp.ext_fields["offset"]) == (ResponseCode.SUCCESS, "0")  # empty queue: start at 0
    resp = await call(addr, RequestCode.QUERY_CONSUMER_OFFSET, {**ext, "setZeroIfNotFound": "false"})
    assert resp.code == ResponseCode.QUERY_NOT_FOUND
    await put(c, "T", b"m")
    resp = await call(addr, RequestCode.QUERY_CONSUMER_OFFSET, ext)
    assert (resp.code, resp.ext_fields["offset"]) == (ResponseCode.SUCCESS, "0")  # still all in memory
    resp = await call(addr, RequestCode.UPDATE_CONSUMER_OFFSET, {**ext, "commitOffset": 1})
    assert resp.code == ResponseCode.SUCCESS
    resp = await call(addr, RequestCode.QUERY_CONSUMER_OFFSET, {**ext, "setZeroIfNotFound": "false"})
    assert (resp.code, resp.ext_fields["offset"]) == (ResponseCode.SUCCESS, "1")
    resp = await call(addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
    assert orjson.loads(resp.body) == {"offsetTable": {"T@g": {"0": 1}}}


# ------------------------------------------------------------------ schedule


async def test_schedule_delivers_when_due_and_after_the_clock_moves_back(broker) -> None:
    _, c = broker
    svc = c.schedule
    await put(c, "Real", b"d1", queue_id=0, DELAY="2", TAGS="a")  # level 2 = 5 s
    assert [m.topic for m in stored(c, "SCHEDULE_TOPIC_XXXX", 1)] == ["SCHEDULE_TOPIC_XXXX"]
    c.clock.now = T0 + 4.999
    assert await svc.deliver_due() == 0
    assert stored(c, "Real") == []
    c.clock.now = T0 + 5.0
    assert await svc.deliver_due() == 1
    [msg] = stored(c, "Real")
    assert msg.body == b"d1" and msg.properties[P.REAL_TOPIC] == "Real" and P.DELAY not in msg.properties
    assert msg.properties[P.WAIT] == "false"
    assert svc.offset_table == {2: 1}
    assert await svc.deliver_due() == 0

    await put(c, "Real", b"d2", queue_id=0, DELAY="2")
    c.clock.now -= 3600  # clock stepped back an hour: the message must not wait an hour more
    assert await svc.deliver_due() == 1
    assert [m.body for m in stored(c, "Real")] == [b"d1", b"d2"]
    svc.persist()
    again = ScheduleMessageService(c.store, svc.path.parent, clock=c.clock)
    assert again.load() and again.offset_table == {2: 2}


# ------------------------------------------------------------------ send back


async def test_send_back_rules(broker) -> None:
    addr, c = broker
    original = await put(c, "T", b"x", TAGS="tg")
    back = {"offset": original.commit_log_offset, "group": "g", "delayLevel": 2}
    resp = await call(addr, RequestCode.CONSUMER_SEND_MSG_BACK, back)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    [parked] = stored(c, "SCHEDULE_TOPIC_XXXX", 1)  # explicit level 2 is kept
    assert parked.properties[P.REAL_TOPIC] == "%RETRY%g" and parked.reconsume_times == 1
    assert parked.properties[P.RETRY_TOPIC] == "T" and parked.properties[P.ORIGIN_MESSAGE_ID] == original.msg_id
    assert c.topics.select("%RETRY%g").perm == 6

    resp = await call(addr, RequestCode.CONSUMER_SEND_MSG_BACK, {**back, "offset": 987654321})
    assert resp.code == ResponseCode.SYSTEM_ERROR and "look message by offset failed" in resp.remark

    c.groups.update(SubscriptionGroupConfig(group_name="noretry", retry_queue_nums=0))
    resp = await call(addr, RequestCode.CONSUMER_SEND_MSG_BACK, {**back, "group": "noretry"})
    assert resp.code == ResponseCode.SUCCESS and c.topics.select("%RETRY%noretry") is None

    c.groups.auto_create = False
    resp = await call(addr, RequestCode.CONSUMER_SEND_MSG_BACK, {**back, "group": "unknown"})
    assert resp.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST

    c.config.broker_permission = 4
    resp = await call(addr, RequestCode.CONSUMER_SEND_MSG_BACK, back)
    assert resp.code == ResponseCode.NO_PERMISSION
    assert len(stored(c, "SCHEDULE_TOPIC_XXXX", 1)) == 1


# ------------------------------------------------------------------ stats and reset


async def test_consume_stats_and_reset_offset_pushed_to_online_consumers(broker) -> None:
    addr, c = broker
    c.topics.create_topic_in_send_message_back_method("T", 1)
    for i in range(5):
        c.clock.now = T0 + i
        await put(c, "T", f"m{i}".encode())
    c.offsets.commit_offset("x", "g", "T", 0, 5)

    pushed: dict[str, list[RemotingCommand]] = {"cpp": [], "java": []}
    members = {}
    for name, lang in (("cpp", LanguageCode.CPP), ("java", LanguageCode.JAVA)):
        members[name] = RemotingClient(on_request=lambda conn, cmd, n=name: pushed[n].append(cmd))
        heartbeat = orjson.dumps({"clientID": f"{name}@1", "consumerDataSet": [
            {"groupName": "g", "consumeType": 1, "messageModel": 1, "consumeFromWhere": 0,
             "subscriptionDataSet": [{"topic": "T", "subString": "*"}]}]})
        resp = await call(addr, RequestCode.HEART_BEAT, body=heartbeat, client=members[name], language=lang)
        assert resp.code == ResponseCode.SUCCESS

    resp = await call(addr, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "g", "topic": "T"})
    [(mq, wrapper)] = ConsumeStats.from_json(resp.body).offset_table.items()
    assert (mq.topic, mq.broker_name, mq.queue_id) == ("T", "broker-t", 0)
    assert (wrapper.broker_offset, wrapper.consumer_offset) == (5, 5)
    assert wrapper.last_timestamp == int((T0 + 4) * 1000)

    # not forced: a later timestamp never moves a group forward
    ext = {"topic": "T", "group": "g", "timestamp": int((T0 + 9) * 1000), "isForce": "false"}
    resp = await call(addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext)
    assert list(ResetOffsetBody.from_json(resp.body).offset_table.values()) == [5]

    ext = {"topic": "T", "group": "g", "timestamp": int((T0 + 2) * 1000), "isForce": "false"}
    resp = await call(addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert list(ResetOffsetBody.from_json(resp.body).offset_table.values()) == [2]
    assert c.offsets.query_offset("g", "T", 0) == 2
    for _ in range(100):
        if len(pushed["cpp"]) == 2 and len(pushed["java"]) == 2:
            break
        await asyncio.sleep(0.02)
    cpp, java = pushed["cpp"][-1], pushed["java"][-1]
    assert cpp.code == java.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET and cpp.is_oneway
    assert cpp.ext_fields["group"] == "g" and cpp.ext_fields["timestamp"] == str(int((T0 + 2) * 1000))
    assert orjson.loads(cpp.body) == {"offsetTable": [
        {"topic": "T", "brokerName": "broker-t", "queueId": 0, "offset": 2}]}
    assert list(ResetOffsetBody.from_json(java.body).offset_table.values()) == [2]
    assert java.body.startswith(b'{"offsetTable":{{')  # fastjson object keys, as Java clients expect

    resp = await call(addr, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "g"})
    [wrapper] = ConsumeStats.from_json(resp.body).offset_table.values()
    assert (wrapper.broker_offset, wrapper.consumer_offset) == (5, 2)

    # forced: forward is allowed; -1 means the queue's end
    ext = {"topic": "T", "group": "g", "timestamp": -1, "isForce": "true"}
    resp = await call(addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext)
    assert list(ResetOffsetBody.from_json(resp.body).offset_table.values()) == [5]
    for m in members.values():
        await m.close()

    resp = await call(addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                      {"topic": "T", "group": "nobody", "timestamp": 0, "isForce": "true"})
    assert resp.code == ResponseCode.SYSTEM_ERROR


async def test_group_admin(broker) -> None:
    addr, c = broker
    body = SubscriptionGroupConfig(group_name="admin_g", retry_max_times=5).to_json()
    assert (await call(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)).code == 0
    resp = await call(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    table = orjson.loads(resp.body)["subscriptionGroupTable"]
    assert table["admin_g"]["retryMaxTimes"] == 5 and "TOOLS_CONSUMER" in table
    c.offsets.commit_offset("x", "admin_g", "T", 0, 3)
    resp = await call(addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "admin_g"})
    assert resp.code == ResponseCode.SUCCESS
    assert c.groups.find("admin_g", create=False) is None and c.offsets.query_offset("admin_g", "T", 0) == 3
    await call(addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "admin_g", "cleanOffset": "true"})
    assert c.offsets.query_offset("admin_g", "T", 0) == -1
