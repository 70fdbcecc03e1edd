"""`mq spark-load produce` exits 1 when any send failed (the report printed first), so a script can tell a run whose
sends were refused from one that stored everything; it exited 0 with every send failed. No Spark: the job's pieces
are stood in for."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from support.adminsupport import json_of, mq_here

from mqtools.common.exitcodes import EXIT_OK, EXIT_REFUSED
from mqtools.spark import driver, load
from mqtools.spark.stats import TaskStats


@pytest.mark.parametrize(("failed", "code"), [({"16": 20}, EXIT_REFUSED), ({}, EXIT_OK)])
def test_produce_exits_1_when_a_send_failed(monkeypatch: pytest.MonkeyPatch, failed: dict[str, int],
                                            code: int) -> None:
    @contextmanager
    def session(*_: Any) -> Iterator[Any]:
        yield None

    sent = 0 if failed else 20
    monkeypatch.setattr(driver, "queue_count", lambda *_: 4)
    monkeypatch.setattr(driver, "session", session)
    monkeypatch.setattr(driver, "ran_on", lambda *_: "local[2]")
    monkeypatch.setattr(load, "run_produce", lambda *_: [TaskStats(0, sent, dict(failed), 0, 100.0, 100.1)])
    result = mq_here("spark-load", "produce", "-t", "RO", "--messages", "20", "-o", "json", namesrv="127.0.0.1:1")
    report = json_of(result, "SparkLoadReport", code)
    assert report["failed"] == failed and report["latencyMs"]["p50"] is None
