"""MQAdmin.tracking.stats_all, `broker stats` and mqadmin's statsAll: a master that is registered but does not
answer leaves its figures not known and its set named (the document was whole, exit 0, with n/a in it), and
`--active` leaves out only a row known to have had no traffic (an unknown 24-hour count read as none dropped the
topic)."""

from __future__ import annotations

import pytest

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.models.brokers import StatsAll, stats_all_view
from mqtools.client.admin.models.groups import ConsumerProgress
from mqtools.client.admin.models.topics import TopicConsumers
from mqtools.client.errors import RequestTimeoutError
from mqtools.common.presentation import Unreachable
from mqtools.remoting.bodies import BrokerStatsData, BrokerStatsItem

BOTH = {"broker-a": {0: "a0:10911", 1: "a1:10911"}, "broker-b": {0: "b0:10911"}}


async def stats(monkeypatch: pytest.MonkeyPatch, sets: dict[str, dict[int, str]], counts: dict[str, int],
                hung: frozenset[str] = frozenset(), *, active: bool = False,
                lost: list[Unreachable] | None = None) -> StatsAll:
    """statsAll of topic T, consumed by G; each master counted `counts[addr]` puts and gets today, `hung` ones
    time out; G's offsets could not be read on the sets `lost` names."""
    admin = MQAdmin("127.0.0.1:9876")

    async def topic_sets(topic: str, cluster: str | None = None) -> dict[str, dict[int, str]]:
        return sets

    async def topic_consumed_by(topic: str) -> TopicConsumers:
        return TopicConsumers(["G"], [])

    async def broker_stats(addr: str, stats_name: str, stats_key: str) -> BrokerStatsData:
        if addr in hung:
            raise RequestTimeoutError(f"{addr} timed out")
        return BrokerStatsData(stats_day=BrokerStatsItem(counts[addr]))

    async def consumer_progress(group: str, topic: str | None = None, **_: object) -> ConsumerProgress:
        return ConsumerProgress(group, unreachable=lost or [])

    monkeypatch.setattr(admin.topics, "topic_sets", topic_sets)
    monkeypatch.setattr(admin.topics, "topic_consumed_by", topic_consumed_by)
    monkeypatch.setattr(admin.brokers, "broker_stats", broker_stats)
    monkeypatch.setattr(admin.groups, "consumer_progress", consumer_progress)
    return await admin.tracking.stats_all("T", active_only=active)


async def test_every_master_answering(monkeypatch: pytest.MonkeyPatch) -> None:
    got = await stats(monkeypatch, BOTH, {"a0:10911": 5, "b0:10911": 2})
    assert [(r.in_24h, r.out_24h) for r in got.rows] == [(7, 7)] and got.unreachable == []


async def test_a_hung_master_is_named_and_its_figures_not_known(monkeypatch: pytest.MonkeyPatch) -> None:
    got = await stats(monkeypatch, BOTH, {"a0:10911": 5}, frozenset({"b0:10911"}))
    assert [(r.in_tps, r.in_24h, r.out_tps, r.out_24h) for r in got.rows] == [(None, None, None, None)]
    assert [(u.broker_name, u.addr, u.reason) for u in got.unreachable] == [("broker-b", "b0:10911", "timed out")]
    document = stats_all_view(got).document()
    assert document["partial"] and document["rows"][0]["inMsg24Hour"] is None


async def test_active_leaves_out_only_rows_known_to_be_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    idle = {"a0:10911": 0, "b0:10911": 0}
    assert (await stats(monkeypatch, BOTH, idle, active=True)).rows == []
    hung = await stats(monkeypatch, BOTH, idle, frozenset({"b0:10911"}), active=True)
    assert [(r.group, r.in_24h) for r in hung.rows] == [("G", None)]
    no_master = await stats(monkeypatch, {"broker-a": BOTH["broker-a"], "broker-b": {1: "b1:10911"}}, idle,
                            active=True)  # broker-b's counters are its master's: not in the sums
    assert [(r.group, r.in_24h) for r in no_master.rows] == [("G", 0)]
    assert [u.broker_name for u in no_master.unreachable] == ["broker-b"]


async def test_a_backlog_that_leaves_a_set_out_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    lost = Unreachable("broker-a", "a1:10911", "no master answering; the slave does not know the group yet")
    got = await stats(monkeypatch, BOTH, {"a0:10911": 5, "b0:10911": 2}, lost=[lost])
    assert [r.accumulation for r in got.rows] == [0] and got.unreachable == [lost]
