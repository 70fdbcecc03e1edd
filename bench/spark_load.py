"""`mq spark-load produce|consume` on local[2] next to the plain client in the same run; one summary line.

Starts a real `mq namesrv` + `mq broker` (ASYNC_FLUSH, bench/benchsupport.py) with bench/broker_send.py's
topic (8 queues), then measures, in this order and against the same broker:

1. the plain Producer (bench/client_produce.py's driver) with the parallelism spark-load uses: 2 processes,
   each with one sync send of a 1 KiB body in flight (spark-load's default `--mode sync` awaits each send;
   `--tasks 2` on `local[2]` gives 2 concurrent tasks);
2. `mq spark-load produce -t T --messages N --size 1024 --tasks 2 --mode sync --master local[2] -o json`,
   run as a user runs it (a subprocess of `python -m mqtools.cli.main`);
3. raw pulls: bench/client_consume.py's baseline (bench/broker_send.py's pull driver, one process, one pull
   of up to 32 messages in flight per queue, messages counted, not decoded) over the backlog 1 and 2 left;
4. `mq spark-load consume -t T --master local[2] -o json`, reading the whole topic (earliest to latest);
5. the same read twice more in one SparkSession of this process (local[2]), the second one reported as
   "warm": Python workers already started and the JVM's code paths compiled, as in a long-running
   pipeline, where step 4 is a one-off command's first job;
6. the data source's reader without Spark: TASKS threads of this process, each reading its share of the
   ranges through `mqtools.spark.reader.read_batches` (the function each read task runs), so what is
   left between this and the Spark read is Spark's own (the Python worker's hand-off, the JVM's rows);
7. Spark's own ceiling, in the same session and measured the same way: a data source that reads nothing,
   each partition yielding ready-made copies of a real batch of this topic's rows (as many rows as its
   range holds), twice, the second reported. What Spark costs per row of this schema on this machine
   (the Python worker's Arrow hand-off, the JVM's rows, the measuring pass), so the most any Python data
   source could reach here.

The spark-load figures are the report's own `msgsPerSec`: messages over the tasks' wall time (first task's
start to the last task's end, each task's producer already started), so JVM/SparkSession start-up, the
driver's checks and planning are NOT included; the subprocess's whole wall time is printed next to it for
reference. Targets: Spark produce >= 0.7x the plain producer; Spark read >= 0.5x raw pull.

Usage: .venv/bin/python bench/spark_load.py [--messages 100000] [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import broker_send
import client_produce
from benchsupport import namesrv_and_broker, run_processes, throughput

TASKS = 2
MASTER = f"local[{TASKS}]"


def spark_load(namesrv: str, *args: str, timeout: float = 300.0) -> tuple[dict, float]:
    """`mq spark-load ARGS --master local[2] -n NS -o json`: its report and the subprocess's wall seconds."""
    argv = [sys.executable, "-m", "mqtools.cli.main", "spark-load", *args, "--master", MASTER,
            "-n", namesrv, "-o", "json"]
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    t0 = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                            env={**env, "PYTHONUNBUFFERED": "1"})
    wall = time.perf_counter() - t0
    if result.returncode != 0:
        raise SystemExit(f"spark-load {args[0]} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    doc = json.loads(result.stdout)
    if doc.get("failed"):
        raise SystemExit(f"spark-load {args[0]} had failures: {doc['failed']}")
    return doc, wall


def plain_producer(namesrv: str, seconds: float) -> dict:
    """The plain Producer: TASKS processes, one sync send in flight each, for `seconds`."""
    args = (namesrv, "send", 1, seconds, 1, False)
    results = run_processes(client_produce._child, args, TASKS, timeout=seconds + 60)
    return {**throughput(results), "msgs": sum(r["msgs"] for r in results)}


def ceiling_source(sample: Any, sizes: list[int]) -> type:
    """A data source named "rocketmq-ceiling" whose partition i yields copies of `sample` (a real batch
    of the topic's rows) until it has given sizes[i] rows: no pulls, no decoding. Defined here, in
    __main__, so Spark's workers receive it by value."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from mqtools.spark.columns import SCHEMA

    class Reader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(n) for n in sizes]

        def read(self, partition: InputPartition) -> Iterator[Any]:
            left = partition.value
            while left > 0:
                batch = sample.slice(0, min(left, sample.num_rows))
                left -= batch.num_rows
                yield batch

    class Ceiling(DataSource):
        @classmethod
        def name(cls) -> str:
            return "rocketmq-ceiling"

        def schema(self) -> str:
            return SCHEMA

        def reader(self, schema: Any) -> DataSourceReader:
            return Reader()

    return Ceiling


def whole_topic(namesrv: str, topic: str) -> list[Any]:
    """The topic's ranges from earliest to latest, as the brokers hold them now."""
    from mqtools.spark.offsets import parse_spec, plan_topic

    return plan_topic(namesrv, topic, parse_spec("earliest", "earliest"), parse_spec("latest", "latest"))


def reader_alone(namesrv: str, ranges: list[Any]) -> float:
    """msgs/s of `ranges` read by read_batches in TASKS threads (the ranges dealt out in turn)."""
    import threading

    from mqtools.spark.reader import read_batches

    rows = [0] * TASKS

    def read(task: int) -> None:
        for r in ranges[task::TASKS]:
            rows[task] += sum(batch.num_rows for batch in read_batches(namesrv, [r]))

    threads = [threading.Thread(target=read, args=(task,)) for task in range(TASKS)]
    t0 = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(rows) / (time.perf_counter() - t0)


def warm_read(namesrv: str, topic: str, ranges: list[Any]) -> tuple[float, float]:
    """msgs/s of the second of two identical reads of `ranges` in one session, and of the second of two
    reads of the ceiling source with the same rows per partition, each measured as the command's report
    measures it (the tasks' wall time)."""
    from mqtools.spark import register
    from mqtools.spark.load import read_stats, run_consume, spark_session
    from mqtools.spark.reader import read_batches
    from mqtools.spark.stats import summarize

    spark = spark_session(MASTER, {}, "bench-spark-load-warm")
    try:
        register(spark)
        for _ in range(2):
            tasks = run_consume(spark, namesrv, topic, ranges)
        warm = summarize(tasks).msgs_per_s
        batches = read_batches(namesrv, [max(ranges, key=lambda r: r.size)])
        sample = next(batches)
        batches.close()
        spark.dataSource.register(ceiling_source(sample, [r.size for r in ranges]))
        for _ in range(2):
            tasks = read_stats(spark.read.format("rocketmq-ceiling").load())
        return warm, summarize(tasks).msgs_per_s
    finally:
        spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=100_000, help="Messages spark-load produces.")
    parser.add_argument("--seconds", type=float, default=5.0, help="Seconds for the plain producer and raw pulls.")
    args = parser.parse_args()
    topic = broker_send.TOPIC
    with namesrv_and_broker(topic, broker_send.QUEUES) as (namesrv, broker):
        plain = plain_producer(namesrv.addr, args.seconds)
        produced, produce_wall = spark_load(namesrv.addr, "produce", "-t", topic, "--messages", str(args.messages),
                                            "--size", str(len(broker_send.BODY)), "--tasks", str(TASKS),
                                            "--mode", "sync")
        raw = broker_send.run_case(broker.addr, "pull", broker_send.QUEUES, args.seconds, 32, 1)
        consumed, consume_wall = spark_load(namesrv.addr, "consume", "-t", topic)
        ranges = whole_topic(namesrv.addr, topic)
        warm, ceiling = warm_read(namesrv.addr, topic, ranges)
        alone = max(reader_alone(namesrv.addr, ranges) for _ in range(2))
    expected = plain["msgs"] + args.messages + 1 * TASKS  # each plain producer process sends one warm-up message
    p_ratio = produced["msgsPerSec"] / plain["msgs_s"]
    c_ratio = consumed["msgsPerSec"] / raw["msgs_s"]
    w_ratio = warm / raw["msgs_s"]
    p_ok, c_ok = p_ratio >= 0.7, c_ratio >= 0.5 and w_ratio >= 0.5
    count_note = "" if consumed["messages"] == expected else f" (expected {expected:,})"
    print(f"spark_load | produce local[{TASKS}] sync: spark {produced['msgsPerSec']:,.0f} msgs/s "
          f"({produced['messages']:,} msgs in {produced['seconds']:.2f} s, {produce_wall:.1f} s with start-up) "
          f"vs plain Producer x{TASKS} {plain['msgs_s']:,.0f} msgs/s: ratio {p_ratio:.2f} (>= 0.70 "
          f"{'met' if p_ok else 'missed'}) | read: spark {consumed['msgsPerSec']:,.0f} msgs/s "
          f"({consumed['messages']:,} msgs{count_note} in {consumed['seconds']:.2f} s, {consume_wall:.1f} s with "
          f"start-up) vs raw pull {raw['msgs_s']:,.0f} msgs/s: ratio {c_ratio:.2f}; warm (second job of a "
          f"session) {warm:,.0f} msgs/s, ratio {w_ratio:.2f} (>= 0.50 {'met' if c_ok else 'missed'}); the reader "
          f"without Spark ({TASKS} threads, best of 2) {alone:,.0f} msgs/s, ratio {alone / raw['msgs_s']:.2f}; Spark's "
          f"ceiling (a source that yields ready batches of these rows) {ceiling:,.0f} msgs/s, ratio "
          f"{ceiling / raw['msgs_s']:.2f}, warm read at {warm / ceiling:.2f} of it | "
          f"{'all targets met' if p_ok and c_ok else 'targets missed'}")


if __name__ == "__main__":
    main()
