"""A real `mq broker` process: what groups and offsets survive a restart (graceful or SIGKILL);
bad requests get codes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from support.clientsupport import call
from support.mqproc import MqProcess, start_mq, start_namesrv, write_broker_props

from mqtools.common.topics import retry_topic
from mqtools.remoting import fastjson
from mqtools.remoting.bodies import (
    ConsumerData,
    ConsumerOffsetSerializeWrapper,
    HeartbeatData,
    SubscriptionData,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
)
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.server.broker.consumer_offsets import FLUSH_INTERVAL_S

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

#: Time a flush may take beyond its interval (one JSON write and fsync, on a loaded machine).
SLACK_S = 1.5


def write_props(tmp_path: Path, namesrv: str = "") -> Path:
    """mqproc's test broker.properties for broker-it, its store in tmp_path/store."""
    return write_broker_props(tmp_path / "broker.properties", namesrv, tmp_path / "store",
                              brokerClusterName="ITCluster", brokerName="broker-it")


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[MqProcess]:
    proc = start_namesrv(tmp_path)
    yield proc
    proc.stop()


def query_ext(group: str, topic: str, queue_id: int) -> dict[str, str]:
    return {"consumerGroup": group, "topic": topic, "queueId": str(queue_id)}


Commits = dict[str, dict[int, int]]


async def commit(addr: str, group: str, topic: str, queue_id: int, offset: int) -> None:
    ext = {**query_ext(group, topic, queue_id), "commitOffset": str(offset)}
    resp = await call(addr, RequestCode.UPDATE_CONSUMER_OFFSET, ext)
    assert resp.code == ResponseCode.SUCCESS, resp.remark


async def all_offsets(addr: str) -> Commits:
    resp = await call(addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return ConsumerOffsetSerializeWrapper.from_json(resp.body).offset_table


async def test_a_group_update_acknowledged_right_before_a_sigkill_survives(tmp_path: Path, namesrv: MqProcess) -> None:
    """The answer to UPDATE_AND_CREATE_SUBSCRIPTIONGROUP waits until subscriptionGroup.json is written
    (processors/durable.py), as RocketMQ's synchronous persist does; three kills right after it."""
    props = write_props(tmp_path, namesrv.addr)
    broker = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    try:
        for i in range(3):
            group = SubscriptionGroupConfig(group_name=f"CG_KILL{i}", retry_max_times=i + 1)
            resp = await call(broker.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=group.to_json())
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            broker.kill()
            broker = start_mq(["broker", "start", "-c", str(props)], timeout=30)
            resp = await call(broker.addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
            table = SubscriptionGroupWrapper.from_json(resp.body).subscription_group_table
            assert [table[f"CG_KILL{j}"].retry_max_times for j in range(i + 1) if f"CG_KILL{j}" in table] == \
                list(range(1, i + 2))
    finally:
        broker.stop()


#: New groups in one heartbeat burst: enough that a write of subscriptionGroup.json is under way while most
#: of them arrive, so they share the coalesced writes that follow it.
BURST_GROUPS = 300


async def test_a_burst_of_new_groups_is_on_disk_when_answered_and_survives_a_sigkill(
        tmp_path: Path, namesrv: MqProcess) -> None:
    """A first heartbeat round of many new groups (each auto-created, with its %RETRY% topic) is answered only
    once every group is in subscriptionGroup.json and every retry topic in topics.json, although the writes
    are coalesced; a SIGKILL right after the last answer loses none of them."""
    props = write_props(tmp_path, namesrv.addr)
    broker = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    groups = [f"CG_BURST_{i:04d}" for i in range(BURST_GROUPS)]
    try:
        client = RemotingClient()
        try:
            beats = [HeartbeatData(client_id=f"127.0.0.1@burst{i}", consumer_data_set=[ConsumerData(
                group, subscription_data_set=[SubscriptionData("BurstTopic", sub_version=1)])]).to_json()
                for i, group in enumerate(groups)]
            answers = await asyncio.gather(*(client.invoke(broker.addr, RemotingCommand.request(
                RequestCode.HEART_BEAT, {}, body), 30) for body in beats))
        finally:
            await client.close()
        assert [a.code for a in answers] == [ResponseCode.SUCCESS] * BURST_GROUPS
        config_dir = tmp_path / "store" / "config"
        on_disk = orjson.loads((config_dir / "subscriptionGroup.json").read_bytes())["subscriptionGroupTable"]
        assert set(groups) <= set(on_disk)
        topics = orjson.loads((config_dir / "topics.json").read_bytes())["topicConfigTable"]
        assert {retry_topic(g) for g in groups} <= set(topics)
        broker.kill()
        broker = start_mq(["broker", "start", "-c", str(props)], timeout=30)
        resp = await call(broker.addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        assert set(groups) <= set(SubscriptionGroupWrapper.from_json(resp.body).subscription_group_table)
    finally:
        broker.stop()


async def test_groups_and_offsets_committed_before_a_graceful_stop_all_survive(
        tmp_path: Path, namesrv: MqProcess) -> None:
    props = write_props(tmp_path, namesrv.addr)
    broker = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    # several groups and topics; a queue committed twice, one moved back (a reset): the last value counts
    commits = [("CG_KEEP", "KeepTopic", 0, 17), ("CG_KEEP", "KeepTopic", 1, 4),
               ("CG_KEEP", "KeepTopic", 0, 21), ("CG_KEEP", "Other", 3, 9),
               ("CG_TWO", "KeepTopic", 0, 100), ("CG_TWO", "KeepTopic", 0, 60)]
    expected: Commits = {"KeepTopic@CG_KEEP": {0: 21, 1: 4}, "Other@CG_KEEP": {3: 9}, "KeepTopic@CG_TWO": {0: 60}}
    try:
        group = SubscriptionGroupConfig(group_name="CG_KEEP", retry_max_times=3, retry_queue_nums=2)
        resp = await call(broker.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=group.to_json())
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        for group_name, topic, queue_id, offset in commits:
            await commit(broker.addr, group_name, topic, queue_id, offset)
        assert await all_offsets(broker.addr) == expected
    finally:
        assert broker.stop() == 0  # SIGTERM: a graceful stop persists everything

    config_dir = tmp_path / "store" / "config"
    on_disk = fastjson.loads((config_dir / "consumerOffset.json").read_bytes())["offsetTable"]
    assert on_disk == {key: {str(q): o for q, o in queues.items()} for key, queues in expected.items()}
    assert "CG_KEEP" in orjson.loads((config_dir / "subscriptionGroup.json").read_bytes())["subscriptionGroupTable"]

    broker = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    try:
        assert await all_offsets(broker.addr) == expected  # exactly: nothing lost, nothing extra
        resp = await call(broker.addr, RequestCode.QUERY_CONSUMER_OFFSET, query_ext("CG_KEEP", "KeepTopic", 0))
        assert (resp.code, resp.ext_fields.get("offset")) == (ResponseCode.SUCCESS, "21")
        resp = await call(broker.addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        table = SubscriptionGroupWrapper.from_json(resp.body).subscription_group_table
        assert table["CG_KEEP"].retry_max_times == 3 and table["CG_KEEP"].retry_queue_nums == 2

        resp = await call(broker.addr, RequestCode.DELETE_SUBSCRIPTIONGROUP,
                          {"groupName": "CG_KEEP", "cleanOffset": "true"})
        assert resp.code == ResponseCode.SUCCESS
        assert await all_offsets(broker.addr) == {"KeepTopic@CG_TWO": {0: 60}}
    finally:
        broker.stop()


async def test_a_kill_loses_at_most_the_commits_of_the_last_flush_interval(tmp_path: Path) -> None:
    """Offsets reach consumerOffset.json every FLUSH_INTERVAL_S; SIGKILL skips the shutdown persist.

    Commits acknowledged more than one interval before the kill must all survive the restart.
    Commits of the last interval may be lost, but only as a whole suffix: a persist writes one
    snapshot of the table, so what survives is the table as it stood after some prefix of them.
    """
    props = write_props(tmp_path)
    broker = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    old = {q: 10 + q for q in range(4)}  # committed long before the kill
    recent = {q: 20 + q for q in range(4)}  # committed just before it
    try:
        for queue_id, offset in old.items():
            await commit(broker.addr, "CG_FLUSH", "FlushTopic", queue_id, offset)
        await asyncio.sleep(FLUSH_INTERVAL_S + SLACK_S)  # the old commits are now older than an interval
        for queue_id, offset in recent.items():
            await commit(broker.addr, "CG_FLUSH", "FlushTopic", queue_id, offset)
    finally:
        broker.kill()

    broker = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    try:
        survived = await all_offsets(broker.addr)
    finally:
        broker.stop()
    assert set(survived) == {"FlushTopic@CG_FLUSH"}
    table = survived["FlushTopic@CG_FLUSH"]
    assert sorted(table) == [0, 1, 2, 3]  # every old commit survived ...
    kept = [table[q] == recent[q] for q in range(4)]
    assert all(table[q] in (old[q], recent[q]) for q in range(4)), table  # ... as itself or overwritten
    assert kept == sorted(kept, reverse=True), table  # recent commits lost only as a suffix


@pytest.mark.parametrize(
    ("code", "ext", "body"),
    [
        (RequestCode.QUERY_CONSUMER_OFFSET, {}, None),
        (RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "g", "topic": "T", "queueId": "abc"}, None),
        (RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "g", "topic": "T", "queueId": "0"}, None),
        (RequestCode.UPDATE_CONSUMER_OFFSET,
         {"consumerGroup": "bad group!", "topic": "T", "queueId": "0", "commitOffset": "1"}, None),
        (RequestCode.UPDATE_CONSUMER_OFFSET,
         {"consumerGroup": "g", "topic": "T", "queueId": "-3", "commitOffset": "1"}, None),
        (RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "g", "offset": "x", "delayLevel": "0"}, None),
        (RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "g", "offset": "123456789", "delayLevel": "0"}, None),
        (RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "g", "offset": "-5", "delayLevel": "0"}, None),
        (RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "a b", "offset": "0", "delayLevel": "0"}, None),
        (RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, b"{broken"),
        (RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, b'{"groupName":"bad/name"}'),
        (RequestCode.DELETE_SUBSCRIPTIONGROUP, {}, None),
        (RequestCode.GET_CONSUME_STATS, {}, None),
        (RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {"topic": "T", "group": "g", "timestamp": "0"}, None),
        (RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
         {"topic": "NoSuchTopic", "group": "g", "timestamp": "0", "isForce": "true"}, None),
        (RequestCode.HEART_BEAT, {}, b"\x00\x01garbage"),
        (RequestCode.LOCK_BATCH_MQ, {}, b"[]"),
        (RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "nobody"}, None),
        (RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "nobody"}, None),
        (RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "nobody"}, None),
        (39999, {}, None),
    ],
)
async def test_bad_requests_get_codes(tmp_path: Path, code: int, ext: dict, body: bytes | None,
                                      shared_broker: MqProcess) -> None:
    resp = await call(shared_broker.addr, code, ext, body)
    assert resp.code != ResponseCode.SUCCESS and resp.remark
    resp = await call(shared_broker.addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    assert resp.code == ResponseCode.SUCCESS


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MqProcess]:
    tmp = tmp_path_factory.mktemp("badreq")
    broker = start_mq(["broker", "start", "-c", str(write_props(tmp))], timeout=30)
    yield broker
    assert broker.proc.poll() is None, "the broker died:\n" + broker.output()
    broker.stop()
