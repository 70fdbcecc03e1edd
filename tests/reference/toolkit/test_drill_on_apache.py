"""The kill-master drill on Apache's 2m-2s SYNC cluster, beside the same drill on mq's.

On Apache the drill runs as on any cluster elsewhere: -n, --fault-cmd SIGKILLs the master's JVM by pid,
--heal-cmd asks this test (through a FIFO) to start the same broker again with its config and store.
On mq it runs on the preset's state dir, whose faults the drill makes itself. Both reports are printed
side by side; both must PASS with nothing lost and with what the toolkit read during the fault right
(toolkitTruth: on Apache, broker-a's queues read from its slave), and `drill check` must re-judge each the
same offline.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apache
import jsonschema
import pytest
from refsupport import Clusters2m2s
from support.adminsupport import mq

from mqtools.common.presentation import load_schema

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300), pytest.mark.faults]

LOAD = ["--duration", "8", "--rate", "150", "--poll-interval", "1", "--target", "broker-a"]


@contextmanager
def heal_channel(work: Path, heal: Callable[[], None]) -> Iterator[str]:
    """A heal command for the drill: it writes a line into a FIFO this test reads, and the test heals."""
    fifo = work / "heal.fifo"
    os.mkfifo(fifo)
    errors: list[BaseException] = []

    def serve() -> None:
        while True:
            with open(fifo) as lines:
                for line in lines:
                    if line.strip() == "quit":
                        return
                    try:
                        heal()
                    except (RuntimeError, AssertionError, OSError) as exc:  # reported by the test
                        errors.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f'echo "$MQ_DRILL_ACTION" > {fifo}'
    finally:
        with open(fifo, "w") as stop:
            stop.write("quit\n")
        thread.join(120)
    assert not errors, errors


def drill(work: Path, *where: str) -> dict[str, Any]:
    history = work / "drill.jsonl"
    result = mq("admin", "drill", "run", "kill-master", *where, *LOAD, "--history", str(history), "-o", "json",
                timeout=240)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    report = json.loads(result.stdout)
    jsonschema.validate(report, load_schema("DrillReport"))
    again = mq("admin", "drill", "check", str(history), "-o", "json")
    assert {k: v for k, v in json.loads(again.stdout).items() if k != "header"} == \
        {k: v for k, v in report.items() if k != "header"}
    return report


def figures(report: dict[str, Any]) -> dict[str, Any]:
    integrity, timeline = report["integrity"], report["timeline"]
    return {"verdict": report["verdict"], "preflight": report["preflight"]["verdict"],
            "acked": integrity["acked"], "lost": integrity["lost"]["count"],
            "duplicated": integrity["duplicated"]["count"], "failed": integrity["failed"],
            "rtoSeconds": timeline["rtoSeconds"], "unavailable": timeline["unavailable"],
            "offsetRegression": integrity.get("offsetRegression"),
            "toolkitTruth": [r["ok"] for r in report["reasons"] if r["text"].startswith("toolkit read at")]}


def test_kill_master_on_apache_beside_mq(clusters_2m2s: Clusters2m2s, tmp_path: Path) -> None:
    cluster = clusters_2m2s.apache
    master = cluster.brokers["broker-a"]

    def restart() -> None:
        cluster.brokers["broker-a"] = apache.restart_broker(cluster.brokers["broker-a"])

    (tmp_path / "apache").mkdir()
    with heal_channel(tmp_path, restart) as heal_cmd:
        on_apache = drill(tmp_path / "apache", "-n", cluster.addr, "--fault-cmd", f"kill -9 {master.pid}",
                          "--heal-cmd", heal_cmd)
    assert cluster.brokers["broker-a"].alive
    (tmp_path / "mq").mkdir()
    on_mq = drill(tmp_path / "mq", "--dir", str(clusters_2m2s.mq.state))
    sides = {"Apache 4.9.7": figures(on_apache), "mq": figures(on_mq)}
    print(f"\n{'kill-master, SYNC':<18} {'Apache 4.9.7':>14} {'mq':>14}")
    for key in sides["mq"]:
        print(f"{key:<18} " + " ".join(f"{side[key]!s:>14}" for side in sides.values()))
    for name, side in sides.items():
        assert side["verdict"] == "PASS" and side["lost"] == 0, (name, side)
        assert side["toolkitTruth"] == [True], (name, side)  # topic status, group progress, ha status in the fault
