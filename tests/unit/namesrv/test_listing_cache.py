"""The topic lists and the cluster info are encoded once per route epoch, as routes are (found in review: 2,500
pipelined GET_ALL_TOPIC_LIST over 5,000 topics, 3 ms of encoding each, held every other client 6-17 s), and
never served stale: any change to the tables is in the next answer."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from mqtools.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import RegisterBrokerRequestHeader
from mqtools.server.namesrv.config import NamesrvConfig
from mqtools.server.namesrv.kv_config import KVConfigManager
from mqtools.server.namesrv.processor import NamesrvProcessor
from mqtools.server.namesrv.route_info import RouteInfoManager


@pytest.fixture
def proc(tmp_path: Path) -> NamesrvProcessor:
    config = NamesrvConfig(kv_config_path=str(tmp_path / "kv.json"))
    return NamesrvProcessor(config, RouteInfoManager(), KVConfigManager(tmp_path / "kv.json"), lambda: 5_000)


def register(proc: NamesrvProcessor, name: str, addr: str, *topics: str, version: int = 1) -> None:
    header = RegisterBrokerRequestHeader(broker_name=name, broker_addr=addr, cluster_name="C",
                                         ha_server_addr="", broker_id=0)
    wrapper = TopicConfigSerializeWrapper({t: TopicConfig(t, 4, 4) for t in topics}, DataVersion(version, version))
    body = RegisterBrokerBody(wrapper).to_json()
    resp = proc.register_broker(None, RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext(), body))  # type: ignore[arg-type]
    assert resp.code == 0  # type: ignore[union-attr]


def ask(proc: NamesrvProcessor, code: int, ext: dict[str, str] | None = None) -> bytes:
    handler = {RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: proc.get_all_topic_list,
               RequestCode.GET_TOPICS_BY_CLUSTER: proc.get_topics_by_cluster,
               RequestCode.GET_BROKER_CLUSTER_INFO: proc.get_broker_cluster_info}[code]
    resp = handler(None, RemotingCommand.request(code, ext or {}))  # type: ignore[arg-type]
    assert resp.code == 0 and resp.body is not None
    return resp.body  # type: ignore[return-value]


ALL = RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER
BY_CLUSTER = RequestCode.GET_TOPICS_BY_CLUSTER
INFO = RequestCode.GET_BROKER_CLUSTER_INFO


def topics(body: bytes) -> set[str]:
    return set(orjson.loads(body)["topicList"])


def test_encoded_once_while_the_tables_stay_the_same(proc: NamesrvProcessor) -> None:
    register(proc, "b1", "h:1", "T1", "T2")
    for code, ext in ((ALL, None), (BY_CLUSTER, {"cluster": "C"}), (INFO, None)):
        assert ask(proc, code, ext) is ask(proc, code, ext)
    register(proc, "b1", "h:1", "T1", "T2")  # a heartbeat that changes nothing keeps them
    assert ask(proc, ALL) is ask(proc, ALL)


def test_a_change_is_in_the_next_answer(proc: NamesrvProcessor) -> None:
    register(proc, "b1", "h:1", "T1")
    assert topics(ask(proc, ALL)) == topics(ask(proc, BY_CLUSTER, {"cluster": "C"})) == {"T1"}
    assert set(orjson.loads(ask(proc, INFO))["brokerAddrTable"]) == {"b1"}
    register(proc, "b2", "h:2", "T2")
    assert topics(ask(proc, ALL)) == topics(ask(proc, BY_CLUSTER, {"cluster": "C"})) == {"T1", "T2"}
    assert set(orjson.loads(ask(proc, INFO))["brokerAddrTable"]) == {"b1", "b2"}
    proc.routes.delete_topic("T1")
    assert topics(ask(proc, ALL)) == topics(ask(proc, BY_CLUSTER, {"cluster": "C"})) == {"T2"}
    proc.routes.unregister_broker("C", "h:2", "b2", 0)
    assert topics(ask(proc, ALL)) == set() and set(orjson.loads(ask(proc, INFO))["brokerAddrTable"]) == {"b1"}


def test_unknown_clusters_are_answered_not_kept(proc: NamesrvProcessor) -> None:
    """Anyone can ask for any cluster name: only registered clusters take a place in the cache."""
    register(proc, "b1", "h:1", "T1")
    for i in range(100):
        assert topics(ask(proc, BY_CLUSTER, {"cluster": f"nope{i}"})) == set()
    assert len(proc._listings) == 0
