"""The `rocketmq` Spark data source against what a pipeline would use instead: Spark's own Kafka source and
sink on a one-node Apache Kafka, in one run and one SparkSession (local[2]).

Kafka (KRaft, one combined broker and controller, 8 partitions per topic) and Spark's Kafka connector are
fetched by package name with Maven into the reference cache (`$MQ_REFERENCE_CACHE`, once; the connector
is the newest one served for this Spark, named in the output) and started by the bench, removed after. mq
is `mq namesrv` + `mq broker` (ASYNC_FLUSH) with a topic of 8 queues. The same --messages 1 KiB rows, in
this order on each side:

  write   df.write.format("kafka") / .format("rocketmq") of a DataFrame of --messages rows (2 partitions),
          wall time of the save
  read    a batch read of the whole topic, earliest to latest, summing the value's (body's) length, so every
          row's bytes reach Spark; run twice, the second ("warm") reported, the first shown
  stream  a streaming read with maxOffsetsPerTrigger (a tenth of the topic) to the noop sink with
          trigger(availableNow): wall time until every micro-batch is done

Targets (the issue's): rocketmq >= 1.0x Kafka for the batch read, the streaming read and the write.

Usage: .venv/bin/python bench/spark_kafka.py [--messages 200000]
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "reference"))

from benchsupport import namesrv_and_broker
from fetch import ArtifactSet, fetch

POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"
KAFKA_VERSION = "4.1.1"
#: Spark's Kafka connector: the installed Spark is 4.3, whose connector the registry does not serve; the
#: newest served one (4.2) runs on it.
CONNECTOR_VERSION = "4.2.0"
#: The connector's own jars and the Kafka client it needs; the rest of its dependencies are Spark's own.
CONNECTOR_JARS = ("spark-sql-kafka-0-10", "spark-token-provider-kafka-0-10", "kafka-clients", "commons-pool2")
KAFKA = ArtifactSet(f"kafka-{KAFKA_VERSION}", POM, ("-Pserver", f"-Dkafka.version={KAFKA_VERSION}"))
CONNECTOR = ArtifactSet(f"spark-kafka-{CONNECTOR_VERSION}", POM, ("-Pconnector", f"-Dspark.version={CONNECTOR_VERSION}"))
TASKS = 2
MASTER = f"local[{TASKS}]"
QUEUES = 8
BODY = 1024


def note(msg: str) -> None:
    print(f"[spark_kafka {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def free_port() -> int:
    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def kafka(root: Path) -> Iterator[str]:
    """A one-node KRaft Kafka on free ports: its bootstrap address; killed and its logs removed on exit."""
    port, controller = free_port(), free_port()
    props = root / "server.properties"
    props.write_text("\n".join([
        "process.roles=broker,controller", "node.id=1", f"controller.quorum.voters=1@127.0.0.1:{controller}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}", "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT", f"log.dirs={root / 'data'}",
        f"num.partitions={QUEUES}", "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1", "group.initial.rebalance.delay.ms=0", "auto.create.topics.enable=true",
    ]) + "\n")
    java = ["java", "-Xms1g", "-Xmx1g", "-XX:+UseG1GC", f"-Dkafka.logs.dir={root / 'logs'}", "-cp", f"{KAFKA.lib}/*"]
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    subprocess.run([*java, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(props)],
                   check=True, capture_output=True, timeout=120)
    with open(root / "kafka.out", "wb") as out:
        proc = subprocess.Popen([*java, "kafka.Kafka", str(props)], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"spark_kafka: Kafka did not start:\n{(root / 'kafka.out').read_text()[-3000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait(30)


def timed(action: Callable[[], Any]) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def rows(spark: Any, n: int) -> Any:
    """n rows of a string key and a 1 KiB binary value, in TASKS partitions (the Kafka sink's columns; the
    rocketmq sink takes `body` and `keys`)."""
    return spark.range(0, n, numPartitions=TASKS).selectExpr("CAST(id AS STRING) AS key",
                                                             f"CAST(repeat('x', {BODY}) AS BINARY) AS value")


def side_cases(spark: Any, fmt: str, options: dict[str, str], writer: Callable[[Any], Any], value: str,
               n: int, checkpoint: Path) -> dict[str, float]:
    """write, read (cold and warm) and stream for one side; seconds each."""
    out = {"write": timed(lambda: writer(rows(spark, n)))}

    def read() -> None:
        total = spark.read.format(fmt).options(**options).load().selectExpr(f"sum(length({value}))").collect()[0][0]
        if total != n * BODY:
            raise SystemExit(f"spark_kafka: {fmt} read {total} bytes, expected {n * BODY}")

    out["read_cold"] = timed(read)
    out["read"] = timed(read)
    streaming = {k: v for k, v in options.items() if k != "endingOffsets"}  # a stream has no end
    stream = (spark.readStream.format(fmt).options(**streaming, maxOffsetsPerTrigger=str(max(1, n // 10)))
              .load().writeStream.format("noop").option("checkpointLocation", str(checkpoint))
              .trigger(availableNow=True))
    out["stream"] = timed(lambda: stream.start().awaitTermination())
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    args = parser.parse_args()
    n = args.messages
    for aset in (KAFKA, CONNECTOR):
        if (why := fetch(aset)) is not None:
            print(f"spark_kafka: {aset.name} could not be fetched with Maven: {why}", file=sys.stderr)
            return 2
    jars = sorted(str(p) for p in CONNECTOR.lib.glob("*.jar") if p.name.startswith(CONNECTOR_JARS))
    from mqtools.spark.load import spark_session

    root = Path(tempfile.mkdtemp(prefix="mq-bench-spark-kafka-"))
    res: dict[str, dict[str, float]] = {}
    try:
        spark = spark_session(MASTER, {"spark.jars": ",".join(jars), "spark.sql.shuffle.partitions": str(TASKS)},
                              "bench-spark-kafka")
        try:
            with kafka(root) as bootstrap:
                topic = f"bench-{uuid.uuid4().hex[:8]}"
                note(f"Kafka {KAFKA_VERSION} at {bootstrap}: write, read, stream of {n:,} rows")
                res["kafka"] = side_cases(
                    spark, "kafka", {"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                                     "startingOffsets": "earliest", "endingOffsets": "latest"},
                    lambda df: df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                    .option("topic", topic).save(), "value", n, root / "ckpt-kafka")
            topic = f"BenchSparkKafka{uuid.uuid4().hex[:8]}"
            with namesrv_and_broker(topic, QUEUES) as (namesrv, _broker):
                note(f"mq at {namesrv.addr}: write, read, stream of {n:,} rows")
                options = {"namesrv": namesrv.addr, "topic": topic, "startingOffsets": "earliest"}
                res["mq"] = side_cases(
                    spark, "rocketmq", {**options, "endingOffsets": "latest"},
                    lambda df: df.selectExpr("key AS keys", "value AS body").write.format("rocketmq")
                    .option("namesrv", namesrv.addr).option("topic", topic).mode("append").save(),
                    "body", n, root / "ckpt-mq")
        finally:
            spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    k, m = res["kafka"], res["mq"]
    parts = []
    for case in ("write", "read", "stream"):
        ratio = k[case] / m[case]  # msgs/s ratio = Kafka's seconds over ours
        parts.append(f"{case} rocketmq {n / m[case]:,.0f} msgs/s vs kafka {n / k[case]:,.0f} msgs/s: "
                     f"{ratio:.2f} ({'met' if ratio >= 1.0 else 'missed'})")
    print(f"spark_kafka ({n:,} x {BODY} B, {MASTER}, Kafka {KAFKA_VERSION}, connector {CONNECTOR_VERSION}, "
          f"cold reads: rocketmq {n / m['read_cold']:,.0f} kafka {n / k['read_cold']:,.0f} msgs/s) | " + " | ".join(parts),
          flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
