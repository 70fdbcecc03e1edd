"""The drill documents (the scenario list, a drill's report, a soak's tally), rendered from hand-made scenarios,
histories and outcomes (no cluster)."""

from __future__ import annotations

from support.documents import check

from mqtools.cli.output import plain
from mqtools.common.presentation import cell
from mqtools.drills.history import FAIL, OK, RECEIVE, SEND, History, Op
from mqtools.drills.report import build, drill_report_view, to_json
from mqtools.drills.scenarios import (
    CLASSIC,
    CONTROLLER,
    SCENARIOS,
    Criteria,
    FaultContext,
    Scenario,
    scenario_list_view,
)
from mqtools.drills.soak import RunOutcome, SoakPlan, SoakResult, SoakRun, Variation, soak_view


async def _nothing(ctx: FaultContext) -> None:
    return None


HAND_MADE = Scenario("kill-nothing", "Does nothing.", "Nothing changes.", "master", _nothing,
                     Criteria(max_rto=3.0), async_criteria=Criteria(max_lost=None), fault_for=2.5,
                     modes=frozenset({CONTROLLER, CLASSIC}))


def test_scenario_list() -> None:
    view = scenario_list_view([HAND_MADE, SCENARIOS["kill-master"]])
    doc = check(view, "drill list")
    assert view.rows[0] == ["kill-nothing", "Does nothing.", "Nothing changes."]
    first = doc["scenarios"][0]
    assert first["modes"] == ["classic", "controller"] and first["faultFor"] == 2.5
    assert first["criteria"]["maxRto"] == 3.0 and first["asyncCriteria"]["maxLost"] is None
    assert first["controllerCriteria"] is None and first["netns"] is False
    assert cell(first["controllerCriteria"]) == "n/a"


def test_every_scenario_is_listed() -> None:
    view = scenario_list_view(SCENARIOS.values())
    check(view, "drill list")
    assert [r[0] for r in view.rows] == list(SCENARIOS)


MASTER = {"name": "broker-a-0", "addr": "10.0.0.1:10911", "role": "SYNC_MASTER"}
META = {
    "scenario": "kill-master", "version": "1.0.0", "startedUtc": "2026-01-01T00:00:00.000Z", "finishedUtc": None,
    "runId": "r-1", "seed": 7, "topic": "DrillTopic", "group": "DrillGroup",
    "cluster": {"namesrv": ["10.0.0.9:9876"], "brokers": [{"cluster": "DefaultCluster", "brokerName": "broker-a",
                                                           "brokerId": 0, "addr": "10.0.0.1:10911", "name": "broker-a-0",
                                                           "role": "SYNC_MASTER", "flushDiskType": None}]},
    "target": {"brokerName": "broker-a", "master": MASTER, "slave": None, "sendMode": "SYNC_MASTER", "namesrv": None},
    "preflight": {"verdict": "unknown", "lossBytes": None, "lossMessages": None, "checks": []},
    "criteria": Criteria(toolkit_truth=False).to_json(),
    "settings": {"rate": 10.0, "duration": 4.0, "producers": 1, "consumers": 1, "size": 256, "keys": 0,
                 "faultAt": 2.0, "faultFor": 5.0},
}


def _history(lose_one: bool) -> History:
    """Thirty sends over 3 s (one never consumed when `lose_one`) and one refused, around a fault at 2 s."""
    h = History(meta=dict(META))
    h.event(0.0, "load-start")
    h.event(2.0, "fault", "SIGKILL broker-a")
    h.event(4.0, "load-end")
    for i in range(30):
        h.ops.append(Op("producer-0", SEND, f"m{i}", i / 10, i / 10 + 0.01, OK, seq=i, planned=i / 10,
                        broker="broker-b", queue=0, offset=i))
        if not (lose_one and i == 3):
            h.ops.append(Op("consumer-0", RECEIVE, f"m{i}", i / 10 + 0.05, i / 10 + 0.05, OK, broker="broker-b",
                            queue=0, offset=i, size=400))
    h.ops.append(Op("producer-0", SEND, "m99", 2.05, 2.06, FAIL, seq=99, planned=2.05, code=17,
                    error="MQBrokerError: CODE: 17"))
    return h


def test_drill_report_is_the_report_as_json() -> None:
    report = build(_history(lose_one=True))
    view = drill_report_view(report)
    doc = check(view)
    assert (view.columns, view.rows) == ([], [])
    assert doc["verdict"] == "FAIL" and doc["scenario"] == "kill-master"
    assert {k: doc[k] for k in to_json(report)} == to_json(report)
    assert doc["header"]["finishedUtc"] is None and doc["header"]["target"]["slave"] is None
    assert doc["header"]["seed"] == 7 and doc["transactions"] is None and doc["preflight"]["lossBytes"] is None
    assert doc["integrity"]["lost"]["count"] == 1 and doc["integrity"]["lost"]["ids"] == ["m3"]
    assert {"ok": False, "text": "lost 1 > 0"} in doc["reasons"]


def test_a_passing_drill_report() -> None:
    doc = check(drill_report_view(build(_history(lose_one=False))))
    assert doc["verdict"] == "PASS" and all(r["ok"] for r in doc["reasons"])


def test_soak_tally_with_unknown_figures_and_failures() -> None:
    plan = SoakPlan(("kill-master", "pause-master"), ("2m-2s-sync",), 2, frozenset({"keys"}), 42,
                    Variation(0, 200.0, 256, False))
    v = Variation(8, 200.0, 256, True)
    runs = [RunOutcome(SoakRun(1, "kill-master", "2m-2s-sync", v, 7), "PASS", [], 20.04, 0, 1, 2, 0, 3.21, None, 0,
                       None, 1.5, 2.25, False, 0),
            RunOutcome(SoakRun(2, "pause-master", "2m-2s-sync", v, 8), "FAIL", ["lost 3 > 0"], 25.0, 3, 0, 0, 1,
                       None, 2, None, "/tmp/soak/002.jsonl"),
            RunOutcome(SoakRun(3, "kill-master", "2m-2s-sync", v, 9), "FAIL", ["the drill did not run: boom"], 1.0)]
    view = soak_view(SoakResult(plan, runs, None, interrupted=True))
    doc = check(view)
    assert view.rows[0] == ["kill-master", "2m-2s-sync", 2, 1, 1, 0, 0, 1, 2, 0, "3.21s", "3.21s", None, 0, "1.50s",
                            "1.50s", "2.25s", 0]
    assert [cell(x) for x in view.rows[1][6:14]] == ["n/a", "0", "0", "1", "n/a", "n/a", "2", "n/a"]
    assert view.footer == [
        "3 run(s), 1 PASS, 2 FAIL; seed 42 (--seed 42 replays this plan); figures are the worst of each cell's runs",
        "FAIL #2 pause-master on 2m-2s-sync (200/s 256 B, 8 keys, TLS): lost 3 > 0 (history /tmp/soak/002.jsonl)",
        "FAIL #3 kill-master on 2m-2s-sync (200/s 256 B, 8 keys, TLS): the drill did not run: boom",
        "interrupted: the runs above are all that ran",
        "Verdict: FAIL",
    ]
    assert doc["verdict"] == "FAIL" and doc["historyDir"] is None
    assert doc["tally"][1]["rtoP50Seconds"] is None and doc["runs"][2]["lost"] is None
    assert plain(view).splitlines()[-1] == "Verdict: FAIL"
