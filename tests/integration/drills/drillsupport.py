"""What the drill tests share: ports, the process-table check, one soak run with every report judged again."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import psutil
from support.adminsupport import mq, mq_here
from support.ports import random_base_port

from mqtools.common.presentation import load_schema
from mqtools.server.loop_watch import NOT_SCHEDULED

CONTROLLER_SCENARIOS = ["kill-master", "restart-old-master", "kill-controller-leader",
                        "kill-master-and-controller-leader"]

PARTITION_SCENARIOS = ["partition-master", "partition-controller-leader", "flaky-link"]


def base_port() -> int:
    """A random high base so that parallel runs and real RocketMQ defaults do not collide."""
    return random_base_port()


def leftovers(tmp_path: Path) -> list[str]:
    """Processes whose command line mentions the test's tmp dir (a preset cluster lives there)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
            if str(tmp_path) in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(cmdline)
        except psutil.Error:
            continue
    return found



def starved(done: dict[str, Any]) -> list[str]:
    """The LoopWatch lines of the runs' node logs saying the machine did not run a node for a second or more (no
    SIGSTOP in the partition drills: a 2-core machine running the suite's other workers beside them): a failover
    the controllers then make, a node's heartbeats having stopped, is the machine's doing, not mq's."""
    lines = []
    for run in done["soak"]["runs"]:
        if run.get("logs"):
            for log in sorted(Path(run["logs"]).glob("*.log")):
                lines += [f"{log.stem}: {line}" for line in log.read_text(errors="replace").splitlines()
                          if NOT_SCHEDULED in line]
    return lines


def rerun_while_starved(run: Callable[[int], dict[str, Any]], passed: Callable[[dict[str, Any]], bool],
                        runs: int) -> dict[str, Any]:
    """`run(n)` for n = 1.. until one `passed`, one failed with no node starved (`starved`), or `runs` were made; the
    last made. A run that failed with a node starved says so in a warning: its failover timings were the machine's."""
    done = run(1)
    for n in range(2, runs + 1):
        hungry = [] if passed(done) else starved(done)
        if not hungry:
            break
        warnings.warn(f"drills run again, the machine having starved a node: {hungry[0]}", stacklevel=2)
        done = run(n)
    return done


def soak(tmp: Path, *args: str) -> dict[str, Any]:
    """`mq admin drill soak ARGS`, one run per scenario, every history kept and judged again by `drill check`."""
    result = mq("admin", "drill", "soak", "--runs", "1", "--vary", "none", "--base-port", str(base_port()), *args,
                "--history-dir", str(tmp / "histories"), "--keep-all", "-o", "json", env={"TMPDIR": str(tmp)},
                timeout=400)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, load_schema("DrillSoak"))
    assert leftovers(tmp) == []
    reports = {}
    for run in doc["runs"]:
        again = mq_here("admin", "drill", "check", run["history"], "-o", "json")
        assert again.returncode == (0 if run["verdict"] == "PASS" else 1), again.stderr
        reports[run["scenario"]] = json.loads(again.stdout)
        jsonschema.validate(reports[run["scenario"]], load_schema("DrillReport"))
    return {"soak": doc, "returncode": result.returncode, "reports": reports}
