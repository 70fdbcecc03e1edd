"""A drill judges only faults that took effect, and says what it could not undo.

An operator's --fault-cmd or --heal-cmd that exits non-zero aborts the drill (it once counted as the fault and the
drill PASSed with RTO 0); one that exits 0 while the node goes on answering is "fault not observed". A step that
raises anything else (a master that cannot start again) aborts the drill too, with its report, instead of ending
it with no report and no history; what stays broken is named. Only what the drill paused is resumed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from unit.cluster.procsupport import Procs, processes, save, state_of

from mqtools.cli.main import main
from mqtools.cluster import supervisor as sv
from mqtools.common.exitcodes import EXIT_REFUSED
from mqtools.drills import actions as acts
from mqtools.drills import runner
from mqtools.drills.actions import CommandActions, LocalActions
from mqtools.drills.faults import DrillContext
from mqtools.drills.history import History
from mqtools.drills.load import LoadSpec
from mqtools.drills.report import build
from mqtools.drills.scenarios import SCENARIOS, Criteria, Node, Target

MASTER = Node("broker-a", "127.0.0.1:1", "ASYNC_MASTER")
SPEC = LoadSpec(10.0, 5.0, 1, 1, 64, 0)


class Schedule:
    end = 5.0


def _context(actions: Any) -> tuple[DrillContext, History]:
    history = History(meta={"scenario": "kill-master", "criteria": Criteria().to_json()})
    target = Target("broker-a", MASTER, None, "ASYNC_MASTER", None)
    start = time.monotonic()
    ctx = DrillContext(None, actions, target, history, lambda: time.monotonic() - start,  # type: ignore[arg-type]
                       topic="T", group="G", fault_for=0.0, poll_interval=1.0)
    return ctx, history


def _drill(actions: Any, scenario: str | Callable[[Any], Awaitable[None]]) -> tuple[DrillContext, History]:
    """The scenario run as the runner runs it at the fault moment; the history judged as `drill check` would."""
    ctx, history = _context(actions)
    inject = SCENARIOS[scenario].inject if isinstance(scenario, str) else scenario
    asyncio.run(runner._inject(ctx, inject, Schedule(), 0.0, SPEC))  # type: ignore[arg-type]
    if ctx.aborted:
        history.meta["aborted"] = ctx.aborted
    return ctx, history


def _failing(history: History) -> list[str]:
    report = build(history)
    assert report.verdict == "FAIL"
    return [r.text for r in report.reasons if not r.ok]


def test_a_fault_cmd_that_exits_non_zero_aborts_the_drill_and_fails_it() -> None:
    ctx, history = _drill(CommandActions("echo cannot reach host; exit 1", None), "kill-master")
    assert ctx.aborted is not None and ctx.aborted.startswith("the fault could not be applied: exit 1: cannot reach host")
    assert not [e for e in history.events if e.name == "fault"]  # nothing was done to the cluster
    assert any("the fault could not be applied: exit 1: cannot reach host" in t for t in _failing(history))


def test_a_heal_cmd_that_exits_non_zero_aborts_the_drill_and_is_left_broken() -> None:
    async def silent(node: Node) -> bool:
        return False

    actions = CommandActions("true", "echo no such unit >&2; exit 5", silent)
    ctx, _ = _drill(actions, "pause-master")
    assert ctx.aborted is not None and ctx.aborted.startswith("the heal could not be applied: exit 5: no such unit")
    assert actions.left_broken() == [f"broker-a ({MASTER.addr}) may be left as the fault left it: {ctx.aborted}"]


def test_a_fault_that_never_shows_is_not_observed_and_fails_the_drill(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(acts, "OBSERVE_TIMEOUT", 0.2)
    monkeypatch.setattr(acts, "OBSERVE_POLL", 0.01)
    asked: list[str] = []

    async def answers(node: Node) -> bool:
        asked.append(node.name)
        return True

    ctx, history = _drill(CommandActions("true", None, answers), "kill-master")
    assert ctx.aborted == f"fault not observed: broker-a ({MASTER.addr}) still answered 0.2s after `true` (kill)"
    assert [e.name for e in history.events] == ["fault", "aborted"] and asked
    assert any(t.endswith(ctx.aborted) for t in _failing(history))

    async def gone(node: Node) -> bool:
        return False

    ctx, _ = _drill(CommandActions("true", None, gone), "kill-master")
    assert ctx.aborted is None


@pytest.mark.parametrize("error", [sv.LaunchError("broker-a did not become ready: cannot listen on 0.0.0.0:32911: "
                                                  "address already in use (log /x/broker-a.log)\nearlier lines"),
                                   psutil.NoSuchProcess(4242)])
def test_a_step_that_raises_anything_else_aborts_the_drill_with_the_reason(error: Exception) -> None:
    async def scenario(ctx: Any) -> None:
        raise error

    ctx, history = _drill(CommandActions("true", None), scenario)
    expected = str(error).splitlines()[0] if isinstance(error, sv.LaunchError) else f"NoSuchProcess: {error}"
    assert ctx.aborted == expected
    assert any(t.endswith(expected) for t in _failing(history))


@pytest.fixture
def procs() -> Any:
    with processes() as started:
        yield started


def _until(what: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 20
    while not what():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_only_what_the_drill_paused_is_resumed(tmp_path: Path, procs: Procs) -> None:
    a, b = procs.mq_node(tmp_path, "broker-a"), procs.mq_node(tmp_path, "broker-b")
    save(tmp_path, a, b)
    os.kill(b.pid, signal.SIGSTOP)  # paused before the drill, by someone else
    _until(lambda: state_of(b.pid) == "T")
    local = LocalActions(tmp_path)
    asyncio.run(local.fault(Node("broker-a", "127.0.0.1:1", "ASYNC_MASTER"), signal.SIGSTOP))
    _until(lambda: state_of(a.pid) == "T")
    assert local.resume_paused() == ["SIGCONT broker-a"]
    _until(lambda: state_of(a.pid) != "T")
    assert state_of(b.pid) == "T"


def test_a_process_the_drill_could_not_start_again_is_named_and_fails_the_report(
        tmp_path: Path, procs: Procs) -> None:
    a, b = procs.mq_node(tmp_path, "broker-a"), procs.mq_node(tmp_path, "broker-b")
    save(tmp_path, a, b)
    local = LocalActions(tmp_path)
    os.kill(a.pid, signal.SIGKILL)
    _until(lambda: sv.alive(a) is None)
    history = History(meta={"scenario": "restart-master", "criteria": Criteria().to_json()})
    runner._left_broken(local, history, lambda: 1.0)
    assert history.meta["leftBroken"] == ["broker-a left down"]
    assert "the cluster was not restored: broker-a left down" in _failing(history)


def test_drill_run_writes_the_history_prints_the_report_and_names_what_is_left_broken(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    aborted = "broker-a did not become ready: cannot listen on 0.0.0.0:32911: address already in use"

    def run_drill(settings: Any, progress: Any) -> History:
        return History(meta={"scenario": "restart-master", "criteria": Criteria().to_json(), "aborted": aborted,
                             "leftBroken": ["broker-a left down"]})

    monkeypatch.setattr(runner, "run_drill", run_drill)
    kept = tmp_path / "h.jsonl"
    code = main(["admin", "drill", "run", "restart-master", "--dir", str(tmp_path), "--history", str(kept)])
    out, err = capsys.readouterr()
    assert code == EXIT_REFUSED
    assert "Verdict: FAIL" in out and aborted in out
    assert err == "mq: error: the drill left the cluster broken: broker-a left down\n"
    assert json.loads(kept.read_text().splitlines()[0])["leftBroken"] == ["broker-a left down"]
