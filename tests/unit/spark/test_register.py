"""Which Python the data source's workers run: register() decides before Spark starts one."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import pytest
from pyspark.sql import SparkSession

from mqtools.spark import _choose_worker_python


@dataclass
class Conf:
    values: dict[str, str]

    def get(self, key: str) -> str | None:
        return self.values.get(key)


@dataclass
class Context:
    master: str
    conf: dict[str, str] = field(default_factory=dict)
    pythonExec: str = "python3"  # pyspark's attribute name

    def getConf(self) -> Conf:  # pyspark's method name
        return Conf(self.conf)


def session(context: Context) -> SparkSession:
    spark = SparkSession.__new__(SparkSession)
    spark._sc = context  # what SparkSession.sparkContext returns
    return spark


def test_local_master_without_a_choice_runs_the_drivers_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    context = Context("local[2]")
    _choose_worker_python(session(context))
    assert context.pythonExec == sys.executable


def test_spark_pyspark_python_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    context = Context("local[2]", {"spark.pyspark.python": "/opt/env/bin/python"})
    _choose_worker_python(session(context))
    assert context.pythonExec == "/opt/env/bin/python"


def test_the_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", "/usr/bin/python3.12")
    context = Context("local[2]", {"spark.pyspark.python": "/opt/env/bin/python"}, "/usr/bin/python3.12")
    _choose_worker_python(session(context))
    assert context.pythonExec == "/usr/bin/python3.12"


def test_a_remote_master_keeps_sparks_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Executors elsewhere have their own paths: the driver's interpreter may not exist there."""
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    context = Context("spark://10.0.0.1:7077")
    _choose_worker_python(session(context))
    assert context.pythonExec == "python3"


def test_a_connect_session_is_left_alone() -> None:
    _choose_worker_python(object())  # no sparkContext to read: nothing is touched, nothing raised
