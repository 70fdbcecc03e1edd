"""MQAdmin.topic_views.topic_overview, `mq top`'s topics view: each broker set read from its master, else a slave;
a set nobody answers for is named, never left out of the page's totals in silence (a killed master's set once
vanished, and its topics' counts were the other sets' alone, with no word of it)."""

from __future__ import annotations

import pytest

from mqtools.client.admin import MQAdmin
from mqtools.client.errors import MQBrokerError, RequestTimeoutError
from mqtools.common.presentation import Unreachable
from mqtools.remoting.bodies import (
    BrokerData,
    ClusterInfo,
    MessageQueue,
    TopicConfig,
    TopicOffset,
    TopicStatsTable,
)
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand

#: T on both sets (100 messages on each), A on broker-a alone.
CONFIGS = {"broker-a": {"T": TopicConfig("T", 4, 4), "A": TopicConfig("A", 2, 2)}, "broker-b": {"T": TopicConfig("T", 4, 4)}}
MESSAGES = {("broker-a", "T"): 100, ("broker-a", "A"): 7, ("broker-b", "T"): 100}


def admin_over(monkeypatch: pytest.MonkeyPatch, sets: dict[str, dict[int, str]], hung: frozenset[str] = frozenset(),
               refusing: frozenset[str] = frozenset(), empty: frozenset[str] = frozenset()) -> MQAdmin:
    """Replicas named `<set>-<id>`; `hung` ones time out, `refusing` ones refuse, `empty` ones hold no topic yet."""
    admin = MQAdmin("127.0.0.1:9876")

    async def cluster_info() -> ClusterInfo:
        return ClusterInfo({n: BrokerData("C", n, addrs) for n, addrs in sets.items()}, {"C": set(sets)})

    def answer(addr: str) -> str:
        if addr in hung:
            raise RequestTimeoutError(f"{addr} timed out")
        if addr in refusing:
            raise MQBrokerError(1, "no permission")
        return addr.rsplit("-", 1)[0]

    async def topic_configs(addr: str) -> dict[str, TopicConfig]:
        return {} if addr in empty else CONFIGS[answer(addr)]

    async def call(addr: str, code: int, ext: dict[str, str] | None = None, **_: object) -> RemotingCommand:
        assert code == RequestCode.GET_TOPIC_STATS_INFO and ext is not None
        name, topic = answer(addr), ext["topic"]
        table = TopicStatsTable({MessageQueue(topic, name, 0): TopicOffset(0, MESSAGES[name, topic])})
        return RemotingCommand(0, {}, table.to_json())

    async def summed(addrs: list[str], _stats: str, _key: str) -> tuple[float | None, int | None]:
        return float(len(addrs)), None

    monkeypatch.setattr(admin, "cluster_info", cluster_info)
    monkeypatch.setattr(admin.topics, "topic_configs", topic_configs)
    monkeypatch.setattr(admin, "call", call)
    monkeypatch.setattr(admin.tracking, "summed", summed)
    return admin


def lines(overview: object) -> dict[str, tuple[list[str], int | None]]:
    return {line.topic: (line.brokers, line.messages) for line in overview.lines}  # type: ignore[attr-defined]


BOTH = {"broker-a": {0: "broker-a-0", 1: "broker-a-1"}, "broker-b": {0: "broker-b-0"}}


async def test_every_set_from_its_master(monkeypatch: pytest.MonkeyPatch) -> None:
    overview = await admin_over(monkeypatch, BOTH).topic_views.topic_overview()
    assert lines(overview) == {"A": (["broker-a"], 7), "T": (["broker-a", "broker-b"], 200)}
    assert overview.unreachable == [] and overview.from_slaves == []


async def test_a_set_whose_master_left_the_route_is_read_from_its_slave(monkeypatch: pytest.MonkeyPatch) -> None:
    overview = await admin_over(monkeypatch, {"broker-a": {1: "broker-a-1"}, "broker-b": {0: "broker-b-0"}}
                                ).topic_views.topic_overview()
    assert lines(overview) == {"A": (["broker-a"], 7), "T": (["broker-a", "broker-b"], 200)}
    assert overview.from_slaves == ["broker-a"] and overview.unreachable == []


async def test_a_hung_master_is_read_from_its_slave(monkeypatch: pytest.MonkeyPatch) -> None:
    overview = await admin_over(monkeypatch, BOTH, hung=frozenset({"broker-a-0"})).topic_views.topic_overview()
    assert lines(overview) == {"A": (["broker-a"], 7), "T": (["broker-a", "broker-b"], 200)}
    assert overview.from_slaves == ["broker-a"]


async def test_a_set_nobody_answers_for_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    overview = await admin_over(monkeypatch, BOTH, hung=frozenset({"broker-a-0", "broker-a-1"})
                                ).topic_views.topic_overview()
    assert lines(overview) == {"T": (["broker-b"], 100)}
    assert overview.unreachable == [Unreachable("broker-a", "broker-a-0", "timed out; slave broker-a-1: timed out")]


async def test_a_slave_that_knows_no_topic_yet_is_not_believed(monkeypatch: pytest.MonkeyPatch) -> None:
    overview = await admin_over(monkeypatch, {"broker-a": {1: "broker-a-1"}, "broker-b": {0: "broker-b-0"}},
                                empty=frozenset({"broker-a-1"})).topic_views.topic_overview()
    assert lines(overview) == {"T": (["broker-b"], 100)}
    assert [u.broker_name for u in overview.unreachable] == ["broker-a"] and overview.from_slaves == []


async def test_a_refusing_master_is_named_without_sinking_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    overview = await admin_over(monkeypatch, BOTH, refusing=frozenset({"broker-a-0"})).topic_views.topic_overview()
    assert lines(overview) == {"T": (["broker-b"], 100)}
    assert [(u.broker_name, u.addr) for u in overview.unreachable] == [("broker-a", "broker-a-0")]
    assert "no permission" in overview.unreachable[0].reason
