"""A real `mq broker` process: groups and offsets survive a restart; bad requests get codes."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from clientsupport import call
from mqproc import MqProcess, start_mq, start_namesrv, write_broker_props

from mqtools.remoting import fastjson
from mqtools.remoting.bodies import (
    ConsumerOffsetSerializeWrapper,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
)
from mqtools.remoting.codes import RequestCode, ResponseCode

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


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


async def test_groups_and_offsets_survive_restart(tmp_path: Path, namesrv: MqProcess) -> None:
    props = write_props(tmp_path, namesrv.addr)
    broker = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    try:
        group = SubscriptionGroupConfig(group_name="CG_KEEP", retry_max_times=3, retry_queue_nums=2)
        resp = await call(broker.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=group.to_json())
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        for queue_id, offset in ((0, 17), (1, 4)):
            ext = {**query_ext("CG_KEEP", "KeepTopic", queue_id), "commitOffset": str(offset)}
            resp = await call(broker.addr, RequestCode.UPDATE_CONSUMER_OFFSET, ext)
            assert resp.code == ResponseCode.SUCCESS, resp.remark
        resp = await call(broker.addr, RequestCode.QUERY_CONSUMER_OFFSET, query_ext("CG_KEEP", "KeepTopic", 0))
        assert (resp.code, resp.ext_fields.get("offset")) == (ResponseCode.SUCCESS, "17")
    finally:
        assert broker.stop() == 0

    config_dir = tmp_path / "store" / "config"
    on_disk = fastjson.loads((config_dir / "consumerOffset.json").read_bytes())
    assert on_disk["offsetTable"]["KeepTopic@CG_KEEP"] == {"0": 17, "1": 4}
    assert "CG_KEEP" in orjson.loads((config_dir / "subscriptionGroup.json").read_bytes())["subscriptionGroupTable"]

    broker = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    try:
        resp = await call(broker.addr, RequestCode.QUERY_CONSUMER_OFFSET, query_ext("CG_KEEP", "KeepTopic", 1))
        assert (resp.code, resp.ext_fields.get("offset")) == (ResponseCode.SUCCESS, "4")
        resp = await call(broker.addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        table = SubscriptionGroupWrapper.from_json(resp.body).subscription_group_table
        assert table["CG_KEEP"].retry_max_times == 3 and table["CG_KEEP"].retry_queue_nums == 2
        resp = await call(broker.addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
        offsets = ConsumerOffsetSerializeWrapper.from_json(resp.body).offset_table
        assert offsets["KeepTopic@CG_KEEP"] == {0: 17, 1: 4}

        resp = await call(broker.addr, RequestCode.DELETE_SUBSCRIPTIONGROUP,
                          {"groupName": "CG_KEEP", "cleanOffset": "true"})
        assert resp.code == ResponseCode.SUCCESS
        resp = await call(broker.addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
        assert "KeepTopic@CG_KEEP" not in ConsumerOffsetSerializeWrapper.from_json(resp.body).offset_table
    finally:
        broker.stop()


async def test_offsets_committed_just_before_a_kill_are_lost_at_most_5s(tmp_path: Path) -> None:
    """The periodic flush (5 s) puts commits on disk without a clean shutdown."""
    import asyncio

    props = write_props(tmp_path)
    broker = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    try:
        ext = {**query_ext("CG_FLUSH", "FlushTopic", 0), "commitOffset": "9"}
        assert (await call(broker.addr, RequestCode.UPDATE_CONSUMER_OFFSET, ext)).code == ResponseCode.SUCCESS
        path = tmp_path / "store" / "config" / "consumerOffset.json"
        for _ in range(100):
            if path.exists() and b"FlushTopic@CG_FLUSH" in path.read_bytes():
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("offset never flushed to consumerOffset.json")
    finally:
        broker.signal(signal.SIGKILL)
        broker.proc.wait(5)


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
