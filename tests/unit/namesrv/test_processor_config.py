"""Name server processors (called directly), KV config persistence format and properties parsing."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from mqtools.common.javaprops import parse_properties
from mqtools.remoting.bodies import (
    BrokerLiveTable,
    DataVersion,
    KVTable,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicRouteData,
)
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import RegisterBrokerRequestHeader
from mqtools.server.namesrv.config import ConfigError, NamesrvConfig
from mqtools.server.namesrv.kv_config import KVConfigError, KVConfigManager
from mqtools.server.namesrv.processor import NamesrvProcessor
from mqtools.server.namesrv.route_info import RouteInfoManager


class Clock:
    def __init__(self) -> None:
        self.now = 5_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def proc(tmp_path: Path) -> NamesrvProcessor:
    config = NamesrvConfig(kv_config_path=str(tmp_path / "kv.json"))
    return NamesrvProcessor(config, RouteInfoManager(), KVConfigManager(tmp_path / "kv.json"), Clock())


def req(code: int, ext: dict[str, str] | None = None, body: bytes | None = None) -> RemotingCommand:
    return RemotingCommand.request(code, ext or {}, body)


def register_req(name: str, bid: int, addr: str, *topics: str, crc: int = 0) -> RemotingCommand:
    header = RegisterBrokerRequestHeader(broker_name=name, broker_addr=addr, cluster_name="C",
                                         ha_server_addr=addr + "-ha", broker_id=bid, body_crc32=crc)
    wrapper = TopicConfigSerializeWrapper({t: TopicConfig(t, 2, 2) for t in topics}, DataVersion(1, 1))
    return req(RequestCode.REGISTER_BROKER, header.to_ext(), RegisterBrokerBody(wrapper).to_json())


def test_route_query_unknown_then_known_and_cache_invalidation(proc: NamesrvProcessor) -> None:
    resp = proc.get_route_info_by_topic(None, req(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}))  # type: ignore[arg-type]
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST and "No topic route info" in (resp.remark or "")
    assert proc.register_broker(None, register_req("b1", 0, "h:1", "T")).code == 0  # type: ignore[arg-type]
    resp = proc.get_route_info_by_topic(None, req(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}))  # type: ignore[arg-type]
    assert resp.code == 0 and TopicRouteData.from_json(resp.body).broker_datas[0].broker_addrs == {0: "h:1"}  # type: ignore[arg-type]
    proc.wipe_write_perm(None, req(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "b1"}))  # type: ignore[arg-type]
    resp = proc.get_route_info_by_topic(None, req(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}))  # type: ignore[arg-type]
    assert TopicRouteData.from_json(resp.body).queue_datas[0].perm == 4  # type: ignore[arg-type]


async def test_order_topic_conf_comes_from_kv(proc: NamesrvProcessor) -> None:
    proc.config.order_message_enable = True
    proc.register_broker(None, register_req("b1", 0, "h:1", "T"))  # type: ignore[arg-type]
    ext = {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "b1:2"}
    assert (await proc.put_kv_config(None, req(RequestCode.PUT_KV_CONFIG, ext))).code == 0  # type: ignore[arg-type]
    resp = proc.get_route_info_by_topic(None, req(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}))  # type: ignore[arg-type]
    assert TopicRouteData.from_json(resp.body).order_topic_conf == "b1:2"  # type: ignore[arg-type]
    # The broker's registration answer carries the ORDER_TOPIC_CONFIG namespace.
    reg = proc.register_broker(None, register_req("b1", 0, "h:1", "T"))  # type: ignore[arg-type]
    assert KVTable.from_json(reg.body).table == {"T": "b1:2"}  # type: ignore[arg-type]


def test_register_checks_crc32_and_answers_slaves(proc: NamesrvProcessor) -> None:
    bad = register_req("b1", 0, "h:1", "T", crc=12345)
    resp = proc.register_broker(None, bad)  # type: ignore[arg-type]
    assert resp.code == ResponseCode.SYSTEM_ERROR and resp.remark == "crc32 not match"
    proc.register_broker(None, register_req("b1", 0, "h:1", "T"))  # type: ignore[arg-type]
    resp = proc.register_broker(None, register_req("b1", 1, "h:2", "T"))  # type: ignore[arg-type]
    assert resp.ext_fields == {"masterAddr": "h:1", "haServerAddr": "h:1-ha"}


def test_query_data_version_and_live_table(proc: NamesrvProcessor) -> None:
    proc.register_broker(None, register_req("b1", 0, "h:1", "T"))  # type: ignore[arg-type]
    ext = {"brokerName": "b1", "brokerAddr": "h:1", "clusterName": "C", "brokerId": "0"}
    same = proc.query_data_version(None, req(RequestCode.QUERY_DATA_VERSION, ext, DataVersion(1, 1).to_json()))  # type: ignore[arg-type]
    assert same.ext_fields == {"changed": "false"}
    other = proc.query_data_version(None, req(RequestCode.QUERY_DATA_VERSION, ext, DataVersion(2, 2).to_json()))  # type: ignore[arg-type]
    assert other.ext_fields == {"changed": "true"} and DataVersion.from_json(other.body).counter == 1  # type: ignore[arg-type]
    proc.clock.now = 9_000  # type: ignore[attr-defined]
    table = BrokerLiveTable.from_json(proc.get_broker_live_table(None, req(40001)).body)  # type: ignore[arg-type]
    assert table.now == 9_000 and table.brokers[0].last_update_timestamp == 5_000


async def test_kv_requests_and_file_format(proc: NamesrvProcessor, tmp_path: Path) -> None:
    written: list[bytes] = []

    async def persist() -> None:
        written.append(proc.kv.snapshot())

    proc.persist_kv = persist
    put = {"namespace": "NS", "key": "k", "value": "v"}
    await proc.put_kv_config(None, req(RequestCode.PUT_KV_CONFIG, put))  # type: ignore[arg-type]
    got = proc.get_kv_config(None, req(RequestCode.GET_KV_CONFIG, {"namespace": "NS", "key": "k"}))  # type: ignore[arg-type]
    assert got.ext_fields == {"value": "v"}
    listed = proc.get_kv_list_by_namespace(None, req(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "NS"}))  # type: ignore[arg-type]
    assert KVTable.from_json(listed.body).table == {"k": "v"}  # type: ignore[arg-type]
    assert orjson.loads(written[-1]) == {"configTable": {"NS": {"k": "v"}}}
    await proc.delete_kv_config(None, req(RequestCode.DELETE_KV_CONFIG, {"namespace": "NS", "key": "k"}))  # type: ignore[arg-type]
    missing = proc.get_kv_config(None, req(RequestCode.GET_KV_CONFIG, {"namespace": "NS", "key": "k"}))  # type: ignore[arg-type]
    assert missing.code == ResponseCode.QUERY_NOT_FOUND
    none = proc.get_kv_list_by_namespace(None, req(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "X"}))  # type: ignore[arg-type]
    assert none.code == ResponseCode.QUERY_NOT_FOUND


def test_kv_loads_java_written_file(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_text('{\n\t"configTable":{\n\t\t"ORDER_TOPIC_CONFIG":{\n\t\t\t"T":"b1:4"\n\t\t}\n\t}\n}')
    kv = KVConfigManager(path)
    kv.load()
    assert kv.get("ORDER_TOPIC_CONFIG", "T") == "b1:4"
    path.write_bytes(kv.snapshot())
    again = KVConfigManager(path)
    again.load()
    assert again.table == kv.table
    path.write_text("{not json")
    with pytest.raises(KVConfigError):
        KVConfigManager(path).load()


async def test_namesrv_config_get_update_and_black_list(proc: NamesrvProcessor) -> None:
    body = proc.get_config(None, req(RequestCode.GET_NAMESRV_CONFIG)).body  # type: ignore[arg-type]
    props = parse_properties(bytes(body).decode())  # type: ignore[arg-type]
    assert props["listenPort"] == "9876" and props["scanNotActiveBrokerInterval"] == "10000"
    upd = req(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"brokerChannelExpiredTime=15000\norderMessageEnable=true\n")
    assert (await proc.update_config(None, upd)).code == 0  # type: ignore[arg-type]
    assert proc.config.order_message_enable and proc.routes.default_timeout_ms == 15000
    black = req(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"kvConfigPath=/etc/passwd\n")
    assert (await proc.update_config(None, black)).code == ResponseCode.NO_PERMISSION  # type: ignore[arg-type]
    bad = req(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"scanNotActiveBrokerInterval=soon\n")
    resp = await proc.update_config(None, bad)  # type: ignore[arg-type]
    assert resp.code == ResponseCode.SYSTEM_ERROR and "scanNotActiveBrokerInterval" in (resp.remark or "")


def test_topic_list_switches(proc: NamesrvProcessor) -> None:
    proc.register_broker(None, register_req("b1", 0, "h:1", "T1", "T2"))  # type: ignore[arg-type]
    resp = proc.get_all_topic_list(None, req(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))  # type: ignore[arg-type]
    assert set(orjson.loads(resp.body)["topicList"]) == {"T1", "T2"}  # type: ignore[arg-type]
    proc.config.enable_all_topic_list = False
    resp = proc.get_all_topic_list(None, req(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))  # type: ignore[arg-type]
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "disable")


def test_properties_parsing_and_config_errors() -> None:
    props = parse_properties("# comment\n! other\nlistenPort = 9999\nkvConfigPath:/tmp/kv\\\n.json\nx y\n")
    assert props == {"listenPort": "9999", "kvConfigPath": "/tmp/kv.json", "x": "y"}
    config = NamesrvConfig()
    config.apply(props)
    assert config.listen_port == 9999 and config.kv_config_path == "/tmp/kv.json" and config.extra == {"x": "y"}
    for bad in ({"listenPort": "abc"}, {"listenPort": "70000"}, {"orderMessageEnable": "yes"},
                {"scanNotActiveBrokerInterval": "0"}):
        with pytest.raises(ConfigError):
            NamesrvConfig().apply(bad)
