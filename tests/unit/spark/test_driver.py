"""`mq spark-load`'s driver-side checks: each mistake a ToolkitError with the exit it means, before Spark starts."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from mqtools.client.errors import ConnectFailedError, TopicNotExistError
from mqtools.common.errors import ToolkitError, UsageError
from mqtools.common.exitcodes import EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE
from mqtools.remoting.codes import ResponseCode
from mqtools.spark import driver
from mqtools.spark.offsets import OffsetSpecError, parse_spec
from mqtools.spark.stats import summarize


def test_a_produce_plan_refuses_each_bad_option() -> None:
    plan = driver.produce_plan("T", 10, None, None, 128, 2, "sync", 16, False, 0)
    assert (plan.topic, plan.messages, plan.tasks) == ("T", 10, 2)
    for args, says in [((None, None, None), "exactly one of"), ((10, None, 0.0), "--rate must be above zero"),
                       ((0, None, None), "above zero")]:
        with pytest.raises(UsageError, match=says):
            driver.produce_plan("T", *args, 128, 2, "sync", 16, False, 0)
    with pytest.raises(UsageError, match="--mode must be one of"):
        driver.produce_plan("T", 10, None, None, 128, 2, "fast", 16, False, 0)


def test_confs_remote_and_files_are_checked_before_spark(tmp_path: Path) -> None:
    assert driver.confs(["a=1", " b = two "]) == {"a": "1", "b": "two"}
    with pytest.raises(UsageError, match="key=value"):
        driver.confs(["novalue"])
    driver.check_remote(None)
    driver.check_remote("sc://host:15002")
    with pytest.raises(UsageError, match="Spark Connect URL"):
        driver.check_remote("http://host")
    local = SimpleNamespace(sparkContext=SimpleNamespace(master="local[2]"))
    assert driver.ran_on(local, None) == "local[2]"
    assert driver.ran_on(local, "sc://host:15002") == "sc://host:15002"
    driver.Files(tmp_path / "r.csv", None).check()
    with pytest.raises(UsageError, match="no such directory"):
        driver.Files(None, tmp_path / "missing" / "r.json").check()


def test_a_report_file_that_cannot_be_written_is_one_refusal(tmp_path: Path) -> None:
    files = driver.Files(tmp_path / "r.csv", None)
    (tmp_path / "r.csv").mkdir()  # a directory where the file goes
    with pytest.raises(driver.ReportFileError, match="cannot write the report file") as caught:
        files.write("produce", "T", "local[2]", summarize([], with_delay=False), None)
    assert caught.value.exit_code == EXIT_REFUSED


def test_cluster_reads_map_to_usage_and_unreachable() -> None:
    def unknown() -> int:
        raise TopicNotExistError(ResponseCode.TOPIC_NOT_EXIST, "topic[X] not exist")

    def down() -> int:
        raise ConnectFailedError("connect to 127.0.0.1:1 failed")

    with pytest.raises(UsageError, match=r"unknown topic: topic\[X\] not exist"):
        driver.cluster_call(unknown)
    with pytest.raises(ToolkitError, match="cluster unreachable: connect to") as caught:
        driver.cluster_call(down)
    assert caught.value.exit_code == EXIT_UNREACHABLE
    assert driver.cluster_call(lambda: 4) == 4


def test_an_offsets_option_names_itself_in_its_error() -> None:
    with pytest.raises(OffsetSpecError, match=r"^--from: offsets JSON is not valid JSON") as caught:
        parse_spec('{"broker-a": ', "earliest", option="--from")
    assert caught.value.exit_code == EXIT_USAGE
    with pytest.raises(OffsetSpecError, match=r"^offsets must be"):
        parse_spec("soon", "earliest")


def _job_failure(error_line: str) -> Exception:
    """A job's exception as pyspark raises it for a failed Python task: the worker's traceback as text, with the
    carets Spark's copy leaves alone on a line and a chained cause before it."""
    return Exception(
        "An exception was thrown from the Python worker:\n"
        "Traceback (most recent call last):\n"
        '  File "/x/mqtools/client/pull.py", line 80, in pull\n'
        "mqtools.client.errors.SubscriptionGroupNotExistError: CODE: 26 DESC: no group\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/x/mqtools/spark/source.py", line 126, in read\n'
        "    yield from read_batches(self.namesrv, partition.ranges, **self.read_options)\n"
        "^^^^^^^^^^^^^^^\n"
        f"{error_line}\n"
        "\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException\n")


@pytest.mark.parametrize(("line", "message", "code"), [
    ("mqtools.spark.offsets.DataLossError: T a:0: offsets 0..9 were removed (retention)",
     "a Spark task failed: T a:0: offsets 0..9 were removed (retention)", EXIT_REFUSED),
    ("mqtools.client.errors.ConnectFailedError: connect to 127.0.0.1:1 failed",
     "a Spark task failed: connect to 127.0.0.1:1 failed", EXIT_UNREACHABLE),
])
def test_a_task_failed_with_an_error_of_mq_is_its_line_and_exit_code(line: str, message: str, code: int) -> None:
    failed = driver.task_failure(_job_failure(line))
    assert isinstance(failed, driver.SparkTaskFailed) and str(failed) == message and failed.exit_code == code


@pytest.mark.parametrize("line", [
    "KeyError: 'topic'",  # a fault: its whole traceback is what to read
    "mqtools.spark.columns.ARROW_SCHEMA: not a class",
    "mqtools.no.such.module.Error: gone",
    "mqtools.common.message.Message: a class, but not an error of mq's",
    "java.lang.OutOfMemoryError: Java heap space",
])
def test_any_other_failure_is_left_whole(line: str) -> None:
    assert driver.task_failure(_job_failure(line)) is None
    assert driver.task_failure(Exception("Job aborted: executor lost")) is None


class Jvm:
    """The gateway JVM's process as pyspark keeps it (SparkContext._gateway.proc): its stdin, and a wait."""

    def __init__(self) -> None:
        self.stdin = SimpleNamespace(closed=False, close=lambda: setattr(self.stdin, "closed", True))
        self.waited: float | None = None

    def wait(self, timeout: float) -> int:
        assert self.stdin.closed, "waited for a JVM whose stdin is open: it would not exit"
        self.waited = timeout
        return 0


@pytest.mark.parametrize("remote", [None, "sc://host:15002"])
def test_the_session_it_started_ends_with_its_jvm(monkeypatch: pytest.MonkeyPatch, remote: str | None) -> None:
    """The JVM exits when its stdin closes, which the OS did only once mq had exited: it outlived the command by
    about 2 s. Its own session (not a Connect one, which has no JVM here) closes it and waits for it."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from mqtools.spark import load

    jvm = Jvm()
    stopped: list[bool] = []
    monkeypatch.setattr(driver, "check_connect", lambda _remote: None)
    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: None))
    monkeypatch.setattr(load, "spark_session", lambda *_: SimpleNamespace(stop=lambda: stopped.append(True)))
    monkeypatch.setattr(SparkContext, "_gateway", SimpleNamespace(proc=jvm))
    monkeypatch.setattr(SparkContext, "_jvm", object())
    with driver.session("local[2]", remote, {}, "app"):
        pass
    assert stopped == [True]
    if remote is None:
        assert jvm.waited is not None and SparkContext._gateway is None and SparkContext._jvm is None
    else:
        assert jvm.waited is None and not jvm.stdin.closed


def test_a_gateway_without_a_process_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark import SparkContext

    for gateway in (None, SimpleNamespace(), SimpleNamespace(proc=SimpleNamespace(stdin=None))):
        monkeypatch.setattr(SparkContext, "_gateway", gateway)
        driver.end_jvm()
