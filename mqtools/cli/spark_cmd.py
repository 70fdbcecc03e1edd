"""`mq spark-load produce|consume`: load and read throughput with Spark tasks as the clients.

The same job runs embedded (`--master local[*]`) or on a cluster (`--master spark://HOST:7077`). Input
is checked on the driver before Spark starts (name server, topic, offsets, rate), so a mistake is one
line and exit 2 (3 when the cluster cannot be reached), as in `mq admin` (mqtools.spark.driver: the checks,
the plan, the session and the report files). Nothing heavy is imported at module level: pyspark only when a
job runs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import NO_OPTIONS, ClusterOptions, OutputOpt, check_output, cluster_command
from mqtools.cli.output import is_terminal, render
from mqtools.common.exitcodes import EXIT_REFUSED
from mqtools.spark import driver
from mqtools.spark.offsets import READER_GROUP

if TYPE_CHECKING:
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
ReaderGroupOpt = Annotated[str, typer.Option("--group", "-g", help="Consumer group the read pulls as (it commits "
                                                                  "nothing); a broker that does not create groups "
                                                                  "must have it.")]
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
def _progress_on(output: str, remote: str | None) -> bool:
    """The progress line is for a person at a terminal: never with -o json or when stdout is a pipe;
    not over Spark Connect either, whose client has no StatusTracker."""
    return output != "json" and remote is None and is_terminal(sys.stdout)


def _report(action: str, topic: str, master: str, tasks: list[TaskStats], fmt: str, with_delay: bool,
            files: driver.Files, producers: list[TaskStats] | None = None) -> None:
    from mqtools.spark.stats import load_report_view, summarize

    summary = summarize(tasks, with_delay=with_delay)
    produced = None if producers is None else summarize(producers, with_delay=with_delay)
    render(load_report_view(action, topic, master, summary, produced), fmt)
    files.write(action, topic, master, summary, produced)


@app.command()
@cluster_command
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
    where: ClusterOptions = NO_OPTIONS,
    output: OutputOpt = "table",
    csv: CsvOpt = None,
    omb: OmbOpt = None,
) -> None:
    """Spark tasks as producers: throughput, latency (merged HDR histograms) and failures by code.

    With TLS (--tls-ca, or a context that has it) every task's producer connects with TLS; the CA and
    certificate files must exist at the same paths on the executors.

    Exit codes: 0 every send stored; 1 a send failed (the report, printed first, counts them by code) or a task
    failed with one of mq's errors; 2 bad input; 3 the cluster or Spark Connect server unreachable.
    """
    check_output(output)
    plan = driver.produce_plan(topic, messages, duration, rate, size, tasks, mode, batch_size, keys, tags)
    confs = driver.confs(conf)
    driver.Files(csv, omb).check()
    driver.check_remote(remote)
    driver.need_spark(remote)
    target = where.resolve()
    addr = target.namesrv
    queues = driver.queue_count(addr, topic, target.security)

    from mqtools.spark.load import run_produce
    from mqtools.spark.progress import JobProgress

    show = _progress_on(output, remote)
    with driver.session(master, remote, confs, f"mq spark-load produce {topic}") as spark, \
            driver.stored_counter(addr, topic, target.security, show) as counter, \
            JobProgress(spark, tasks, counter, show, f"produce {topic}"):
        stats = run_produce(spark, addr, plan, target.security)
        ran_on = driver.ran_on(spark, remote)
    _report("produce", topic, ran_on, stats, output, rate is not None, driver.Files(csv, omb, size, queues))
    _exit_if_sends_failed(stats)


@app.command()
@cluster_command
def consume(
    topic: TopicOpt,
    start: Annotated[str, typer.Option("--from", help="earliest, latest, offsets JSON, or a time (epoch ms, "
                                                      "ISO-8601).")] = "earliest",
    until: Annotated[str, typer.Option("--until", help="latest (the end now) or N messages.")] = "latest",
    partitions: Annotated[Optional[int], typer.Option("--min-partitions", help="Split queues into at least N "  # noqa: UP045
                                                                               "read tasks.", min=1)] = None,
    group: ReaderGroupOpt = READER_GROUP,
    master: MasterOpt = "local[*]",
    remote: RemoteOpt = None,
    conf: ConfOpt = None,
    where: ClusterOptions = NO_OPTIONS,
    output: OutputOpt = "table",
    csv: CsvOpt = None,
    omb: OmbOpt = None,
) -> None:
    """The data source's read throughput, and end-to-end latency from each message's born time.

    TLS as for produce: the data source gets it through its tls options (README, Spark section).
    """
    check_output(output)
    confs = driver.confs(conf)
    driver.Files(csv, omb).check()
    driver.check_remote(remote)
    driver.check_group_name(group)
    driver.need_spark(remote)
    target = where.resolve()
    addr = target.namesrv
    ranges = driver.read_plan(addr, topic, start, until, target.security)

    from mqtools.spark.load import run_consume
    from mqtools.spark.offsets import task_ranges
    from mqtools.spark.progress import JobProgress

    reads = len(task_ranges(ranges, partitions))  # the read tasks the data source will plan from these ranges
    with driver.session(master, remote, confs, f"mq spark-load consume {topic}") as spark, \
            JobProgress(spark, reads, None, _progress_on(output, remote), f"consume {topic}"):
        stats = run_consume(spark, addr, topic, ranges, partitions, target.security, group)
        ran_on = driver.ran_on(spark, remote)
    queues = len({(r.broker, r.queue_id) for r in ranges})
    _report("consume", topic, ran_on, stats, output, False, driver.Files(csv, omb, None, queues))


@app.command()
@cluster_command
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
    group: ReaderGroupOpt = READER_GROUP,
    master: MasterOpt = "local[*]",
    conf: ConfOpt = None,
    where: ClusterOptions = NO_OPTIONS,
    output: OutputOpt = "table",
    csv: CsvOpt = None,
    omb: OmbOpt = None,
) -> None:
    """Produce and read at once: end-to-end latency (born to read) under load, from a streaming query.

    The producers take --tasks cores for their whole run; the stream's micro-batches need the rest (on
    local[N], N above --tasks). The rows are the reading tasks; the producers' figures follow.

    Exit codes as for produce: 1 when a send failed (the producers' figures count them by code).
    """
    check_output(output)
    plan = driver.produce_plan(topic, messages, duration, rate, size, tasks, mode, batch_size, False, 0)
    confs = driver.confs(conf)
    driver.Files(csv, omb).check()
    driver.check_group_name(group)
    driver.need_spark(None)
    target = where.resolve()
    addr = target.namesrv
    start = driver.read_plan(addr, topic, "latest", "latest", target.security)

    from mqtools.spark.e2e import run_e2e

    with driver.session(master, None, confs, f"mq spark-load e2e {topic}") as spark:
        producers, readers = run_e2e(spark, addr, plan, start, drain, target.security, group)
        ran_on = driver.ran_on(spark, None)
    queues = len({(r.broker, r.queue_id) for r in start})
    _report("e2e", topic, ran_on, readers, output, rate is not None, driver.Files(csv, omb, size, queues), producers)
    _exit_if_sends_failed(producers)


def _exit_if_sends_failed(producers: list[TaskStats]) -> None:
    """The load did not all land: a script must see it without reading the report."""
    if any(t.failed for t in producers):
        raise typer.Exit(EXIT_REFUSED)
