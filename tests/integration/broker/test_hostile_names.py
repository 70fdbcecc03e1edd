"""Regression: DELETE_TOPIC_IN_BROKER used to pass the topic name into a filesystem path, so `../..`
reached outside the store (an empty directory there was removed) and a NUL byte raised with a
traceback. Names are now refused by RocketMQ's rules before anything is touched. Also the numbers
the hostile-input test found overflowing the stored layout."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.clientsupport import Cluster, broker_cluster, call

from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import ConsumerSendMsgBackRequestHeader, SendMessageRequestHeader

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from broker_cluster(tmp_path_factory.mktemp("hostile-names"), ("broker-a",))


@pytest.mark.parametrize("name", ["../../victim", "../victim", "..", "a\x00b", "victim/../../..", "%RETRY%/../x"])
async def test_delete_topic_refuses_path_names(cluster: Cluster, name: str) -> None:
    victim = cluster.workdir / "victim"  # beside the store dir broker-a/, where ../../victim pointed
    victim.mkdir(exist_ok=True)
    (cluster.workdir / "broker-a" / "consumequeue").mkdir(exist_ok=True)
    resp = await call(cluster.broker.addr, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": name})
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "illegal characters" in (resp.remark or "")
    assert victim.is_dir()
    assert "Traceback" not in cluster.broker.output()


async def test_delete_and_create_refuse_system_and_bad_names(cluster: Cluster) -> None:
    for code in (RequestCode.DELETE_TOPIC_IN_BROKER, RequestCode.UPDATE_AND_CREATE_TOPIC):
        ext = {"topic": "SCHEDULE_TOPIC_XXXX", "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1",
               "perm": "6", "topicFilterType": "SINGLE_TAG"}
        resp = await call(cluster.broker.addr, code, ext)
        assert resp.code == ResponseCode.SYSTEM_ERROR and "conflict with system topic" in (resp.remark or "")
    resp = await call(cluster.broker.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, {**ext, "topic": "../x"})
    assert resp.code == ResponseCode.SYSTEM_ERROR and "illegal characters" in (resp.remark or "")
    resp = await call(cluster.broker.addr, RequestCode.UPDATE_AND_CREATE_TOPIC,
                      {**ext, "topic": "Fine", "readQueueNums": str(10**9)})
    assert resp.code == ResponseCode.INVALID_PARAMETER and "readQueueNums" in (resp.remark or "")
    assert not (cluster.workdir / "x").exists()


async def test_bad_header_number_is_answered_without_traceback(cluster: Cluster) -> None:
    ext = {"topic": "T", "queueId": "not-a-number"}
    resp = await call(cluster.broker.addr, RequestCode.GET_MAX_OFFSET, ext)
    assert resp.code == ResponseCode.SYSTEM_ERROR and "queueId" in (resp.remark or "")
    resp = await call(cluster.broker.addr, RequestCode.HEART_BEAT, None, b"\xff{not json")
    assert resp.code == ResponseCode.SYSTEM_ERROR and "HeartbeatData" in (resp.remark or "")
    assert "Traceback" not in cluster.broker.output()



async def test_numbers_that_do_not_fit_the_stored_layout(cluster: Cluster) -> None:
    h = SendMessageRequestHeader(producer_group="PG", topic="Fits", default_topic="TBW102",
                                 default_topic_queue_nums=1, queue_id=0, sys_flag=0, born_timestamp=2**63, flag=0)
    v2 = {**h.to_v2(), "g": str(2**63)}  # the V2 fast path converts numbers without the decoder's range check
    resp = await call(cluster.broker.addr, RequestCode.SEND_MESSAGE_V2, v2, b"x")
    assert resp.code == ResponseCode.SYSTEM_ERROR and "born_timestamp" in (resp.remark or "")
    h.born_timestamp, h.reconsume_times = 1, 2**31 - 1  # legal, but one more send-back would overflow it
    sent = await call(cluster.broker.addr, RequestCode.SEND_MESSAGE, h.to_ext(), b"x")
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    phys = int(sent.ext_fields["msgId"][-16:], 16)  # the offset msgId ends with the commitlog offset
    back = ConsumerSendMsgBackRequestHeader(offset=phys, group="G1", delay_level=0)
    resp = await call(cluster.broker.addr, RequestCode.CONSUMER_SEND_MSG_BACK, back.to_ext())
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert "Traceback" not in cluster.broker.output()
