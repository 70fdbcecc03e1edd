"""`mq spark-load produce|consume`: load and read throughput with Spark tasks as the clients.

The same job runs embedded (`--master local[*]`) or on a cluster (`--master spark://HOST:7077`). Input
is checked on the driver before Spark starts (name server, topic, offsets, rate), so a mistake is one
line and exit 2 (3 when the cluster cannot be reached), as in `mq admin`. Nothing heavy is imported
at module level: pyspark only when a job runs.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from mqtools.cli.admin.common import (
    ContextOpt,
    NamesrvOpt,
    OutputOpt,
    TlsCaOpt,
    TlsCertOpt,
    TlsKeyOpt,
    TlsOpt,
    check_output,
    fail,
    tls_flags,
    usage,
)
from mqtools.cli.output import is_terminal, render
from mqtools.common.exitcodes import EXIT_REFUSED, EXIT_UNREACHABLE

if TYPE_CHECKING:
    from mqtools.client.contexts import Target
    from mqtools.common.security import ClientSecurity
    from mqtools.spark.load import ProducePlan
    from mqtools.spark.offsets import QueueRange
    from mqtools.spark.stats import TaskStats

app = typer.Typer(help="Load and read throughput with Spark tasks as producers and readers (needs pyspark).",
                  no_args_is_help=True)

TopicOpt = Annotated[str, typer.Option("-t", "--topic", help="The topic (it must exist).")]
MasterOpt = Annotated[str, typer.Option("--master", help="Spark master: local[*], local[2], spark://HOST:7077.")]
MessagesOpt = Annotated[Optional[int], typer.Option("--messages", help="Messages in all.")]  # noqa: UP045
DurationOpt = Annotated[Optional[float], typer.Option("--duration", help="Seconds to send for.")]  # noqa: UP045
RateOpt = Annotated[Optional[float], typer.Option("--rate", help="Target msgs/s over all tasks.")]  # noqa: UP045
SizeOpt = Annotated[int, typer.Option("--size", help="Body bytes.")]
ModeOpt = Annotated[str, typer.Option("--mode", help="sync, async or batch.")]
BatchSizeOpt = Annotated[int, typer.Option("--batch-size", help="Messages per batch in batch mode.")]
RemoteOpt = Annotated[
    Optional[str],  # noqa: UP045 - typer needs Optional
    typer.Option("--remote", help="Run on a Spark Connect server, sc://HOST:15002 (instead of --master)."),
]
ConfOpt = Annotated[
    Optional[list[str]],  # noqa: UP045 - typer needs Optional
    typer.Option("--conf", help="Spark setting k=v (repeatable), e.g. spark.executor.memory=2g."),
]
CsvOpt = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional
    typer.Option("--csv", help="Also write the report as CSV: one row per task, then the aggregate."),
]
OmbOpt = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional
    typer.Option("--omb", help="Also write OpenMessaging Benchmark's result JSON (TestResult)."),
]
CONNECT_PORT = 15002
"""Spark Connect's default port, when --remote names none."""
CONNECT_CHECK_S = 5.0
REQUIRED = (("pyspark", "pyspark>=4.2"), ("pyarrow", "pyarrow"), ("hdrh", "hdrhistogram"))
#: What pyspark's Spark Connect client needs beyond pyspark (its `connect` extra).
REQUIRED_CONNECT = (("grpc", "grpcio"), ("grpc_status", "grpcio-status"), ("google.rpc", "googleapis-common-protos"),
                    ("zstandard", "zstandard"))


def _importable(module: str) -> bool:
    """Whether `module` can be found, without importing it (pyspark takes a while)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _need_spark(remote: str | None) -> None:
    """Without the spark extra: say which packages to install, before anything else."""
    needed = REQUIRED + (REQUIRED_CONNECT if remote is not None else ())
    missing = [pkg for mod, pkg in needed if not _importable(mod)]
    if missing:
        raise usage(f"mq spark-load needs {', '.join(missing)}: pip install 'mqtools[spark]'")


def _where(master: str, remote: str | None) -> str:
    """Where the job runs, as the report names it; a --remote that is not a Spark Connect URL is bad input."""
    if remote is None:
        return master
    host, _, port = remote.removeprefix("sc://").split("/")[0].partition(":")
    if not remote.startswith("sc://") or not host or (port and not port.isdigit()):
        raise usage(f"--remote wants a Spark Connect URL like sc://HOST:15002, not {remote!r}")
    return remote


def _check_connect(remote: str) -> None:
    """Reach the Connect server's port first: pyspark's client retries an unreachable server for
    minutes before it gives up, and a person wants one line now (exit 3, as in `mq admin`)."""
    import socket

    host, _, port = remote.removeprefix("sc://").split("/")[0].partition(":")
    try:
        socket.create_connection((host, int(port or CONNECT_PORT)), timeout=CONNECT_CHECK_S).close()
    except OSError as exc:
        raise fail(f"Spark Connect server {remote} unreachable: {exc}", EXIT_UNREACHABLE) from None


@contextmanager
def _session(master: str, remote: str | None, confs: dict[str, str], app: str) -> Iterator[Any]:
    """A Spark session for one job, stopped afterwards."""
    from mqtools.spark.load import spark_session

    if remote is not None:
        _check_connect(remote)
    spark = spark_session(master, confs, app, remote)
    try:
        yield spark
    finally:
        spark.stop()


def _confs(pairs: list[str] | None) -> dict[str, str]:
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise usage(f"--conf wants key=value, not {pair!r}")
        out[key.strip()] = value.strip()
    return out


def _target(namesrv: str | None, context: str | None, tls: bool, ca: str | None, cert: str | None,
            key: str | None) -> Target:
    """Name servers and security (TLS from the flags, else the context), as `mq admin` resolves them."""
    from mqtools.client.contexts import resolve

    return resolve(namesrv, context, tls_flags(tls, ca, cert, key))


def _cluster_call(fn: Any) -> Any:
    """Run a driver-side check; an unknown topic is bad input (2), anything else as every command maps it."""
    from mqtools.client.errors import TopicNotExistError, UnreachableError

    try:
        return fn()
    except TopicNotExistError as exc:
        raise usage(f"unknown topic: {exc.remark or exc}") from None
    except UnreachableError as exc:
        raise fail(f"cluster unreachable: {exc}", EXIT_UNREACHABLE) from None


def _queues(namesrv: str, topic: str, security: ClientSecurity | None) -> int:
    from mqtools.client.admin.sync import SyncMQAdmin

    def ask() -> int:
        with SyncMQAdmin(namesrv, security=security) as admin:
            return len(admin.queue_offsets.topic_queues(topic))

    return _cluster_call(ask)


def _progress_on(output: str, remote: str | None) -> bool:
    """The progress line is for a person at a terminal: never with -o json or when stdout is a pipe;
    not over Spark Connect either, whose client has no StatusTracker."""
    return output != "json" and remote is None and is_terminal(sys.stdout)


@contextmanager
def _stored_counter(namesrv: str, topic: str, security: ClientSecurity | None, enabled: bool
                    ) -> Iterator[Callable[[], int] | None]:
    """Messages the brokers stored in `topic` since now: live progress for a produce run."""
    if not enabled:
        yield None
        return
    from mqtools.client.admin.sync import SyncMQAdmin

    with SyncMQAdmin(namesrv, security=security) as admin:
        def stored() -> int:
            return sum(high for _, high in admin.queue_offsets.queue_bounds(topic).values())

        base = stored()
        yield lambda: stored() - base


@dataclass(frozen=True, slots=True)
class Files:
    """Where the report also goes, and what OMB's result needs that the tasks do not know."""

    csv: Path | None
    omb: Path | None
    message_size: int | None = None
    partitions: int | None = None


def _check_files(files: Files) -> None:
    """A report file whose directory is missing is bad input, found before Spark starts."""
    for path in (files.csv, files.omb):
        if path is not None and not path.resolve().parent.is_dir():
            raise usage(f"no such directory for {path}: {path.resolve().parent}")


def _report(action: str, topic: str, master: str, tasks: list[TaskStats], fmt: str, with_delay: bool,
            files: Files, producers: list[TaskStats] | None = None) -> None:
    from mqtools.spark.export import omb_result, write_csv, write_omb
    from mqtools.spark.stats import load_report_view, summarize

    summary = summarize(tasks, with_delay=with_delay)
    produced = None if producers is None else summarize(producers, with_delay=with_delay)
    render(load_report_view(action, topic, master, summary, produced), fmt)
    try:
        if files.csv is not None:
            write_csv(files.csv, summary)
        if files.omb is not None:
            write_omb(files.omb, omb_result(action, topic, f"mq spark-load on {master}", summary,
                                            message_size=files.message_size, partitions=files.partitions,
                                            produced=produced))
    except OSError as exc:
        raise fail(f"cannot write the report file: {exc}", EXIT_REFUSED) from None


def _produce_plan(topic: str, messages: int | None, duration: float | None, rate: float | None, size: int,
                  tasks: int, mode: str, batch_size: int, keys: bool, tags: int) -> ProducePlan:
    """The producers' plan from the options, each mistake one line (exit 2) before Spark starts."""
    from mqtools.spark.load import MODES, ProducePlan

    if (messages is None) == (duration is None):
        raise usage("give exactly one of --messages N or --duration SECONDS")
    if (messages is not None and messages <= 0) or (duration is not None and duration <= 0):
        raise usage("--messages and --duration must be above zero")
    if rate is not None and rate <= 0:
        raise usage(f"--rate must be above zero, not {rate:g}")
    if mode not in MODES:
        raise usage(f"--mode must be one of {', '.join(MODES)}, not {mode!r}")
    if size < 0 or tasks <= 0 or batch_size <= 0 or tags < 0:
        raise usage("--size, --tags must be >= 0 and --tasks, --batch-size above zero")
    return ProducePlan(topic, messages, duration, rate, size, tasks, mode, batch_size, keys, tags)


@app.command()
def produce(
    topic: TopicOpt,
    messages: MessagesOpt = None,
    duration: DurationOpt = None,
    rate: RateOpt = None,
    size: SizeOpt = 128,
    tasks: Annotated[int, typer.Option("--tasks", help="Producing Spark tasks.")] = 2,
    mode: ModeOpt = "sync",
    batch_size: BatchSizeOpt = 16,
    keys: Annotated[bool, typer.Option("--keys", help="Give every message a key.")] = False,
    tags: Annotated[int, typer.Option("--tags", help="Spread messages over N tags (0: none).")] = 0,
    master: MasterOpt = "local[*]",
    remote: RemoteOpt = None,
    conf: ConfOpt = None,
    namesrv: NamesrvOpt = None,
    context: ContextOpt = None,
    output: OutputOpt = "table",
    csv: CsvOpt = None,
    omb: OmbOpt = None,
    tls: TlsOpt = False, tls_ca: TlsCaOpt = None, tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None,
) -> None:
    """Spark tasks as producers: throughput, latency (merged HDR histograms) and failures by code.

    With TLS (--tls-ca, or a context that has it) every task's producer connects with TLS; the CA and
    certificate files must exist at the same paths on the executors.
    """
    check_output(output)
    plan = _produce_plan(topic, messages, duration, rate, size, tasks, mode, batch_size, keys, tags)
    confs = _confs(conf)
    _check_files(Files(csv, omb))
    where = _where(master, remote)
    _need_spark(remote)
    target = _target(namesrv, context, tls, tls_ca, tls_cert, tls_key)
    addr = target.namesrv
    queues = _queues(addr, topic, target.security)

    from mqtools.spark.load import run_produce
    from mqtools.spark.progress import JobProgress

    show = _progress_on(output, remote)
    with _session(master, remote, confs, f"mq spark-load produce {topic}") as spark, \
            _stored_counter(addr, topic, target.security, show) as counter, \
            JobProgress(spark, tasks, counter, show, f"produce {topic}"):
        stats = run_produce(spark, addr, plan, target.security)
    _report("produce", topic, where, stats, output, rate is not None, Files(csv, omb, size, queues))


def _plan(addr: str, topic: str, start: str, until: str, security: ClientSecurity | None) -> list[QueueRange]:
    from mqtools.spark.load import limit_ranges
    from mqtools.spark.offsets import OffsetSpecError, parse_spec, plan_topic

    limit = None
    if until.strip().isdigit():
        limit, until = int(until), "latest"
    elif until.strip().lower() != "latest":
        raise usage(f"--until must be latest or a number of messages, not {until!r}")
    try:
        spec = parse_spec(start, "earliest")
    except OffsetSpecError as exc:
        raise usage(f"--from: {exc}") from None
    ranges = _cluster_call(lambda: plan_topic(addr, topic, spec, parse_spec("latest", "latest"),
                                              fail_on_data_loss=False, security=security))
    return limit_ranges(ranges, limit)


@app.command()
def consume(
    topic: TopicOpt,
    start: Annotated[str, typer.Option("--from", help="earliest, latest, offsets JSON, or a time (epoch ms, "
                                                      "ISO-8601).")] = "earliest",
    until: Annotated[str, typer.Option("--until", help="latest (the end now) or N messages.")] = "latest",
    partitions: Annotated[Optional[int], typer.Option("--min-partitions", help="Split queues into at least N "  # noqa: UP045
                                                                               "read tasks.", min=1)] = None,
    master: MasterOpt = "local[*]",
    remote: RemoteOpt = None,
    conf: ConfOpt = None,
    namesrv: NamesrvOpt = None,
    context: ContextOpt = None,
    output: OutputOpt = "table",
    csv: CsvOpt = None,
    omb: OmbOpt = None,
    tls: TlsOpt = False, tls_ca: TlsCaOpt = None, tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None,
) -> None:
    """The data source's read throughput, and end-to-end latency from each message's born time.

    TLS as for produce: the data source gets it through its tls options (README, Spark section).
    """
    check_output(output)
    confs = _confs(conf)
    _check_files(Files(csv, omb))
    where = _where(master, remote)
    _need_spark(remote)
    target = _target(namesrv, context, tls, tls_ca, tls_cert, tls_key)
    addr = target.namesrv
    ranges = _plan(addr, topic, start, until, target.security)

    from mqtools.spark.load import run_consume
    from mqtools.spark.offsets import split_ranges
    from mqtools.spark.progress import JobProgress

    reads = len(split_ranges(ranges, partitions))  # the read tasks the data source will plan from these ranges
    with _session(master, remote, confs, f"mq spark-load consume {topic}") as spark, \
            JobProgress(spark, reads, None, _progress_on(output, remote), f"consume {topic}"):
        stats = run_consume(spark, addr, topic, ranges, partitions, target.security)
    queues = len({(r.broker, r.queue_id) for r in ranges})
    _report("consume", topic, where, stats, output, False, Files(csv, omb, None, queues))


@app.command()
def e2e(
    topic: TopicOpt,
    messages: MessagesOpt = None,
    duration: DurationOpt = None,
    rate: RateOpt = None,
    size: SizeOpt = 128,
    tasks: Annotated[int, typer.Option("--tasks", help="Producing Spark tasks (leave cores for the readers).")] = 1,
    mode: ModeOpt = "sync",
    batch_size: BatchSizeOpt = 16,
    drain: Annotated[float, typer.Option("--drain", help="Seconds the stream may take to read the rest after "
                                                         "the producers end.", min=0)] = 30.0,
    master: MasterOpt = "local[*]",
    conf: ConfOpt = None,
    namesrv: NamesrvOpt = None,
    context: ContextOpt = None,
    output: OutputOpt = "table",
    csv: CsvOpt = None,
    omb: OmbOpt = None,
    tls: TlsOpt = False, tls_ca: TlsCaOpt = None, tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None,
) -> None:
    """Produce and read at once: end-to-end latency (born to read) under load, from a streaming query.

    The producers take --tasks cores for their whole run; the stream's micro-batches need the rest (on
    local[N], N above --tasks). The rows are the reading tasks; the producers' figures follow.
    """
    check_output(output)
    plan = _produce_plan(topic, messages, duration, rate, size, tasks, mode, batch_size, False, 0)
    confs = _confs(conf)
    _check_files(Files(csv, omb))
    _need_spark(None)
    target = _target(namesrv, context, tls, tls_ca, tls_cert, tls_key)
    addr = target.namesrv
    start = _plan(addr, topic, "latest", "latest", target.security)

    from mqtools.spark.e2e import run_e2e

    with _session(master, None, confs, f"mq spark-load e2e {topic}") as spark:
        producers, readers = run_e2e(spark, addr, plan, start, drain, target.security)
    queues = len({(r.broker, r.queue_id) for r in start})
    _report("e2e", topic, master, readers, output, rate is not None, Files(csv, omb, size, queues), producers)
