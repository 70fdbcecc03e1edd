"""`mq admin drill run` and `soak` end to end: a fresh preset cluster per drill, real signals, the verdicts.

kill-master runs through `drill run` on both presets; every scenario runs once more in the suite's short
soak (2m-2s-sync, 8 ordered keys), whose kept histories the scenario tests judge. Each drill is ~5 s of load at 100 msg/s with route refreshes every second (RocketMQ's
pollNameServerInterval, 30 s by default, would outlast the drill). The preset's cluster lives under
TMPDIR (pointed at the test's tmp dir), so the process table shows whether anything was left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from integration.drills.drillsupport import (
    CONTROLLER_SCENARIOS,
    PARTITION_SCENARIOS,
    base_port,
    leftovers,
    soak,
)
from support.adminsupport import mq, mq_here, one_line_error
from support.presetcluster import wait_for

from mqtools.common.presentation import load_schema

#: The short soak (nine scenarios, each on a cluster of its own; 114 s in CI) is set up inside the first
#: test that asks for it, so the suite's 120 s default would fail it on any machine a little slower than this one;
#: 480 s is the soak's own bound (400) and its nine `drill check`s.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(480)]

SCENARIO_NAMES = ["kill-master", "pause-master", "restart-master", "kill-slave", "kill-namesrv", "pause-namesrv",
                  "kill-proxy", "drain-master", "kill-producer-in-transaction"]
LOAD = ["--duration", "5", "--rate", "100", "--poll-interval", "1", "--set", "mappedFileSizeCommitLog=4194304"]


def drill(tmp_path: Path, scenario: str, preset: str, *extra: str) -> tuple[subprocess.CompletedProcess[str],
                                                                             dict[str, Any]]:
    """Run one drill on a fresh preset; the report (schema-checked) and the process left nothing behind."""
    history = tmp_path / f"{scenario}.jsonl"
    result = mq("admin", "drill", "run", scenario, "--preset", preset, "--base-port", str(base_port()), *LOAD,
                *extra, "--history", str(history), "-o", "json", env={"TMPDIR": str(tmp_path)}, timeout=110)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    report = json.loads(result.stdout)
    jsonschema.validate(report, load_schema("DrillReport"))
    assert report["verdict"] == ("PASS" if result.returncode == 0 else "FAIL")
    assert leftovers(tmp_path) == []
    again = mq_here("admin", "drill", "check", str(history), "-o", "json")
    assert again.returncode == result.returncode, again.stderr
    assert {k: v for k, v in json.loads(again.stdout).items() if k != "header"} == \
        {k: v for k, v in report.items() if k != "header"}
    return result, report


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A port nothing listens on: bound but not listening while the test runs, so no one else takes it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def failed_texts(report: dict[str, Any]) -> list[str]:
    return [r["text"] for r in report["reasons"] if not r["ok"]]


def moment(report: dict[str, Any], label: str) -> float | None:
    return next(m["at"] for m in report["timeline"]["moments"] if m["label"] == label)


def test_kill_master_sync_loses_nothing_and_measures_rto(short_soak: dict[str, Any]) -> None:
    """The soak's kill-master run on 2m-2s-sync (`drill run` itself: the async test below)."""
    report = soak_report(short_soak, "kill-master")
    assert report["verdict"] == "PASS", failed_texts(report)
    integrity, timeline = report["integrity"], report["timeline"]
    assert integrity["lost"]["count"] == 0 and integrity["unexpected"]["count"] == 0
    assert integrity["acked"] > 300 and integrity["consumedUnique"] >= integrity["acked"]
    assert timeline["rtoSeconds"] is not None and 0 <= timeline["rtoSeconds"] <= 10
    assert moment(report, "fault") == 0.0 and moment(report, "route dropped the master") is not None
    assert report["preflight"]["verdict"] == "safe"
    assert report["criteria"]["toolkitTruth"] is True
    truth = [r for r in report["reasons"] if r["text"].startswith("toolkit read at")]
    assert [r["ok"] for r in truth] == [True], truth  # topic status, group progress, ha status during the fault
    (history,) = [r["history"] for r in short_soak["soak"]["runs"] if r["scenario"] == "kill-master"]
    assert "Verdict: PASS" in mq_here("admin", "drill", "check", history).stdout


def test_kill_master_async_loss_is_what_the_slave_offset_explains(tmp_path: Path) -> None:
    result, report = drill(tmp_path, "kill-master", "2m-2s-async")
    loss = report["integrity"]["asyncLoss"]
    assert loss is not None and loss["slaveOffset"] > 0
    assert report["integrity"]["lost"]["count"] == loss["explained"] and loss["unexplained"] == 0
    assert result.returncode == 0, failed_texts(report)
    assert any(r["ok"] and r["text"].startswith("toolkit read at") for r in report["reasons"])


@pytest.fixture(scope="module")
def short_soak(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The suite's soak: every scenario once on 2m-2s-sync with 8 ordered keys, every history kept.

    The scenario tests below judge its runs; the soak itself must PASS as a whole.
    """
    return soak(tmp_path_factory.mktemp("soak"), "--presets", "2m-2s-sync", "--keys", "8", "--rate", "100", *LOAD)


def soak_report(short_soak: dict[str, Any], scenario: str) -> dict[str, Any]:
    report = short_soak["reports"][scenario]
    assert report["verdict"] == "PASS", failed_texts(report)
    assert report["header"]["settings"]["keys"] == 8
    return report


def test_the_short_soak_runs_every_scenario_once_and_passes(short_soak: dict[str, Any]) -> None:
    doc = short_soak["soak"]
    assert [(t["scenario"], t["runs"]) for t in doc["tally"]] == [(s, 1) for s in SCENARIO_NAMES]
    failing = {r["scenario"]: r["failing"] for r in doc["runs"] if r["verdict"] != "PASS"}
    assert short_soak["returncode"] == 0 and doc["verdict"] == "PASS", failing
    # keyed runs check order; the proxied load sends unordered
    assert all(r["orderViolations"] is not None for r in doc["runs"] if r["scenario"] != "kill-proxy")


def test_pause_master_stalls_then_recovers_without_loss(short_soak: dict[str, Any]) -> None:
    report = soak_report(short_soak, "pause-master")
    assert report["integrity"]["lost"]["count"] == 0 and report["integrity"]["order"]["violations"] == 0
    fault_for = report["header"]["settings"]["faultFor"]
    assert report["timeline"]["healAt"] - report["timeline"]["faultAt"] == pytest.approx(fault_for, abs=0.3)
    assert report["timeline"]["latencyMs"]["during"]["max"] > 500  # the stall shows as latency


def test_restart_master_serves_no_older_offsets_and_redelivers_nothing(short_soak: dict[str, Any]) -> None:
    # down longer than the consumers' 5 s offset persist interval, so they commit to the slave meanwhile
    integrity = soak_report(short_soak, "restart-master")["integrity"]
    assert integrity["offsetRegression"] is not None and integrity["offsetRegression"]["returns"] == 1
    assert integrity["offsetRegression"]["messages"] == 0, integrity["offsetRegression"]["detail"]
    assert integrity["redelivered"] == 0 and integrity["lost"]["count"] == 0


def test_kill_slave_fails_no_send(short_soak: dict[str, Any]) -> None:
    integrity = soak_report(short_soak, "kill-slave")["integrity"]
    assert integrity["failed"] == 0 and integrity["unknown"] == 0 and integrity["lost"]["count"] == 0
    assert integrity["ackedNotOk"].get("SLAVE_NOT_AVAILABLE", 0) > 0  # stored on the master alone


def test_kill_namesrv_keeps_every_send_and_the_order(short_soak: dict[str, Any]) -> None:
    report = soak_report(short_soak, "kill-namesrv")
    assert len(report["header"]["cluster"]["namesrv"]) == 2
    assert report["integrity"]["failed"] == 0 and report["integrity"]["order"]["violations"] == 0


def test_pause_namesrv_keeps_every_send_and_the_reads_right(short_soak: dict[str, Any]) -> None:
    """A hung name server: the clients and the toolkit's read that ask it wait one timeout and ask the other."""
    report = soak_report(short_soak, "pause-namesrv")
    assert len(report["header"]["cluster"]["namesrv"]) == 2
    assert report["integrity"]["failed"] == 0 and report["integrity"]["order"]["violations"] == 0
    assert report["timeline"]["healAt"] - report["timeline"]["faultAt"] == pytest.approx(
        report["header"]["settings"]["faultFor"], abs=0.3)
    assert any(r["ok"] and r["text"].startswith("toolkit read at") for r in report["reasons"])


def test_drain_master_runbook_fails_no_send_and_loses_nothing(short_soak: dict[str, Any]) -> None:
    report = soak_report(short_soak, "drain-master")
    integrity = report["integrity"]
    assert integrity["failed"] == 0 and integrity["unknown"] == 0 and integrity["lost"]["count"] == 0
    labels = [m["label"] for m in report["timeline"]["moments"] if m["at"] is not None]
    for step in ("producers left the group", "ha ready", "master stopped", "heal", "write permission back"):
        assert step in labels, labels
    assert labels.index("producers left the group") < labels.index("master stopped") < labels.index("heal")


def test_kill_proxy_moves_the_clients_to_the_other_proxy(short_soak: dict[str, Any]) -> None:
    """The gRPC clients of the proxied load start on the first of the preset's two proxies, which is SIGKILLed:
    sends and receives go on through the second, nothing acknowledged is lost."""
    report = short_soak["reports"]["kill-proxy"]
    assert report["verdict"] == "PASS", failed_texts(report)
    assert report["header"]["settings"]["keys"] == 0  # unordered, whatever --keys said
    proxies = report["header"]["target"]["proxies"]
    assert len(proxies) == 2 and moment(report, "fault") == 0.0, proxies
    integrity, latency = report["integrity"], report["timeline"]["latencyMs"]
    assert integrity["lost"]["count"] == 0 and integrity["unexpected"]["count"] == 0
    assert integrity["acked"] > 300 and integrity["consumedUnique"] >= integrity["acked"]
    # sends started after the kill and acknowledged: only the second proxy was there to do it. "after" alone
    # counts only from the return to a steady rate, which a loaded machine may not reach in the 5 s load
    assert latency["during"]["count"] + latency["after"]["count"] > 0, report["timeline"]["moments"]


def test_soak_usage_errors_are_one_line() -> None:
    one_line_error(mq_here("admin", "drill", "soak", "--scenarios", "kill-all"), 2, "unknown scenario")
    one_line_error(mq_here("admin", "drill", "soak", "--vary", "speed"), 2, "unknown --vary kind")
    one_line_error(mq_here("admin", "drill", "soak", "--presets", "9m-0s"), 2, "unknown preset")


def test_list_describes_every_scenario() -> None:
    result = mq_here("admin", "drill", "list", "-o", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, load_schema("DrillScenarioList"))
    assert [s["name"] for s in doc["scenarios"]] == SCENARIO_NAMES + CONTROLLER_SCENARIOS[1:] + PARTITION_SCENARIOS
    modes = {s["name"]: s["modes"] for s in doc["scenarios"]}
    assert modes["kill-master"] == ["classic", "controller"] and modes["restart-old-master"] == ["controller"]
    assert "drain-master" in mq_here("admin", "drill", "list").stdout


def test_an_unreachable_cluster_is_exit_3(tmp_path: Path) -> None:
    with closed_port() as port:
        result = mq_here("admin", "drill", "run", "kill-master", "-n", f"127.0.0.1:{port}", "--fault-cmd", "true",
                    env={"TMPDIR": str(tmp_path)})
    one_line_error(result, 3, "unreachable")
    assert leftovers(tmp_path) == []


def test_an_unknown_scenario_and_a_missing_state_dir_are_usage_errors(tmp_path: Path) -> None:
    one_line_error(mq_here("admin", "drill", "run", "kill-everything", "--preset", "2m-2s-sync"), 2, "unknown scenario")
    one_line_error(mq_here("admin", "drill", "run", "kill-master", "--dir", str(tmp_path / "none")), 2, "no cluster")
    one_line_error(mq_here("admin", "drill", "run", "kill-master", "--preset", "9m-0s"), 2, "unknown preset")
    one_line_error(mq_here("admin", "drill", "run", "kill-proxy", "--dir", str(tmp_path), "--proxies", "127.0.0.1:1"), 2,
                   "--proxies names the proxies of a cluster given by -n")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a history\n")
    one_line_error(mq_here("admin", "drill", "check", str(bad)), 2, "line 1")
    assert leftovers(tmp_path) == []


def test_a_preset_that_fails_to_come_up_is_exit_3_and_leaves_nothing(tmp_path: Path) -> None:
    result = mq("admin", "drill", "run", "kill-master", "--preset", "2m-2s-sync", "--base-port", str(base_port()),
                "--set", "flushConsumerOffsetInterval=0", env={"TMPDIR": str(tmp_path)}, timeout=60)
    one_line_error(result, 3, "did not come up", "flushConsumerOffsetInterval")
    assert leftovers(tmp_path) == []
    assert list(tmp_path.glob("mq-drill-*")) == []


def _paused_master(tmp_path: Path) -> int | None:
    """broker-a's pid once a drill's preset cluster under `tmp_path` has it SIGSTOPped."""
    for pid_file in tmp_path.glob("mq-drill-*/broker-a/broker-a.pid"):
        with contextlib.suppress(OSError, ValueError):
            pid = int(pid_file.read_text())
            if _state(pid) == "T":
                return pid
    return None


def _state(pid: int) -> str | None:
    """/proc/PID/stat's state letter; None once the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def test_sigterm_during_a_pause_restores_and_takes_the_preset_down_despite_a_second_one(tmp_path: Path) -> None:
    """A drill under a supervisor or a closed terminal gets SIGTERM, not Ctrl-C: it once died at once, leaving the
    master SIGSTOPped and the preset's cluster running in a temporary dir. The second SIGTERM lands in the cleanup
    (the master resumed is its first step) and must not cut it short."""
    drill = subprocess.Popen([sys.executable, "-m", "mqtools.cli.main", "admin", "drill", "run", "pause-master",
                              "--preset", "2m-2s-async", "--base-port", str(base_port()), *LOAD[:4], "--fault-at",
                              "1", "--fault-for", "60", *LOAD[4:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env={**os.environ, "TMPDIR": str(tmp_path), "PYTHONUNBUFFERED": "1"})
    try:
        pid = wait_for(lambda: _paused_master(tmp_path), 90, "broker-a paused by the drill")
        drill.send_signal(signal.SIGTERM)
        wait_for(lambda: _state(pid) != "T", 30, "broker-a resumed by the drill's cleanup", every=0.05)
        drill.send_signal(signal.SIGTERM)
        _, err = drill.communicate(timeout=90)
    finally:
        if drill.poll() is None:
            drill.kill()
            drill.communicate()
    assert drill.returncode == 1, err
    assert "interrupted: the cluster was restored as far as the drill got" in err, err
    assert leftovers(tmp_path) == []
    assert list(tmp_path.glob("mq-drill-*")) == []


def test_kill_producer_in_transaction_settles_what_the_dead_producers_left_open(short_soak: dict[str, Any]) -> None:
    report = soak_report(short_soak, "kill-producer-in-transaction")
    tx, integrity = report["transactions"], report["integrity"]
    assert tx["openLeft"] == 0 and tx["openAtKill"] > 0, tx  # the SIGKILL caught transactions in flight
    assert tx["checkedCommit"] + tx["checkedRollback"] > 0, tx  # and the next generation answered for them
    assert 0 < tx["checkBackP50S"] <= tx["checkBackMaxS"], tx  # each after its half message waited
    assert integrity["lost"]["count"] == 0 and integrity["duplicateDeliveries"] == 0
    assert integrity["failedButConsumed"]["count"] == 0 and integrity["unexpected"]["count"] == 0
    assert integrity["failed"] > 0  # rolled back: by the local transaction, or undecided when the producer died

