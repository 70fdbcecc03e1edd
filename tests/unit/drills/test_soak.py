"""The soak's plan (what each run draws), its tally and its bookkeeping of FAIL histories.

run_soak's drills are replaced by hand-made histories here; tests/integration/drills runs real ones.
"""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from mqtools.common.presentation import document, load_schema
from mqtools.drills import soak as soak_mod
from mqtools.drills.history import OK, RECEIVE, SEND, History, Op
from mqtools.drills.report import FAIL, PASS
from mqtools.drills.runner import DrillError, DrillSettings
from mqtools.drills.scenarios import SCENARIOS, Criteria
from mqtools.drills.soak import (
    KEYED,
    RATE_RANGE,
    SIZE_RANGE,
    RunOutcome,
    SoakPlan,
    SoakResult,
    Variation,
    run_soak,
    validate,
)

BASE = Variation(0, 200.0, 256, False)


def plan(runs: int = 20, vary: tuple[str, ...] = ("keys", "rate", "size", "tls"), seed: int = 7) -> SoakPlan:
    return SoakPlan(("kill-master", "kill-slave"), ("2m-2s-sync", "2m-2s-async"), runs, frozenset(vary), seed, BASE)


def test_the_schedule_goes_round_by_round_and_replays_from_its_seed() -> None:
    runs = plan(3).schedule()
    assert [r.index for r in runs] == list(range(1, 13))
    first_round = [(r.preset, r.scenario) for r in runs[:4]]
    assert first_round == [("2m-2s-sync", "kill-master"), ("2m-2s-sync", "kill-slave"),
                           ("2m-2s-async", "kill-master"), ("2m-2s-async", "kill-slave")]
    assert [(r.preset, r.scenario) for r in runs[4:8]] == first_round
    assert plan(3).schedule() == runs
    assert plan(3, seed=8).schedule() != runs


def test_what_varies_stays_in_its_range_and_covers_both_ends() -> None:
    drawn = [r.variation for r in plan(50).schedule()]
    assert {v.keys for v in drawn} == {0, KEYED} and {v.tls for v in drawn} == {False, True}
    assert all(RATE_RANGE[0] <= v.rate <= RATE_RANGE[1] and v.rate % 10 == 0 for v in drawn)
    assert all(SIZE_RANGE[0] <= v.size <= SIZE_RANGE[1] for v in drawn)
    assert min(v.size for v in drawn) < 1024 and max(v.size for v in drawn) > 4096  # compressed bodies too
    assert min(v.rate for v in drawn) < 300 and max(v.rate for v in drawn) > 600


def test_what_does_not_vary_is_the_base_load() -> None:
    drawn = [r.variation for r in plan(10, vary=("rate",)).schedule()]
    assert {(v.keys, v.size, v.tls) for v in drawn} == {(0, 256, False)}
    assert len({v.rate for v in drawn}) > 1
    assert {r.variation for r in plan(5, vary=()).schedule()} == {BASE}


def test_a_run_becomes_a_fresh_preset_drill_with_its_own_seed() -> None:
    p = plan(1)
    run = p.schedule()[0]
    settings = p.settings(run)
    assert isinstance(settings, DrillSettings)
    assert (settings.scenario, settings.preset, settings.seed, settings.tls) == \
        (run.scenario, run.preset, run.seed, run.variation.tls)
    assert (settings.load.rate, settings.load.size, settings.load.keys) == \
        (run.variation.rate, run.variation.size, run.variation.keys)


def test_unknown_names_are_refused_by_name() -> None:
    validate(SCENARIOS, ("keys", "tls"))
    with pytest.raises(ValueError, match="unknown scenario 'kill-all'"):
        validate(["kill-master", "kill-all"], ())
    with pytest.raises(ValueError, match="unknown --vary kind 'speed'"):
        validate(["kill-master"], ["speed"])


def outcome(p: SoakPlan, index: int, verdict: str = PASS, **figures: object) -> RunOutcome:
    return RunOutcome(p.schedule()[index], verdict, [] if verdict == PASS else ["lost 1 > 0"], 10.0,
                      **figures)  # type: ignore[arg-type]


def test_the_tally_keeps_the_worst_figure_and_rto_percentiles_per_cell() -> None:
    p = plan(3, vary=())
    result = SoakResult(p, [
        outcome(p, 1, lost=0, failed=0, unknown=0, rto=0.0, order_violations=None),
        outcome(p, 5, FAIL, lost=2, failed=1, unknown=0, rto=3.2, order_violations=0),
        outcome(p, 9, lost=0, failed=0, unknown=None, rto=0.4),
        outcome(p, 0, lost=0, rto=None),
    ])
    cells = {(t.scenario, t.preset): t for t in result.tally()}
    slave = cells["kill-slave", "2m-2s-sync"]
    assert (slave.runs, slave.passed, slave.failed_runs) == (3, 2, 1)
    assert (slave.lost, slave.failed, slave.unknown, slave.order_violations) == (2, 1, 0, 0)
    assert (slave.rto_p50, slave.rto_p99, slave.regression) == (0.4, 3.2, None)
    master = cells["kill-master", "2m-2s-sync"]
    assert (master.rto_p50, master.rto_p99, master.duplicated) == (None, None, None)  # not known, not 0
    assert [(t.scenario, t.preset) for t in result.tally()] == [("kill-master", "2m-2s-sync"),
                                                                 ("kill-slave", "2m-2s-sync")]
    assert not result.passed  # a FAIL, and most planned runs never ran


def drill_history(scenario: str, lost: bool) -> History:
    """Five sends consumed (one not, when `lost`), a fault at 0.5 s."""
    h = History(meta={"scenario": scenario, "criteria": Criteria(toolkit_truth=False).to_json(), "settings": {"keys": 0}})
    h.event(0.0, "load-start")
    h.event(0.5, "fault", "SIGKILL")
    for i in range(5):
        h.ops.append(Op("producer-0", SEND, f"m{i}", i / 5, i / 5 + 0.01, OK, planned=i / 5, broker="broker-b",
                        queue=0, offset=i))
        if not (lost and i == 4):
            h.ops.append(Op("consumer-0", RECEIVE, f"m{i}", i / 5 + 0.1, i / 5 + 0.1, OK, broker="broker-b",
                            queue=0, offset=i, size=256))
    h.event(1.0, "load-end")
    return h


def test_run_soak_keeps_fail_histories_counts_errors_and_stops_on_ctrl_c(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = plan(2, vary=())
    calls: list[str] = []

    def fake_drill(settings: DrillSettings, progress: object) -> History:
        calls.append(settings.scenario)
        n = len(calls)
        if n == 3:
            raise DrillError("preset 2m-2s-sync did not come up: broker-a", 3)
        if n == 6:
            raise KeyboardInterrupt
        return drill_history(settings.scenario, lost=n == 2)

    monkeypatch.setattr(soak_mod, "run_drill", fake_drill)
    seen: list[tuple[int, int]] = []
    result = run_soak(p, tmp_path / "h", progress=lambda s: seen.append((s.done, s.failed)))
    assert result.interrupted and not result.passed
    assert [o.verdict for o in result.outcomes] == [PASS, FAIL, FAIL, PASS, PASS]
    assert result.outcomes[2].failing == ["the drill did not run: preset 2m-2s-sync did not come up: broker-a"]
    assert result.outcomes[2].lost is None  # nothing is known of a run that did not start
    kept = sorted(x.name for x in (tmp_path / "h").iterdir())
    assert kept == ["002-kill-slave-2m-2s-sync.jsonl"] and result.outcomes[1].history is not None
    assert History.read(tmp_path / "h" / kept[0]).meta["scenario"] == "kill-slave"
    assert seen[-1] == (5, 2)
    doc = document("DrillSoak", result.to_json())
    jsonschema.validate(doc, load_schema("DrillSoak"))
    assert doc["verdict"] == FAIL


def test_keep_all_keeps_every_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(soak_mod, "run_drill", lambda s, _: drill_history(s.scenario, lost=False))
    result = run_soak(plan(1, vary=()), tmp_path, keep_all=True)
    assert result.passed and len(list(tmp_path.iterdir())) == 4


def test_a_cluster_that_could_not_bind_a_port_starts_again_higher_and_nothing_else_is_retried(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run 36 of the 20-run soak (seed 2026) never started: its slave's HA port was held by another
    process. Such a run starts again PORT_STEP ports higher; any other failure to start is a FAIL."""
    ports: list[int] = []

    def fake_drill(settings: DrillSettings, progress: object) -> History:
        ports.append(settings.base_port)
        if settings.scenario == "kill-master" and len(ports) == 1:
            raise DrillError("preset 2m-2s-sync did not come up: broker-a-s did not become ready: mq: error: "
                             "cannot listen on HA port 34056: address already in use", 3)
        if settings.scenario == "kill-slave":
            raise DrillError("preset 2m-2s-sync did not come up: broker-a: flushConsumerOffsetInterval", 3)
        return drill_history(settings.scenario, lost=False)

    monkeypatch.setattr(soak_mod, "run_drill", fake_drill)
    p = SoakPlan(("kill-master", "kill-slave"), ("2m-2s-sync",), 1, frozenset(), 7, BASE, base_port=33000)
    result = run_soak(p, tmp_path)
    assert ports == [33000, 33000 + soak_mod.PORT_STEP, 33000]
    assert [o.verdict for o in result.outcomes] == [PASS, FAIL]


def test_a_failed_runs_node_logs_are_kept_beside_its_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The drill copies its cluster's logs where the soak asks; the soak keeps them only with a kept history."""

    def fake_drill(settings: DrillSettings, progress: object) -> History:
        assert settings.keep_logs is not None
        settings.keep_logs.mkdir(parents=True)
        (settings.keep_logs / "broker-a-1.log").write_text(f"{settings.scenario} was here\n")
        return drill_history(settings.scenario, lost=settings.scenario == "kill-slave")

    monkeypatch.setattr(soak_mod, "run_drill", fake_drill)
    result = run_soak(plan(1, vary=()), tmp_path / "h")
    assert sorted(x.name for x in (tmp_path / "h").iterdir()) == [
        "002-kill-slave-2m-2s-sync.jsonl", "002-kill-slave-2m-2s-sync.logs",
        "004-kill-slave-2m-2s-async.jsonl", "004-kill-slave-2m-2s-async.logs"]
    failed = result.outcomes[1]
    assert failed.logs == str(tmp_path / "h" / "002-kill-slave-2m-2s-sync.logs")
    assert (Path(failed.logs) / "broker-a-1.log").read_text() == "kill-slave was here\n"
    assert result.outcomes[0].logs is None
    doc = document("DrillSoak", result.to_json())
    jsonschema.validate(doc, load_schema("DrillSoak"))
    assert [r["logs"] for r in doc["runs"]] == [None, failed.logs, None, result.outcomes[3].logs]
    footer = "\n".join(soak_mod.soak_view(result).footer)
    assert f"(history {failed.history}, logs {failed.logs})" in footer
