"""A local cluster's state dir in bad states: an unreadable or missing cluster.json (down falls back to the pid files,
sparing a pid reused by another process), a SIGSTOPped process to stop, one that outlives SIGKILL, and a start that
fails (its own log lines, not an earlier run's, and its `mq: error:` line first)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
from unit.cluster.procsupport import Procs, processes, save, state_of

from mqtools.cli.main import main
from mqtools.cluster import launcher
from mqtools.cluster import supervisor as sv
from mqtools.common.exitcodes import EXIT_REFUSED

TRUNCATED = '{"preset": "2m-2s-async", "procs": [\n'


@pytest.fixture
def procs() -> Any:
    with processes() as started:
        yield started


def test_an_unreadable_state_file_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sv.state_path(tmp_path).write_text(TRUNCATED)
    with pytest.raises(sv.ClusterStateError) as raised:
        launcher.status(tmp_path)
    assert str(sv.state_path(tmp_path)) in str(raised.value) and "\n" not in str(raised.value)
    assert main(["cluster", "status", "--dir", str(tmp_path)]) == EXIT_REFUSED
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mq: error: ") and "cluster.json" in err, err


@pytest.mark.parametrize("state_file", ["truncated", "missing"])
def test_down_without_a_readable_state_file_stops_what_the_pid_files_name(
        tmp_path: Path, procs: Procs, state_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    """broker-a is this dir's; broker-b's pid file names a pid since taken by another process, left alone."""
    ours = procs.mq_node(tmp_path, "broker-a")
    stranger = procs.other()
    (tmp_path / "broker-b").mkdir()
    sv.pid_path(tmp_path, "broker-b").write_text(f"{stranger.pid}\n")
    if state_file == "truncated":
        sv.state_path(tmp_path).write_text(TRUNCATED)
    assert main(["cluster", "down", "--dir", str(tmp_path), "--grace", "10"]) == 0
    out, err = capsys.readouterr()
    assert out == "broker-a: stopped\n"
    assert sv.alive(ours) is None
    assert stranger.poll() is None and state_of(stranger.pid) != "Z"
    assert err.count("\n") == 1 and "stopping what its pid files name" in err, err
    assert ("cluster.json is not a readable" in err) if state_file == "truncated" else ("no cluster.json" in err)


def test_up_refuses_a_dir_whose_unreadable_state_file_still_has_processes(tmp_path: Path, procs: Procs) -> None:
    procs.mq_node(tmp_path, "namesrv-0", kind="namesrv")
    sv.state_path(tmp_path).write_text(TRUNCATED)
    with pytest.raises(sv.ClusterStateError, match="may be running"):
        launcher.up(launcher.UpOptions("2m-2s-async", tmp_path))


def test_a_sigstopped_process_stops_at_sigterm_instead_of_waiting_out_the_grace(tmp_path: Path, procs: Procs) -> None:
    proc = procs.mq_node(tmp_path, "broker-a")
    os.kill(proc.pid, signal.SIGSTOP)
    assert sv.stop(proc, grace=5.0) == "stopped"  # not "killed after grace period"
    assert sv.alive(proc) is None


class Unkillable:
    """A process in uninterruptible sleep: signals are taken, nothing happens."""

    def __init__(self) -> None:
        self.signals: list[int] = []

    def send_signal(self, sig: int) -> None:
        self.signals.append(sig)

    def kill(self) -> None:
        self.signals.append(signal.SIGKILL)

    def status(self) -> str:
        return psutil.STATUS_DISK_SLEEP


def test_a_process_that_outlives_sigkill_is_reported_and_fails_the_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    ps = Unkillable()
    monkeypatch.setattr(sv, "alive", lambda proc: ps)
    monkeypatch.setattr(sv, "KILL_WAIT", 0.1, raising=False)
    proc = sv.ProcInfo("broker-a", "broker", "ASYNC_MASTER", 1, pid=4242)
    how = sv.stop(proc, grace=0.1)
    assert how.startswith("still running") and "pid 4242" in how and "disk-sleep" in how, how
    assert signal.SIGKILL in ps.signals
    save(tmp_path, proc)
    assert main(["cluster", "stop", "broker-a", "--dir", str(tmp_path), "--grace", "0.1"]) == EXIT_REFUSED
    out, err = capsys.readouterr()
    assert "broker-a: still running" in out and err == "mq: error: still running after SIGKILL: broker-a\n"


def test_a_start_that_fails_says_why_from_its_own_log_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = sv.log_path(tmp_path, "broker-a")
    log.parent.mkdir(parents=True)
    log.write_text("--- 2026-01-01 00:00:00 starting broker-a\nan earlier run's line\n"
                   "mq: error: the store is locked by another process\n")
    child = "import sys; print('loading the config'); print('mq: error: frontWorkers must be 0 to 64, not 99'); " \
            "sys.exit(2)"
    monkeypatch.setattr(sv, "mq_command", lambda: [sys.executable, "-c", child])
    proc = sv.ProcInfo("broker-a", "broker", "ASYNC_MASTER", 1, args=["broker", "start"])
    sv.spawn(tmp_path, proc)
    with pytest.raises(sv.LaunchError) as raised:
        sv.wait_ready(tmp_path, proc, 30.0)
    message = str(raised.value)
    assert message.splitlines()[0] == f"broker-a did not become ready: frontWorkers must be 0 to 64, not 99 (log {log})"
    assert "loading the config" in message
    assert "earlier run" not in message and "locked" not in message, message
