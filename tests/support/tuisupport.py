"""Helpers for `mq top` tests: a fixed live model (snapshot and model tests) and reading the app's state."""

from __future__ import annotations

from typing import Any

from mqtools.client.admin.models.brokers import BrokerRow, BrokerRuntime, ClusterSnapshot, Heartbeat
from mqtools.client.admin.models.groups import (
    ClientConnection,
    ConsumerProgress,
    GroupConnections,
    GroupSummary,
    QueueProgress,
)
from mqtools.client.admin.models.ha import HAStatus
from mqtools.client.admin.models.live import NamesrvStatus, TopicLine, TopicOverview
from mqtools.client.admin.models.proxies import ProxyClient, ProxyClients, ProxyRead
from mqtools.client.admin.models.topics import QueueStats, TopicStatus
from mqtools.common.presentation import Unreachable
from mqtools.live.collect import GroupDetail, TopicDetail
from mqtools.live.state import LiveState, Outcome
from mqtools.live.tables import Cell, Row
from mqtools.live.views import BROKER_COLUMNS
from mqtools.remoting.bodies import BrokerData, MessageQueue, QueueData, TopicRouteData
from mqtools.tui.widgets.prompt import Prompt
from support.clientsupport import until

NOW_MONO = 1000.0
NOW_WALL = 1_700_000_000.0
NS = ["10.0.0.1:9876", "10.0.0.2:9876"]


def _runtime(max_offset: int, tps: float) -> BrokerRuntime:
    return BrokerRuntime.from_table({
        "brokerVersionDesc": "V4_9_7", "putTps": f"{tps} {tps} {tps}", "getTransferredTps": "1.5 1.5 1.5",
        "commitLogMaxOffset": str(max_offset), "commitLogDiskRatio": "0.42",
        "putMessageTimesTotal": "1000", "putMessageSizeTotal": "256000"})


def fixed_state() -> LiveState:
    """Two masters with a slave each over two name servers: broker-b's master has an old heartbeat
    and is missing from the second name server; broker-b's slave lags and is not in sync."""
    state = LiveState()
    ms = NOW_WALL * 1000

    def beat(ns: str, age_ms: int) -> Heartbeat:
        return Heartbeat(ns, int(ms - age_ms), int(ms), 120_000)

    rows = [
        BrokerRow("DefaultCluster", "broker-a", 0, "10.0.1.1:10911", {NS[0]: beat(NS[0], 4_000), NS[1]: beat(NS[1], 5_000)}),
        BrokerRow("DefaultCluster", "broker-a", 1, "10.0.1.2:10911", {NS[0]: beat(NS[0], 3_000), NS[1]: beat(NS[1], 2_500)}),
        BrokerRow("DefaultCluster", "broker-b", 0, "10.0.2.1:10911", {NS[0]: beat(NS[0], 45_000), NS[1]: None}),
        BrokerRow("DefaultCluster", "broker-b", 1, "10.0.2.2:10911", {NS[0]: beat(NS[0], 95_000), NS[1]: beat(NS[1], 1_000)}),
    ]
    snap = ClusterSnapshot(NS, {"DefaultCluster": ["broker-a", "broker-b"]}, rows, True)
    probe = [NamesrvStatus(NS[0], True, 0.8, frozenset(r.addr for r in rows), True,
                           certificate_not_after=NOW_WALL + 5 * 86_400),  # TLS, verified: 5 days left
             NamesrvStatus(NS[1], True, 1.1, frozenset(r.addr for r in rows if r.addr != "10.0.2.1:10911"), True)]
    ha_a = HAStatus.from_json({"master": True, "masterCommitLogMaxOffset": 5_000_000, "inSyncSlaveNums": 1,
                               "haConnectionInfo": [{"addr": "10.0.1.2:40001", "slaveAckOffset": 5_000_000,
                                                     "diff": 0, "inSync": True, "transferredByteInSecond": 0}]})
    topics = TopicOverview([
        TopicLine("Orders", "normal", ["broker-a", "broker-b"], 16, 16, 6, 120_345, 250.0),
        TopicLine("Payments", "normal", ["broker-a"], 8, 8, 4, 9_876, 12.5),
        TopicLine("TBW102", "system", ["broker-a", "broker-b"], 16, 16, 7, 0, 0.0),
        TopicLine("Unknown", "normal", ["broker-b"], 4, 4, None, None, None),
    ])
    groups = [GroupSummary("orders-svc", 3, 397, "CONSUME_PASSIVELY", "CLUSTERING", 240.0, 1_200),
              GroupSummary("payments-svc", 0, None, None, None, 0.0, 0),
              GroupSummary("audit", None, None, None, None, None, None)]
    q = [MessageQueue("Orders", "broker-a", i) for i in range(2)]
    detail = TopicDetail(
        TopicRouteData([QueueData("broker-a", 2, 2, 6)],
                       [BrokerData("DefaultCluster", "broker-a", {0: "10.0.1.1:10911", 1: "10.0.1.2:10911"})]),
        TopicStatus("Orders", [QueueStats(q[0], 0, 600, int(ms - 2_000)), QueueStats(q[1], 100, 700, None)], 250.0))
    conns = GroupConnections("orders-svc", [ClientConnection("10.0.9.1@1", "10.0.9.1:5000", "PYTHON", 397)],
                             {"Orders": "*"}, "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET")
    progress = ConsumerProgress("orders-svc", [QueueProgress(q[0], 600, 550, int(ms - 1_000)),
                                               QueueProgress(q[1], 700, None, None)], 240.0)
    for key, value, at in [("snapshot", snap, 0.0), ("probe", probe, 0.0), ("ha:10.0.1.1:10911", ha_a, 0.0),
                           ("runtime:10.0.1.1:10911", _runtime(5_000_000, 250.0), 0.0),
                           ("runtime:10.0.1.2:10911", _runtime(5_000_000, 0.0), 0.0),
                           ("runtime:10.0.2.2:10911", _runtime(3_000_000, 0.0), 0.0),
                           ("topics", topics, 0.0), ("topic:Orders", detail, 0.0),
                           ("group:orders-svc", GroupDetail(progress, conns, {("Orders", "broker-a", 0): "10.0.9.1@1"}), 0.0)]:
        state.apply(Outcome(key, value, None, NOW_WALL - at, NOW_MONO - at))
    state.apply(Outcome("runtime:10.0.2.1:10911", None, "connect to 10.0.2.1:10911 timed out", NOW_WALL, NOW_MONO))
    for i, (diff, lag) in enumerate([(1_000, 1_000), (40_000, 1_100), (90_000, 1_200)]):
        at = NOW_MONO - 4 + 2 * i
        state.apply(Outcome("ha:10.0.2.1:10911", HAStatus.from_json({
            "master": True, "masterCommitLogMaxOffset": 3_000_000 + diff, "inSyncSlaveNums": 0,
            "haConnectionInfo": [{"addr": "10.0.2.2:40002", "slaveAckOffset": 3_000_000, "diff": diff,
                                  "inSync": diff < 8_192, "transferredByteInSecond": 0}]}), None, NOW_WALL, at))
        groups[0] = GroupSummary("orders-svc", 3, 397, "CONSUME_PASSIVELY", "CLUSTERING", 240.0, lag)
        state.apply(Outcome("groups", list(groups), None, NOW_WALL, at))
    # two proxies: mq's (consumers and producers) and Apache's (consumers only), and one that does not answer
    px = ProxyRead("10.0.3.1:8080", [ProxyClient("10.0.3.1:8080", "PUSH", "orders-svc", "c-1", "10.0.9.3:1", "JAVA",
                                                 "V5_0_8"),
                                     ProxyClient("10.0.3.1:8080", "PRODUCER", "Orders", "p-1", "10.0.9.4:1", "PYTHON",
                                                 "V5_1_2")], True)
    apache = ProxyRead("10.0.3.2:8080", [ProxyClient("10.0.3.2:8080", "SIMPLE", "billing", "c-2", "10.0.9.5:1",
                                                     "JAVA", "V5_5_0")], False)
    state.apply(Outcome("proxies", ProxyClients([px, apache], ["billing", "orders-svc"], ["Orders"], None,
                                                [Unreachable(None, "10.0.3.3:8080", "connection refused")]),
                        None, NOW_WALL, NOW_MONO))
    state.round_done(NOW_WALL, NOW_MONO)
    return state


def view_of(app: Any) -> str | None:
    """The view the app last drew; None before its first redraw."""
    return app.current_table.view if app.current_table is not None else None


def notes_of(app: Any) -> list[str]:
    return app.current_table.notes if app.current_table is not None else []


#: Where a broker row's STATUS is (the column before it moves as columns are added).
STATUS = next(i for i, c in enumerate(BROKER_COLUMNS) if c.key == "status")


def status_of(row: Row) -> Cell:
    """A broker row's STATUS cell."""
    return row.cells[STATUS]


async def prompt(app: Any, pilot: Any, key: str, text: str, *, clear: bool = False) -> None:
    """Open the `:` or `/` prompt with `key` ("colon" or "slash"), type `text` and press enter, each step once the
    last has landed: Textual moves the focus to the prompt later (call_later), and keys pressed before that reach the
    table instead (an upper-case letter sorts, `p` pauses), which a busy machine showed. `clear`: empty what the
    prompt opened with (ctrl+a, ctrl+k) first."""
    await pilot.press(key)
    field = app.screen.query_one(Prompt)
    await until(lambda: field.has_focus, 10, f"the {key} prompt")
    if clear:
        await pilot.press("ctrl+a", "ctrl+k")
        await until(lambda: field.value == "", 10, "the prompt emptied")
    await pilot.press(*text)
    await until(lambda: field.value == text, 10, f"{text!r} in the prompt")
    await pilot.press("enter")
