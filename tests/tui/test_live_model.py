"""The live view's model without a UI or a cluster: rates, thresholds, gone brokers, filter and sort,
navigation, and the JSON documents against their schemas."""

from __future__ import annotations

import dataclasses

import jsonschema
import pytest
from support.tuisupport import NOW_MONO, NOW_WALL, NS, fixed_state, status_of

from mqtools.client.admin.models.brokers import BrokerRuntime
from mqtools.common.presentation import load_schema, schema_version
from mqtools.diagnose.group import GroupSample, QueueSample
from mqtools.live import export, verdicts
from mqtools.live.state import LiveState, Outcome, Series
from mqtools.live.tables import CRIT, OK, WARN, age, filtered, size, sorted_rows, sparkline
from mqtools.live.views import VIEWS, build
from mqtools.remoting.bodies import MessageQueue
from mqtools.tui.navigation import Navigation, view_named


def rows_of(view: str, target: str | None = None, now: float = NOW_MONO) -> dict:
    table = build(fixed_state(), view, target, now, NOW_WALL)
    return {r.key: r for r in table.rows}


def test_heartbeat_thresholds_missing_name_server_and_unreachable_broker() -> None:
    rows = rows_of("brokers")
    assert rows["10.0.1.1:10911"].level == OK
    assert rows["10.0.1.1:10911"].cells[6].value == {NS[0]: 4_000, NS[1]: 5_000}
    master_b = rows["10.0.2.1:10911"]  # 45 s at the first name server, missing from the second, no answer
    assert master_b.cells[6].level == CRIT and master_b.cells[6].text == "45.0s missing"
    assert status_of(master_b).text == "unreachable" and master_b.level == CRIT
    assert rows["10.0.2.2:10911"].cells[6].level == CRIT  # 95 s at the first name server
    later = rows_of("brokers", now=NOW_MONO + 10)  # ages move on between refreshes
    assert later["10.0.1.1:10911"].cells[6].value == {NS[0]: 14_000, NS[1]: 15_000}
    assert rows_of("brokers", now=NOW_MONO + 30)["10.0.1.1:10911"].cells[6].level == WARN


def test_a_name_servers_certificate_days_as_diagnose_judges_them() -> None:
    table = build(fixed_state(), "namesrv", None, NOW_MONO, NOW_WALL)
    cert = {r.key: {c.key: cell for c, cell in zip(table.columns, r.cells, strict=True)}["certificateDaysLeft"]
            for r in table.rows}
    assert (cert[NS[0]].value, cert[NS[0]].text, cert[NS[0]].level) == (5.0, "5", CRIT)  # act within 7 days
    assert (cert[NS[1]].value, cert[NS[1]].text) == (None, "n/a")  # plain, or not verified: not known


def test_a_broker_that_leaves_the_name_servers_stays_as_gone_with_its_age_growing() -> None:
    state = fixed_state()
    snap = state.value("snapshot")
    state.apply(Outcome("snapshot", dataclasses.replace(snap, brokers=snap.brokers[:3]), None, NOW_WALL, NOW_MONO + 5))
    table = build(state, "brokers", None, NOW_MONO + 25, NOW_WALL)
    gone = next(r for r in table.rows if r.key == "10.0.2.2:10911")
    assert gone.level == CRIT and status_of(gone).value == "gone"
    assert gone.cells[6].value == {NS[0]: 95_000 + 25_000, NS[1]: 1_000 + 25_000}


def test_ha_figures_as_mq_admin_ha_status_derives_them() -> None:
    table = build(fixed_state(), "ha", None, NOW_MONO, NOW_WALL)
    rows = {r.cells[0].value: {c.key: cell for c, cell in zip(table.columns, r.cells, strict=True)} | {"row": r}
            for r in table.rows}
    lagging = rows["broker-b"]
    assert lagging["slave"].value == "10.0.2.2:10911"  # paired with the registered slave by host
    assert lagging["diffBytes"].value == 90_000 and lagging["inSync"].value is False
    assert lagging["row"].level == CRIT
    assert lagging["diffTrend"].value == "growing" and lagging["diffTrend"].level == WARN  # 1,000 -> 90,000 in 4 s
    assert lagging["catchUpMs"].value is None and lagging["speedBytesPerS"].value == 0.0  # not moving: n/a
    assert lagging["diffMessages"].value is None  # the master's runtime is unknown: no average size
    assert lagging["diffHistory"].value == [1_000, 40_000, 90_000]
    synced = rows["broker-a"]
    assert synced["row"].level == OK and synced["catchUpMs"].value == 0 and synced["diffMessages"].value == 0


def test_group_lag_trend_and_drill_downs() -> None:
    groups = rows_of("groups")
    assert groups["orders-svc"].cells[4].value == pytest.approx(50.0) and groups["orders-svc"].cells[4].level == WARN
    assert groups["audit"].cells[1].text == "n/a" and groups["orders-svc"].drill == "orders-svc"
    queues = rows_of("group", "orders-svc")
    assert [(r.cells[5].value, r.cells[6].value) for r in queues.values()] == [(50, "10.0.9.1@1"), (700, None)]
    topic = build(fixed_state(), "topic", "Orders", NOW_MONO, NOW_WALL)
    assert [r.cells[4].value for r in topic.rows] == [600, 600]
    assert topic.info[0].startswith("route broker-a (DefaultCluster): 2r/2w RW-")


def test_series_rate_uses_the_last_window() -> None:
    series = Series()
    for t, v in [(0, 0), (5, 100), (20, 400), (25, 500)]:
        series.add(t, v)
    assert series.rate(window=10) == pytest.approx(20.0)
    assert Series().rate() is None


def test_filter_invert_sort_and_formatting() -> None:
    table = build(fixed_state(), "topics", None, NOW_MONO, NOW_WALL)
    assert [r.key for r in filtered(table.rows, "^(orders|pay)")] == ["Orders", "Payments"]
    assert [r.key for r in filtered(table.rows, "!system")] == ["Orders", "Payments", "Unknown"]
    assert [r.key for r in filtered(table.rows, "[bad")] == []
    by_messages = sorted_rows(table.rows, table.column_for("M"), descending=True)
    assert [r.key for r in by_messages] == ["Orders", "Payments", "TBW102", "Unknown"]  # n/a last either way
    assert [r.key for r in sorted_rows(table.rows, 5, descending=False)][-1] == "Unknown"
    assert (age(61_500), age(3_725_000), size(1536), sparkline([1, 1])) == ("1m01s", "1h02m", "1.5 KiB", "▄▄")


def test_navigation() -> None:
    assert [view_named(t) for t in ("top", "g", "ns", ":ha", "x", "")] == ["topics", "groups", "namesrv", "ha",
                                                                          None, None]
    nav = Navigation("topics")
    nav.current.filter_text = "Ord"
    assert nav.drill("Orders") and nav.breadcrumb() == ["topics", "topic Orders"]
    assert nav.wanted().topic_details == ("Orders",) and not nav.wanted().topics
    assert nav.back() and nav.breadcrumb() == ["topics"] and nav.current.filter_text == "Ord"
    assert nav.back() and nav.current.filter_text is None and not nav.back()
    nav.switch("brokers")
    assert nav.drill("10.0.1.1:10911") and nav.breadcrumb() == ["brokers", "broker 10.0.1.1:10911"]
    nav.switch("namesrv")
    assert not nav.drill("x")


def test_documents_match_their_schemas() -> None:
    state = fixed_state()
    tables = {v: build(state, v, None, NOW_MONO, NOW_WALL) for v in VIEWS}
    snap = export.snapshot_document(tables, context="c", namesrv=NS, taken_at=NOW_WALL)
    jsonschema.validate(snap, load_schema("TopSnapshot"))
    assert snap["schemaVersion"] == schema_version("TopSnapshot")
    for view, target in [*((v, None) for v in VIEWS), ("topic", "Orders"), ("group", "orders-svc")]:
        table = build(state, view, target, NOW_MONO, NOW_WALL)
        doc = export.view_document(table, table.rows, target=target, context=None, namesrv=NS, taken_at=NOW_WALL,
                                   filter_text=None, sort=("TOPIC", False))
        jsonschema.validate(doc, load_schema("TopView"))
        assert doc["schemaVersion"] == schema_version("TopView")


def test_verdict_columns_and_evidence_from_the_samples_the_state_keeps() -> None:
    """A broker's verdict from its runtime answers within 10 s (one waited 450 ms in the send queue: busy),
    a group's from samples spanning the diagnose window; before that both are n/a."""
    state = LiveState()
    snap = fixed_state().value("snapshot")
    state.apply(Outcome("snapshot", snap, None, NOW_WALL, NOW_MONO - 30))
    addr = snap.brokers[0].addr
    busy = BrokerRuntime.from_table({"putTps": "50 50 50", "sendThreadPoolQueueHeadWaitTimeMills": "450"})
    state.apply(Outcome(f"runtime:{addr}", busy, None, NOW_WALL, NOW_MONO - 30))  # too old to count
    assert verdicts.broker_verdict(state, "broker-a", addr) is None
    quiet = BrokerRuntime.from_table({"putTps": "50 50 50", "sendThreadPoolQueueHeadWaitTimeMills": "0"})
    state.apply(Outcome(f"runtime:{addr}", quiet, None, NOW_WALL, NOW_MONO - 4))
    state.apply(Outcome(f"runtime:{addr}", busy, None, NOW_WALL, NOW_MONO - 2))
    state.apply(Outcome(f"config:{addr}", {"waitTimeMillsInSendQueue": "200"}, None, NOW_WALL, NOW_MONO))
    rows = {r.key: r for r in build(state, "brokers", None, NOW_MONO, NOW_WALL).rows}
    cell = rows[addr].cells[-1]
    assert (cell.value, cell.level) == ("busy: send queue", CRIT) and rows[addr].drill == addr
    detail = build(state, "broker", addr, NOW_MONO, NOW_WALL)
    assert detail.info[0].startswith("verdict: busy: send queue — a send waited 450 ms")
    assert [(r.cells[0].value, r.cells[3].value, r.cells[4].value, r.cells[5].value) for r in detail.rows] == [
        ("busy: send queue", 450, 200.0, "waitTimeMillsInSendQueue")]

    mq = MessageQueue("T", "broker-a", 0)
    taken = [GroupSample(at, {mq: QueueSample(100 + n, 10, None)}, []) for n, at in enumerate((0.0, 4.0, 6.0, 9.0))]
    assert verdicts.window_of(taken) is None  # 9 s: not a window yet
    taken.append(GroupSample(12.0, {mq: QueueSample(110, 10, None)}, []))
    assert [s.at for s in verdicts.window_of(taken)] == [0.0, 6.0, 12.0]
    for sample in taken:
        state.apply(Outcome("sample:G", sample, None, NOW_WALL, sample.at))
    found = verdicts.group_verdict(state, "G")
    assert found is not None and found.verdict == "offline"
    assert verdicts.group_evidence(None, True)[0] == "verdict: n/a (sampling: a verdict needs 10 s of samples)"
    assert verdicts.group_evidence(found, True)[0].startswith("verdict: offline — ")


def test_a_set_whose_master_left_has_a_red_ha_row_and_says_since_when() -> None:
    state = fixed_state()
    snap = state.value("snapshot")
    left = [b for b in snap.brokers if b.addr != "10.0.2.1:10911"]
    state.apply(Outcome("snapshot", dataclasses.replace(snap, brokers=left), None, NOW_WALL, NOW_MONO + 5))
    table = build(state, "ha", None, NOW_MONO + 25, NOW_WALL)
    (row,) = [r for r in table.rows if r.cells[0].value == "broker-b"]
    assert (row.cells[1].text, row.cells[1].level, row.cells[2].value) == ("no master", CRIT, "10.0.2.2:10911")
    assert row.level == CRIT
    (note,) = [n for n in table.notes if n.startswith("broker-b: no master registered")]
    # last seen in the first snapshot (NOW_MONO), 25 s before this refresh; the slave's own runtime offset
    assert note == "broker-b: no master registered (missing for 25.0s); slave 10.0.2.2:10911 holds commitlog up to 3000000"


def test_a_broker_not_heard_from_over_two_rounds_is_red_while_the_name_servers_answer() -> None:
    state = fixed_state()
    addr = "10.0.1.1:10911"  # answered at NOW_MONO in the fixed state
    state.apply(Outcome("snapshot", state.value("snapshot"), None, NOW_WALL, NOW_MONO + 1))
    state.round_done(NOW_WALL, NOW_MONO + 1.1)
    assert not state.silent(f"runtime:{addr}")  # one round: its answer may still be on the way
    state.round_done(NOW_WALL, NOW_MONO + 2.1)
    assert state.silent(f"runtime:{addr}")
    row = rows_of_state(state, "brokers", NOW_MONO + 3)[addr]
    assert (status_of(row).text, row.level) == ("not answering", CRIT)
    quiet = fixed_state()  # the name servers silent too: nothing started the job again, nothing to blame it for
    quiet.round_done(NOW_WALL, NOW_MONO + 1.1)
    quiet.round_done(NOW_WALL, NOW_MONO + 2.1)
    assert not quiet.silent(f"runtime:{addr}")


def rows_of_state(state: LiveState, view: str, now: float) -> dict:
    return {r.key: r for r in build(state, view, None, now, NOW_WALL).rows}


def test_proxies_answering_not_answering_and_producers_not_known() -> None:
    table = build(fixed_state(), "proxies", None, NOW_MONO, NOW_WALL)
    rows = {r.key: r for r in table.rows}
    mine, apaches, dead = rows["10.0.3.1:8080"], rows["10.0.3.2:8080"], rows["10.0.3.3:8080"]
    assert [c.text for c in mine.cells] == ["10.0.3.1:8080", "yes", "1", "1", "1", "JAVA 1, PYTHON 1", ""]
    assert table.value(apaches, "producers") is None and apaches.cells[4].text == "n/a"
    assert dead.level == CRIT and table.value(dead, "error") == "connection refused"
    assert any("n/a producers" in n for n in table.notes)
    empty = build(LiveState(), "proxies", None, NOW_MONO, NOW_WALL)
    assert empty.rows == [] and empty.notes == ["no proxy given: mq top --proxy HOST:8080 (a proxy's remoting port)"]
    assert view_named("px") == view_named("prox") == "proxies"
    assert Navigation("proxies").wanted(("p:8080",)).proxies == ("p:8080",)
    assert Navigation("brokers").wanted(("p:8080",)).proxies == ()
