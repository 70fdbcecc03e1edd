"""A registration is applied whole or not at all: a null topic config table is no topic configs (as Apache's
`if (tcTable != null)`), a null entry refuses the request before any table changed (it left an address in
brokerAddrTable that no heartbeat, expiry or close would ever remove)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqtools.remoting.bodies import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import BodyError
from mqtools.remoting.headers import RegisterBrokerRequestHeader
from mqtools.server.namesrv.config import NamesrvConfig
from mqtools.server.namesrv.kv_config import KVConfigManager
from mqtools.server.namesrv.processor import NamesrvProcessor
from mqtools.server.namesrv.route_info import RouteInfoManager

ADDR = "h:1"


def tables(rim: RouteInfoManager) -> tuple[object, ...]:
    return (rim.topic_queue_table, rim.broker_addr_table, rim.cluster_addr_table, rim.broker_live_table,
            rim.filter_server_table)


def register(rim: RouteInfoManager, wrapper: TopicConfigSerializeWrapper) -> object:
    return rim.register_broker("C", ADDR, "b1", 0, ADDR, wrapper, [], 1_000)


def test_a_null_table_registers_the_broker_without_topics() -> None:
    rim = RouteInfoManager()
    register(rim, TopicConfigSerializeWrapper(None, DataVersion(1, 1)))  # type: ignore[arg-type]
    assert rim.broker_addr_table["b1"].broker_addrs == {0: ADDR} and ("C", ADDR) in rim.broker_live_table
    assert rim.topic_queue_table == {}


def test_a_null_table_keeps_the_topics_even_when_registration_deletes_missing_ones() -> None:
    rim = RouteInfoManager(delete_topic_with_broker_registration=True)
    register(rim, TopicConfigSerializeWrapper({"U": TopicConfig("U")}, DataVersion(1, 1)))
    register(rim, TopicConfigSerializeWrapper(None, DataVersion(2, 2)))  # type: ignore[arg-type]
    assert set(rim.topic_queue_table) == {"U"}


@pytest.mark.parametrize("table", [{"U": TopicConfig("U"), "V": None}, {"U": TopicConfig(None)}])  # type: ignore[arg-type]
def test_a_null_entry_refuses_the_registration_before_any_table_changes(table: dict) -> None:
    rim = RouteInfoManager()
    with pytest.raises(BodyError):
        register(rim, TopicConfigSerializeWrapper(table, DataVersion(1, 1)))
    assert tables(rim) == ({}, {}, {}, {}, {})


def test_a_refused_registration_leaves_the_previous_one_as_it_was() -> None:
    rim = RouteInfoManager()
    register(rim, TopicConfigSerializeWrapper({"T": TopicConfig("T")}, DataVersion(1, 1)))
    before = repr(tables(rim))
    with pytest.raises(BodyError):
        register(rim, TopicConfigSerializeWrapper({"U": TopicConfig("U"), "V": None}, DataVersion(2, 2)))  # type: ignore[dict-item]
    assert repr(tables(rim)) == before


def test_a_null_data_version_is_the_default_one() -> None:
    rim = RouteInfoManager()
    register(rim, TopicConfigSerializeWrapper({"U": TopicConfig("U")}, None))  # type: ignore[arg-type]
    assert rim.broker_live_table[("C", ADDR)].data_version == DataVersion() and "U" in rim.topic_queue_table


def request(body: bytes) -> RemotingCommand:
    header = RegisterBrokerRequestHeader(broker_name="b1", broker_addr=ADDR, cluster_name="C", ha_server_addr=ADDR,
                                         broker_id=0)
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext(), body)


@pytest.fixture
def proc(tmp_path: Path) -> NamesrvProcessor:
    return NamesrvProcessor(NamesrvConfig(kv_config_path=str(tmp_path / "kv.json")), RouteInfoManager(),
                            KVConfigManager(tmp_path / "kv.json"), lambda: 5_000)


def test_the_request_with_a_null_table_succeeds(proc: NamesrvProcessor) -> None:
    resp = proc.register_broker(None, request(b'{"topicConfigSerializeWrapper":{"topicConfigTable":null}}'))  # type: ignore[arg-type]
    assert isinstance(resp, RemotingCommand) and resp.code == ResponseCode.SUCCESS
    assert ("C", ADDR) in proc.routes.broker_live_table


def test_the_request_with_a_null_entry_is_a_body_error_and_changes_nothing(proc: NamesrvProcessor) -> None:
    body = b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"U":{"topicName":"U"},"V":null}}}'
    with pytest.raises(BodyError, match="V"):
        proc.register_broker(None, request(body))  # type: ignore[arg-type]
    assert tables(proc.routes) == ({}, {}, {}, {}, {})
    assert not proc._bodies  # nothing is cached for a broker that did not register


@pytest.mark.parametrize("body", [
    b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"U":{"topicName":"U","readQueueNums":"99999999999999999999999"}}}}',
    b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"U":{"topicName":"U"}},"dataVersion":{"stateVersion":{}}}}',
])
def test_a_number_no_long_holds_is_a_body_error_and_routes_still_answer(proc: NamesrvProcessor, body: bytes) -> None:
    with pytest.raises(BodyError, match="long"):
        proc.register_broker(None, request(body))  # type: ignore[arg-type]
    assert tables(proc.routes) == ({}, {}, {}, {}, {})
    route = proc.get_route_info_by_topic(None, RemotingCommand.request(  # type: ignore[arg-type]
        RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "U"}))
    assert route.code == ResponseCode.TOPIC_NOT_EXIST


def test_a_data_version_with_a_null_field_is_refused_before_any_table_changes() -> None:
    rim = RouteInfoManager()
    register(rim, TopicConfigSerializeWrapper({}, DataVersion(1, 1)))
    before = repr(tables(rim))
    for version in (DataVersion(1, 2, None), DataVersion(None, 2), DataVersion(1, None)):  # type: ignore[arg-type]
        with pytest.raises(BodyError):
            rim.register_broker("C", "h:2", "b1", 0, "h:2", TopicConfigSerializeWrapper({}, version), [], 2_000)
    assert repr(tables(rim)) == before
