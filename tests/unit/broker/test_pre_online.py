"""A returning master takes its slaves' newer committed offsets before it serves (pre_online.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mqtools.remoting.bodies import (
    BrokerData,
    ClusterInfo,
    ConsumerOffsetSerializeWrapper,
    SubscriptionGroupConfig,
    TopicConfig,
)
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingConnectError, RemotingError
from mqtools.server.broker.config import BrokerConfig
from mqtools.server.broker.consumer_offsets import ConsumerOffsetManager
from mqtools.server.broker.pre_online import take_offsets_from_slaves
from mqtools.server.broker.subscription import SubscriptionGroupManager
from mqtools.server.broker.topic_config import TopicConfigManager


def test_take_newer_keeps_the_larger_offset_per_queue_and_adds_what_is_missing(tmp_path: Path) -> None:
    mgr = ConsumerOffsetManager(tmp_path)
    mgr.commit_offset("h", "g", "T", 0, 10)
    mgr.commit_offset("h", "g", "T", 1, 50)
    mgr.dirty = False
    moved = mgr.take_newer({"T@g": {0: 30, 1: 40, 2: 5}, "U@g": {0: 7}, "V@g": {}})
    assert moved == [("T@g", 0, 10, 30), ("T@g", 2, None, 5), ("U@g", 0, None, 7)]
    assert mgr.query_offsets("g", "T") == {0: 30, 1: 50, 2: 5} and mgr.query_offset("g", "U", 0) == 7
    assert "V@g" not in mgr.offset_table and mgr.dirty
    mgr.dirty = False
    assert mgr.take_newer({"T@g": {0: 30, 1: 1}}) == [] and not mgr.dirty


@dataclass
class FakeClient:
    """The broker's RemotingClient as the step uses it: the name servers' cluster table, each slave's offsets."""

    cluster: dict[str, dict[int, str]]
    offsets: dict[str, dict[str, dict[int, int]] | Exception]
    asked: list[str] = field(default_factory=list)

    async def invoke_each_namesrv(self, make: Callable[[], RemotingCommand],
                                  timeout: float) -> dict[str, RemotingCommand | RemotingError]:
        cmd = make()
        assert cmd.code == RequestCode.GET_BROKER_CLUSTER_INFO
        info = ClusterInfo({name: BrokerData("C", name, addrs) for name, addrs in self.cluster.items()},
                           {"C": set(self.cluster)})
        return {"ns:1": cmd.response(ResponseCode.SUCCESS, body=info.to_json()),
                "ns:2": RemotingConnectError("ns:2", "refused")}

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        assert cmd.code == RequestCode.GET_ALL_CONSUMER_OFFSET
        self.asked.append(addr)
        answer = self.offsets[addr]
        if isinstance(answer, Exception):
            raise answer
        return cmd.response(ResponseCode.SUCCESS, body=ConsumerOffsetSerializeWrapper(answer).to_json())


@dataclass
class Broker:
    config: BrokerConfig
    client: FakeClient
    offsets: ConsumerOffsetManager
    topics: TopicConfigManager
    groups: SubscriptionGroupManager


def broker(tmp_path: Path, client: FakeClient, **cfg: object) -> Broker:
    """A master whose topic T and group g exist (a consumer of g heartbeated), with g's offset on T."""
    settings: dict[str, object] = {"broker_name": "broker-a", "namesrv_addr": "127.0.0.1:9876",
                                   "store_path_root_dir": str(tmp_path), **cfg}
    config = BrokerConfig(**settings)  # type: ignore[arg-type]
    offsets = ConsumerOffsetManager(tmp_path / "config")
    offsets.commit_offset("h", "g", "T", 0, 100)
    topics = TopicConfigManager(tmp_path / "config", config)
    topics.table["T"] = TopicConfig("T")
    groups = SubscriptionGroupManager(tmp_path / "config")
    groups.table["g"] = SubscriptionGroupConfig("g")
    return Broker(config, client, offsets, topics, groups)


async def test_a_master_takes_the_newer_offsets_of_each_slave_and_persists_them(tmp_path: Path) -> None:
    client = FakeClient({"broker-a": {0: "m:1", 1: "s:1", 2: "s:2"}, "broker-b": {1: "other:1"}},
                        {"s:1": {"T@g": {0: 120, 1: 9}}, "s:2": RemotingConnectError("s:2", "timed out")})
    b = broker(tmp_path, client)
    assert await take_offsets_from_slaves(b, 1.0) == 2  # type: ignore[arg-type]
    assert client.asked == ["s:1", "s:2"]
    assert b.offsets.query_offsets("g", "T") == {0: 120, 1: 9}
    reloaded = ConsumerOffsetManager(tmp_path / "config")
    reloaded.load()
    assert reloaded.query_offsets("g", "T") == {0: 120, 1: 9}


async def test_a_fresh_group_a_slave_or_no_name_server_changes_nothing(tmp_path: Path) -> None:
    lonely = FakeClient({"broker-a": {0: "m:1"}}, {})
    b = broker(tmp_path, lonely)
    assert await take_offsets_from_slaves(b, 1.0) == 0  # type: ignore[arg-type]
    assert lonely.asked == [] and b.offsets.query_offsets("g", "T") == {0: 100}
    behind = FakeClient({"broker-a": {0: "m:1", 1: "s:1"}}, {"s:1": {"T@g": {0: 90}}})
    assert await take_offsets_from_slaves(broker(tmp_path, behind), 1.0) == 0  # type: ignore[arg-type]
    slave = FakeClient({"broker-a": {0: "m:1", 1: "s:1"}}, {"s:1": {"T@g": {0: 999}}})
    assert await take_offsets_from_slaves(  # type: ignore[arg-type]
        broker(tmp_path, slave, broker_role="SLAVE", broker_id=1), 1.0) == 0
    assert slave.asked == []
    no_ns = FakeClient({"broker-a": {0: "m:1", 1: "s:1"}}, {"s:1": {"T@g": {0: 999}}})
    assert await take_offsets_from_slaves(broker(tmp_path, no_ns, namesrv_addr=""), 1.0) == 0  # type: ignore[arg-type]


async def test_offsets_of_a_topic_or_group_the_master_deleted_are_not_taken_back(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The slave's sync only adds and overwrites keys, so it still holds what the master deleted (a group deleted
    with cleanOffset, a topic deleted in the broker, a group whose config is gone): none of it comes back."""
    client = FakeClient({"broker-a": {0: "m:1", 1: "s:1"}},
                        {"s:1": {"T@g": {0: 120}, "Gone@g": {0: 7}, "T@deleted": {0: 12}}})
    b = broker(tmp_path, client)
    with caplog.at_level(logging.INFO, "mq.broker.pre_online"):
        assert await take_offsets_from_slaves(b, 1.0) == 1  # type: ignore[arg-type]
    assert b.offsets.offset_table == {"T@g": {0: 120}}
    left_out = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert len(left_out) == 1 and "Gone@g (topic not on this master)" in left_out[0]
    assert "T@deleted (subscription group not on this master)" in left_out[0]
