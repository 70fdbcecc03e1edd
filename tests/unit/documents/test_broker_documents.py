"""The cluster and broker documents, rendered from hand-made models (no cluster), and the broker row that
`mq admin cluster list` and mq top's brokers view share."""

from __future__ import annotations

from support.documents import check
from support.jsongolden import load

from mqtools.cli.output import plain
from mqtools.client.admin.models.brokers import (
    BrokerConsumeStats,
    BrokerRow,
    BrokerRuntime,
    ClusterSnapshot,
    Heartbeat,
    QueueLag,
    SendRT,
    StatsAll,
    TopicGroupStats,
    broker_config_view,
    broker_consume_stats_view,
    broker_json,
    broker_status_view,
    cluster_list_view,
    cluster_rt_view,
    stats_all_view,
)
from mqtools.common.presentation import Unreachable
from mqtools.remoting.bodies import MessageQueue

NS = "10.0.0.9:9876"
RUNTIME = BrokerRuntime.from_table({
    "brokerVersionDesc": "V5_1_0", "putTps": "12.5 11 10", "getTransferredTps": "3.25 3 3", "commitLogMinOffset": "0",
    "commitLogMaxOffset": "123456", "commitLogDiskRatio": "0.4321", "msgPutTotalTodayNow": "500",
    "msgPutTotalTodayMorning": "300", "msgPutTotalYesterdayMorning": "100", "msgGetTotalTodayNow": "400",
    "msgGetTotalTodayMorning": "200", "msgGetTotalYesterdayMorning": "50"})
MASTER = BrokerRow("DefaultCluster", "broker-a", 0, "10.0.0.1:10911", {NS: Heartbeat(NS, 1000, 2500, 120_000)}, RUNTIME)
SILENT = BrokerRow("DefaultCluster", "broker-b", 0, "10.0.0.3:10911", {NS: None}, None, "timed out")
ORPHAN = BrokerRow("DefaultCluster", "broker-c", 1, "10.0.0.4:10911", {}, RUNTIME)
SNAP = ClusterSnapshot([NS], {"DefaultCluster": ["broker-a", "broker-b", "broker-c"]}, [MASTER, SILENT, ORPHAN], True)


def test_cluster_list_with_a_silent_broker_and_a_set_without_master() -> None:
    view = cluster_list_view(SNAP, None, more=False)
    doc = check(view, "cluster list")
    assert view.rows[0] == ["DefaultCluster", "broker-a", 0, "master", "10.0.0.1:10911", "V5_1_0", 12.5, 3.25,
                            "1.5s", "118.5s", 123456, "43.2%"]
    assert view.rows[1][5:] == [None] * 7
    assert view.rows[3][:4] == ["DefaultCluster", "broker-c", 0, "no master"]
    silent = doc["brokers"][1]
    assert (silent["version"], silent["heartbeatAgeMs"], silent["heartbeats"], silent["error"]) == (
        None, None, {NS: None}, "timed out")
    assert doc["brokers"][0]["heartbeats"] == {NS: {"ageMs": 1500, "timeoutMs": 120_000}}
    assert doc["brokerSetsWithoutMaster"] == [{"cluster": "DefaultCluster", "brokerName": "broker-c"}]
    assert view.footer == [("broker set broker-c has no master registered: its slaves serve reads only (mq admin ha "
                            "status -b broker-c)")]
    # a broker whose figures could not be read makes the list partial (exit 4), named with its reason
    assert (doc["partial"], doc["unreachable"]) == (True, [{"brokerName": "broker-b", "addr": "10.0.0.3:10911",
                                                           "reason": "timed out"}])
    assert view.notes() == ["partial: could not read broker-b 10.0.0.3:10911: timed out"]
    assert plain(view).splitlines()[2].split()[-7:] == ["n/a"] * 7


def test_cluster_list_more_gives_totals_and_says_when_heartbeats_are_unknown() -> None:
    snap = ClusterSnapshot([NS], {"DefaultCluster": ["broker-a", "broker-b"]}, [MASTER, SILENT], False)
    view = cluster_list_view(snap, "DefaultCluster", more=True)
    doc = check(view, "cluster list")
    assert [c.header for c in view.columns][3:] == ["IN YESTERDAY", "OUT YESTERDAY", "IN TODAY", "OUT TODAY"]
    assert view.rows == [["DefaultCluster", "broker-a", 0, 200, 150, 200, 200],
                         ["DefaultCluster", "broker-b", 0, None, None, None, None]]
    assert doc["brokers"][0]["inTotalYesterday"] == 200 and doc["brokers"][1]["outTotalToday"] is None
    assert view.footer[0] == "heartbeat ages: n/a (the name servers do not answer mq's private GET_BROKER_LIVE_TABLE)"


def test_cluster_list_of_another_cluster_is_empty() -> None:
    doc = check(cluster_list_view(SNAP, "Other", more=False), "cluster list")
    assert (doc["clusters"], doc["brokers"], doc["brokerSetsWithoutMaster"]) == ({}, [], [])


def test_cluster_rt_with_no_stored_send_has_no_average() -> None:
    probes = [SendRT("broker-a", [(3.5, True), (2.5, True)]), SendRT("broker-b", [(5.0, False)])]
    view = cluster_rt_view(probes, {"broker-a": "10.0.0.1:10911", "broker-b": "10.0.0.3:10911"}, 2, 128)
    doc = check(view, "cluster rt")
    assert view.rows == [["broker-a", "10.0.0.1:10911", 2, 0, 3.0], ["broker-b", "10.0.0.3:10911", 0, 1, None]]
    assert doc["brokers"][1] == {"brokerName": "broker-b", "addr": "10.0.0.3:10911", "ok": 0, "failed": 1,
                                 "avgRtMs": None}
    assert (doc["amount"], doc["size"]) == (2, 128)


def _golden_keys(command: str, field: str) -> list[str]:
    """The broker's own keys (its runtime table, its configuration) as the golden's cluster printed them: they
    are the broker's data; the document around them is what these tests check."""
    return list(load()[command][field])


def test_broker_status_is_the_runtime_table_sorted() -> None:
    raw = {k: str(i) for i, k in enumerate(reversed(_golden_keys("broker status", "runtime")))}
    view = broker_status_view("10.0.0.1:10911", BrokerRuntime.from_table(raw))
    doc = check(view, "broker status")
    assert [r[0] for r in view.rows] == sorted(raw)
    assert list(doc["runtime"]) == sorted(raw) and doc["brokerAddr"] == "10.0.0.1:10911"
    assert view.rows[0] == ["bootTimestamp", raw["bootTimestamp"]]


def test_broker_config_is_every_key_sorted() -> None:
    config = {k: "v" for k in reversed(_golden_keys("broker config get", "config"))}
    config["brokerRole"] = "SYNC_MASTER"
    view = broker_config_view("10.0.0.1:10911", config)
    doc = check(view, "broker config get")
    assert [r[0] for r in view.rows] == sorted(config)
    assert doc["config"]["brokerRole"] == "SYNC_MASTER"
    assert [c.header for c in view.columns] == ["KEY", "VALUE"]


def test_broker_consume_stats_keeps_the_lag_over_the_level_and_the_whole_total() -> None:
    stats = BrokerConsumeStats("10.0.0.1:10911", 130, [
        QueueLag("G1", MessageQueue("T1", "broker-a", 0), 100, 0, None),
        QueueLag("G1", MessageQueue("T1", "broker-a", 1), 100, 70, 1_700_000_000_123),
        QueueLag("G2", MessageQueue("T2", "broker-a", 0), 5, 5, 1_700_000_000_000)])
    view = broker_consume_stats_view("10.0.0.1:10911", stats, level=1)
    doc = check(view, "broker consume-stats")
    assert [r[:7] for r in view.rows] == [["T1", "G1", "broker-a", 0, 100, 0, 100], ["T1", "G1", "broker-a", 1, 100, 70, 30]]
    assert view.rows[0][7] is None and doc["queues"][0]["lastTimestamp"] is None
    assert doc["queues"][1]["lastTimestamp"] == 1_700_000_000_123
    assert doc["totalDiff"] == 130 and view.footer == ["total diff: 130"]
    assert len(broker_consume_stats_view("10.0.0.1:10911", stats).rows) == 3


def test_stats_all_of_a_topic_nobody_consumes() -> None:
    view = stats_all_view(StatsAll([TopicGroupStats("T1", "G1", 10, 1.5, 2.25, 100, 90),
                                    TopicGroupStats("T2", None, None, 0.5, None, 7, None)]))
    doc = check(view, "broker stats")
    assert view.rows[1] == ["T2", None, None, 0.5, None, 7, None]
    assert doc["rows"][1] == {"topic": "T2", "group": None, "accumulation": None, "inTps": 0.5, "outTps": None,
                              "inMsg24Hour": 7, "outMsg24Hour": None}
    assert plain(view).splitlines()[2].split() == ["T2", "n/a", "n/a", "0.50", "n/a", "7", "n/a"]
    assert (doc["partial"], doc["unreachable"]) == (False, [])


def test_stats_all_without_a_set_says_which_and_is_partial() -> None:
    """A set with no master: its put and get counters are not in the sums, and the document says so."""
    gone = Unreachable("broker-a", None, "no master registered: the put and get counters are its master's")
    view = stats_all_view(StatsAll([TopicGroupStats("T1", "G1", 10, 1.5, 2.25, 100, 90)], [gone]))
    doc = check(view, "broker stats")
    assert (doc["partial"], doc["unreachable"]) == (True, [gone.to_json()])
    assert plain(view).rstrip().splitlines()[-1] == ("partial: could not read broker-a: no master registered: the "
                                                     "put and get counters are its master's")


def test_mq_top_brokers_view_and_cluster_list_share_a_broker_row() -> None:
    """The keys mq top's brokers view has in common with cluster list carry the same values (broker_json's)."""
    from mqtools.live.state import LiveState, Outcome
    from mqtools.live.views import brokers

    state = LiveState()
    row = BrokerRow("DefaultCluster", "broker-a", 1, "10.0.0.2:10911", {NS: Heartbeat(NS, 1000, 2500, 120_000)})
    state.apply(Outcome("snapshot", ClusterSnapshot([NS], {"DefaultCluster": ["broker-a"]}, [MASTER, row], True),
                        None, 1000.0, 100.0))
    state.apply(Outcome("runtime:10.0.0.1:10911", RUNTIME, None, 1000.0, 100.0))
    table = brokers(state, 100.0)
    shared = ["cluster", "brokerName", "brokerId", "role", "addr", "version", "inTps", "outTps",
              "commitLogMaxOffset", "diskRatio"]
    for live_row, b, rt in zip(table.rows, [MASTER, row], [RUNTIME, None], strict=True):
        got = live_row.json(table.columns)
        want = broker_json(b, rt)
        assert {k: got[k] for k in shared} == {k: want[k] for k in shared}
    assert table.rows[1].json(table.columns)["version"] is None and table.rows[1].cells[5].text == "n/a"
    assert table.rows[0].json(table.columns)["role"] == "MASTER" and table.rows[0].cells[3].text == "master"
