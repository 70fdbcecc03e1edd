"""What `mq spark-load` does on the driver around a job: the input checked before Spark starts (each mistake
a UsageError, one line and exit 2), the plan read from the cluster (an unknown topic is bad input, a cluster
that does not answer exit 3), the Spark session, a task's failure with one of mq's own errors (one line, that
error's exit code), and the report files written afterwards.

Nothing heavy is imported at module level: pyspark only when a session starts.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from mqtools.common.errors import ToolkitError, UsageError
from mqtools.common.exitcodes import EXIT_UNREACHABLE
from mqtools.common.validation import ValidationError, check_group

if TYPE_CHECKING:
    from mqtools.common.security import ClientSecurity
    from mqtools.spark.load import ProducePlan
    from mqtools.spark.offsets import QueueRange
    from mqtools.spark.stats import Summary

T = TypeVar("T")

CONNECT_PORT = 15002
"""Spark Connect's default port, when --remote names none."""
CONNECT_CHECK_S = 5.0
JVM_EXIT_S = 10.0
"""How long the command waits for the JVM of its own session to exit once its stdin is closed."""
REQUIRED = (("pyspark", "pyspark>=4.2"), ("pyarrow", "pyarrow"), ("hdrh", "hdrhistogram"))
#: What pyspark's Spark Connect client needs beyond pyspark (its `connect` extra).
REQUIRED_CONNECT = (("grpc", "grpcio"), ("grpc_status", "grpcio-status"), ("google.rpc", "googleapis-common-protos"),
                    ("zstandard", "zstandard"))


class SparkConnectUnreachable(ToolkitError):
    """The Spark Connect server's port does not answer (exit 3, as an unreachable cluster)."""

    exit_code = EXIT_UNREACHABLE


class ClusterUnreachable(ToolkitError):
    """The RocketMQ cluster did not answer the driver's planning request."""

    exit_code = EXIT_UNREACHABLE


class SparkTaskFailed(ToolkitError):
    """A Spark task of the job failed with one of mq's own errors (a group the broker lacks, offsets removed by
    retention, a broker that did not answer): that error's line and exit code, not Spark's pages about it."""


class ReportFileError(ToolkitError):
    """A report file (--csv, --omb) could not be written after the job ran."""


def importable(module: str) -> bool:
    """Whether `module` can be found, without importing it (pyspark takes a while)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def need_spark(remote: str | None) -> None:
    """Without the spark extra: say which packages to install, before anything else."""
    needed = REQUIRED + (REQUIRED_CONNECT if remote is not None else ())
    missing = [pkg for mod, pkg in needed if not importable(mod)]
    if missing:
        raise UsageError(f"mq spark-load needs {', '.join(missing)}: pip install 'mqtools[spark]'")


def check_group_name(group: str) -> None:
    """A --group RocketMQ would refuse is bad input, said before Spark starts."""
    try:
        check_group(group)
    except ValidationError as exc:
        raise UsageError(f"--group: {exc}") from None


def check_remote(remote: str | None) -> None:
    """A --remote that is not a Spark Connect URL is bad input, said before Spark starts."""
    if remote is None:
        return
    host, _, port = remote.removeprefix("sc://").split("/")[0].partition(":")
    if not remote.startswith("sc://") or not host or (port and not port.isdigit()):
        raise UsageError(f"--remote wants a Spark Connect URL like sc://HOST:15002, not {remote!r}")


def check_connect(remote: str) -> None:
    """Reach the Connect server's port first: pyspark's client retries an unreachable server for
    minutes before it gives up, and a person wants one line now (exit 3, as in `mq admin`)."""
    import socket

    host, _, port = remote.removeprefix("sc://").split("/")[0].partition(":")
    try:
        socket.create_connection((host, int(port or CONNECT_PORT)), timeout=CONNECT_CHECK_S).close()
    except OSError as exc:
        raise SparkConnectUnreachable(f"Spark Connect server {remote} unreachable: {exc}") from None


@contextmanager
def session(master: str, remote: str | None, confs: dict[str, str], app: str) -> Iterator[Any]:
    """A Spark session for one job, stopped afterwards, unless this process already runs one (a notebook,
    a test session): that one is used, on its own master, and left running for its owner."""
    from mqtools.spark.load import spark_session

    if remote is not None:
        check_connect(remote)
    running = None
    if remote is None:
        from pyspark.sql import SparkSession

        running = SparkSession.getActiveSession()
    spark = spark_session(master, confs, app, remote)
    try:
        yield spark
    except Exception as exc:
        failed = task_failure(exc)
        if failed is None:
            raise
        raise failed from None
    finally:
        if running is None:
            try:
                spark.stop()
            finally:
                if remote is None:
                    end_jvm()


def end_jvm(timeout: float = JVM_EXIT_S) -> None:
    """End the gateway JVM a stopped session leaves: it exits when its stdin closes, which the OS did only once this
    process had exited, so it outlived `mq spark-load` by about 2 s (with its memory and /tmp/spark-* files). Closed
    here, it is gone in 0.1-0.5 s. pyspark's gateway is forgotten too, so a later session in this process starts a
    JVM of its own instead of calling the dead one. A gateway without the process (another pyspark) is left alone."""
    import subprocess

    from pyspark import SparkContext

    proc = getattr(getattr(SparkContext, "_gateway", None), "proc", None)
    stdin = getattr(proc, "stdin", None)
    if proc is None or stdin is None:
        return
    try:
        stdin.close()
        proc.wait(timeout)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return
    SparkContext._gateway = None
    SparkContext._jvm = None


_TRACEBACK = "Traceback (most recent call last):"


def worker_exception(text: str) -> tuple[str, str] | None:
    """The dotted class name and first message line of the exception the last Python traceback in `text` ends
    with: Spark puts a failed Python worker's traceback into the job's exception as text, the exception itself
    stays in the worker (its frames and carets indented, or carets alone on a line, in Spark's copy)."""
    at = text.rfind(_TRACEBACK)
    if at < 0:
        return None
    for line in text[at + len(_TRACEBACK):].splitlines():
        if not line.strip() or line[0].isspace() or not line.strip("^~ "):
            continue
        name, sep, message = line.partition(": ")
        if sep and all(part.isidentifier() for part in name.split(".")):
            return name, message.strip()
        return None
    return None


def task_failure(exc: BaseException) -> SparkTaskFailed | None:
    """A job's failure as one line when a task failed with a ToolkitError of mq's (its message already says what
    happened and what to do, and its class the exit code); None for anything else, a fault whose whole
    traceback is the thing to read."""
    found = worker_exception(str(exc))
    if found is None:
        return None
    name, message = found
    module, _, cls_name = name.rpartition(".")
    if module.split(".")[0] != "mqtools":
        return None
    try:
        cls = getattr(importlib.import_module(module), cls_name)
    except (ImportError, AttributeError):
        return None
    if not (isinstance(cls, type) and issubclass(cls, ToolkitError)):
        return None
    failed = SparkTaskFailed(f"a Spark task failed: {message}")
    failed.exit_code = cls.exit_code
    return failed


def ran_on(spark: Any, remote: str | None) -> str:
    """Where the job ran, as the report names it: the Connect URL, or the session's master (a session
    this process already ran keeps its own, whatever --master said)."""
    return remote if remote is not None else str(spark.sparkContext.master)


def confs(pairs: list[str] | None) -> dict[str, str]:
    """--conf key=value pairs."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--conf wants key=value, not {pair!r}")
        out[key.strip()] = value.strip()
    return out


def cluster_call(fn: Callable[[], T]) -> T:
    """Run a driver-side read of the cluster: an unknown topic is bad input (exit 2), no answer exit 3."""
    from mqtools.client.errors import TopicNotExistError, UnreachableError

    try:
        return fn()
    except TopicNotExistError as exc:
        raise UsageError(f"unknown topic: {exc.remark or exc}") from None
    except UnreachableError as exc:
        raise ClusterUnreachable(f"cluster unreachable: {exc}") from None


def queue_count(namesrv: str, topic: str, security: ClientSecurity | None) -> int:
    """How many queues the topic has over its brokers (OMB's partitions)."""
    from mqtools.client.admin.sync import SyncMQAdmin

    def ask() -> int:
        with SyncMQAdmin(namesrv, security=security) as admin:
            return len(admin.queue_offsets.topic_queues(topic))

    return cluster_call(ask)


@contextmanager
def stored_counter(namesrv: str, topic: str, security: ClientSecurity | None, enabled: bool
                   ) -> Iterator[Callable[[], int | None] | None]:
    """Messages the brokers stored in `topic` since now: live progress for a produce run (StoredCounter: each queue
    from its own first answer, read in the background, so a hung master costs the job neither its start nor its
    end; n/a while a counted queue does not answer; never going down). None when the progress line is off."""
    if not enabled:
        yield None
        return
    from mqtools.spark.progress import StoredCounter

    with StoredCounter(namesrv, topic, security) as counter:
        yield counter


@dataclass(frozen=True, slots=True)
class Files:
    """Where the report also goes, and what OMB's result needs that the tasks do not know."""

    csv: Path | None
    omb: Path | None
    message_size: int | None = None
    partitions: int | None = None

    def check(self) -> None:
        """A report file whose directory is missing is bad input, found before Spark starts."""
        for path in (self.csv, self.omb):
            if path is not None and not path.resolve().parent.is_dir():
                raise UsageError(f"no such directory for {path}: {path.resolve().parent}")

    def write(self, action: str, topic: str, master: str, summary: Summary, produced: Summary | None) -> None:
        from mqtools.spark.export import omb_result, write_csv, write_omb

        try:
            if self.csv is not None:
                write_csv(self.csv, summary)
            if self.omb is not None:
                write_omb(self.omb, omb_result(action, topic, f"mq spark-load on {master}", summary,
                                               message_size=self.message_size, partitions=self.partitions,
                                               produced=produced))
        except OSError as exc:
            raise ReportFileError(f"cannot write the report file: {exc}") from None


def produce_plan(topic: str, messages: int | None, duration: float | None, rate: float | None, size: int,
                 tasks: int, mode: str, batch_size: int, keys: bool, tags: int) -> ProducePlan:
    """The producers' plan from the options, each mistake one line (exit 2) before Spark starts."""
    from mqtools.spark.load import MODES, ProducePlan

    if (messages is None) == (duration is None):
        raise UsageError("give exactly one of --messages N or --duration SECONDS")
    if (messages is not None and messages <= 0) or (duration is not None and duration <= 0):
        raise UsageError("--messages and --duration must be above zero")
    if rate is not None and rate <= 0:
        raise UsageError(f"--rate must be above zero, not {rate:g}")
    if mode not in MODES:
        raise UsageError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}")
    if size < 0 or tasks <= 0 or batch_size <= 0 or tags < 0:
        raise UsageError("--size, --tags must be >= 0 and --tasks, --batch-size above zero")
    return ProducePlan(topic, messages, duration, rate, size, tasks, mode, batch_size, keys, tags)


def read_plan(addr: str, topic: str, start: str, until: str, security: ClientSecurity | None) -> list[QueueRange]:
    """The queue ranges a read takes: from --from to the end now, or to N messages (--until)."""
    from mqtools.spark.load import limit_ranges
    from mqtools.spark.offsets import parse_spec, plan_topic

    limit = None
    if until.strip().isdigit():
        limit, until = int(until), "latest"
    elif until.strip().lower() != "latest":
        raise UsageError(f"--until must be latest or a number of messages, not {until!r}")
    spec = parse_spec(start, "earliest", option="--from")
    ranges = cluster_call(lambda: plan_topic(addr, topic, spec, parse_spec("latest", "latest"),
                                             fail_on_data_loss=False, security=security))
    return limit_ranges(ranges, limit)
