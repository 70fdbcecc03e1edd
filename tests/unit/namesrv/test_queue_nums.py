"""Queue counts a route cannot carry (null, negative, above ROUTE_QUEUE_NUMS_MAX) are not served (found in review:
readQueueNums=-5 and writeQueueNums=1e9 were served, and a client expanding 2 million of them took 21 s and 546 MB;
Apache takes any). A REGISTER_BROKER leaves only that topic out, registering the broker and its other topics: an
Apache broker may hold a topic with 0 write queues (drained) or more than mq would create, and refusing the whole
registration took every route of the broker away. REGISTER_TOPIC_IN_NAMESRV refuses it with INVALID_PARAMETER."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mqtools.common.validation import ROUTE_QUEUE_NUMS_MAX
from mqtools.remoting.bodies import DataVersion, QueueData, TopicConfig, TopicConfigSerializeWrapper
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import RegisterBrokerRequestHeader
from mqtools.server.namesrv.config import NamesrvConfig
from mqtools.server.namesrv.kv_config import KVConfigManager
from mqtools.server.namesrv.processor import NamesrvProcessor
from mqtools.server.namesrv.route_info import RouteInfoManager

ADDR = "h:1"
TOO_MANY = ROUTE_QUEUE_NUMS_MAX + 1
NOT_SERVED = [(-5, 1_000_000_000), (-1, 4), (4, -1), (TOO_MANY, 4), (4, TOO_MANY), (None, 4), (4, None)]
SERVED = [(0, 4), (4, 0), (1, 1), (2048, 2048), (ROUTE_QUEUE_NUMS_MAX, 8)]


def tables(rim: RouteInfoManager) -> str:
    return repr((rim.topic_queue_table, rim.broker_addr_table, rim.cluster_addr_table, rim.broker_live_table,
                 rim.filter_server_table, rim.route_epoch))


@pytest.fixture
def proc(tmp_path: Path) -> NamesrvProcessor:
    return NamesrvProcessor(NamesrvConfig(kv_config_path=str(tmp_path / "kv.json")), RouteInfoManager(),
                            KVConfigManager(tmp_path / "kv.json"), lambda: 5_000)


def register_request(read: int | None, write: int | None) -> RemotingCommand:
    table = {"OK": {"topicName": "OK", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6},
             "HUGE": {"topicName": "HUGE", "readQueueNums": read, "writeQueueNums": write, "perm": 6}}
    body = json.dumps({"topicConfigSerializeWrapper": {"topicConfigTable": table,
                       "dataVersion": {"timestamp": 1, "counter": 1, "stateVersion": 0}}}).encode()
    header = RegisterBrokerRequestHeader(broker_name="b1", broker_addr=ADDR, cluster_name="C", ha_server_addr="",
                                         broker_id=0)
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext(), body)


def route(proc: NamesrvProcessor, topic: str) -> RemotingCommand:
    req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    return proc.get_route_info_by_topic(None, req)  # type: ignore[arg-type]


@pytest.mark.parametrize(("read", "write"), NOT_SERVED)
def test_a_topic_whose_queue_counts_a_route_cannot_carry_is_left_out_of_the_registration(
        proc: NamesrvProcessor, read: int | None, write: int | None) -> None:
    resp = proc.register_broker(None, register_request(read, write))  # type: ignore[arg-type]
    assert isinstance(resp, RemotingCommand) and resp.code == ResponseCode.SUCCESS
    assert route(proc, "OK").code == ResponseCode.SUCCESS
    assert route(proc, "HUGE").code == ResponseCode.TOPIC_NOT_EXIST
    assert ("C", ADDR) in proc.routes.broker_live_table


@pytest.mark.parametrize(("read", "write"), SERVED)
def test_queue_counts_a_route_can_carry_register(proc: NamesrvProcessor, read: int, write: int) -> None:
    """0 included: an Apache broker's topic drained of its write (or read) queues; more than mq's own broker
    would create too."""
    assert proc.register_broker(None, register_request(read, write)).code == ResponseCode.SUCCESS  # type: ignore[union-attr]
    assert route(proc, "HUGE").code == ResponseCode.SUCCESS


def test_a_topic_left_out_keeps_the_rest_of_the_previous_registration() -> None:
    rim = RouteInfoManager()
    good = TopicConfigSerializeWrapper({"T": TopicConfig("T", 4, 4)}, DataVersion(1, 1))
    rim.register_broker("C", ADDR, "b1", 0, "", good, [], 1_000)
    bad = TopicConfigSerializeWrapper({"T": TopicConfig("T", 4, 4), "U": TopicConfig("U", -5, 10**9)},
                                      DataVersion(2, 2))
    rim.register_broker("C", ADDR, "b1", 0, "", bad, [], 2_000)
    assert "b1" in rim.topic_queue_table["T"] and "U" not in rim.topic_queue_table
    assert rim.broker_live_table[("C", ADDR)].last_update_timestamp == 2_000


@pytest.mark.parametrize(("read", "write"), NOT_SERVED)
def test_register_topic_in_namesrv_refuses_queue_counts_a_route_cannot_carry(
        proc: NamesrvProcessor, read: int | None, write: int | None) -> None:
    good = TopicConfigSerializeWrapper({"T": TopicConfig("T", 4, 4)}, DataVersion(1, 1))
    proc.routes.register_broker("C", ADDR, "b1", 0, "", good, [], 1_000)
    before = tables(proc.routes)
    body = json.dumps({"queueDatas": [{"brokerName": "b1", "readQueueNums": read, "writeQueueNums": write,
                                       "perm": 6, "topicSysFlag": 0}], "brokerDatas": []}).encode()
    req = RemotingCommand.request(RequestCode.REGISTER_TOPIC_IN_NAMESRV, {"topic": "T"}, body)
    resp = proc.register_topic(None, req)  # type: ignore[arg-type]
    assert resp.code == ResponseCode.INVALID_PARAMETER and "QueueNums" in (resp.remark or "")
    assert tables(proc.routes) == before


def test_register_topic_in_namesrv_takes_queue_counts_a_route_can_carry(proc: NamesrvProcessor) -> None:
    proc.routes.register_broker("C", ADDR, "b1", 0, "", TopicConfigSerializeWrapper({}, DataVersion(1, 1)), [], 1)
    assert proc.routes.register_topic("T", [QueueData("b1", 2048, 0, 6, 0)])
    assert proc.routes.topic_queue_table["T"]["b1"].read_queue_nums == 2048
