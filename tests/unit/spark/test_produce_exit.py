"""`mq spark-load produce` and `e2e` exit 1 when any send failed (the report printed first), so a script can tell a
run whose sends were refused from one that stored everything; they exited 0 with every send failed. No Spark: the
job's pieces are stood in for."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from support.adminsupport import json_of, mq_here

from mqtools.common.exitcodes import EXIT_OK, EXIT_REFUSED
from mqtools.spark import driver, e2e, load
from mqtools.spark.stats import TaskStats

OUTCOMES = pytest.mark.parametrize(("failed", "code"), [({"16": 20}, EXIT_REFUSED), ({}, EXIT_OK)])


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session that starts no Spark, on local[2]."""
    @contextmanager
    def session(*_: Any) -> Iterator[Any]:
        yield None

    monkeypatch.setattr(driver, "session", session)
    monkeypatch.setattr(driver, "ran_on", lambda *_: "local[2]")


def _producer(failed: dict[str, int]) -> TaskStats:
    return TaskStats(0, 0 if failed else 20, dict(failed), 0, 100.0, 100.1)


@OUTCOMES
@pytest.mark.usefixtures("no_spark")
def test_produce_exits_1_when_a_send_failed(monkeypatch: pytest.MonkeyPatch, failed: dict[str, int],
                                            code: int) -> None:
    monkeypatch.setattr(driver, "queue_count", lambda *_: 4)
    monkeypatch.setattr(load, "run_produce", lambda *_: [_producer(failed)])
    result = mq_here("spark-load", "produce", "-t", "RO", "--messages", "20", "-o", "json", namesrv="127.0.0.1:1")
    report = json_of(result, "SparkLoadReport", code)
    assert report["failed"] == failed and report["latencyMs"]["p50"] is None


@OUTCOMES
@pytest.mark.usefixtures("no_spark")
def test_e2e_exits_1_when_a_producers_send_failed(monkeypatch: pytest.MonkeyPatch, failed: dict[str, int],
                                                  code: int) -> None:
    readers = [TaskStats(0, 0 if failed else 20, {}, 0, 100.0, 100.2)]
    monkeypatch.setattr(driver, "read_plan", lambda *_: [])
    monkeypatch.setattr(e2e, "run_e2e", lambda *_: ([_producer(failed)], readers))
    result = mq_here("spark-load", "e2e", "-t", "RO", "--messages", "20", "-o", "json", namesrv="127.0.0.1:1")
    report = json_of(result, "SparkLoadReport", code)
    assert report["produced"]["failed"] == failed
