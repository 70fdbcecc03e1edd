"""Drills on clusters mq did not start: the heal channel a drill's --heal-cmd writes to, one drill run
judged and re-judged offline, and the figures two sides are compared by."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jsonschema
from support.adminsupport import mq

from mqtools.common.presentation import load_schema

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


def drill(work: Path, *where: str, scenario: str = "kill-master", load: list[str] = LOAD) -> dict[str, Any]:
    """`mq admin drill run SCENARIO` at `where` under `load`: its report, valid, and `drill check` of its history
    judging the same."""
    history = work / "drill.jsonl"
    result = mq("admin", "drill", "run", scenario, *where, *load, "--history", str(history), "-o", "json",
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
