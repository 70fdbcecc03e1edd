"""Streaming reads into a file sink with a checkpoint, stopped and restarted while messages keep arriving."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from support.clientsupport import Cluster, create_topic

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.client.sync import SyncProducer, SyncPullConsumer
from mqtools.common.message import Message

TOPIC = "SparkStream"
GROUP = "spark-stream-progress"
CAP = 8


def _send(cluster: Cluster, first: int, count: int, pause: float = 0.0, topic: str = TOPIC) -> None:
    with SyncProducer("spark-stream-producer", namesrv=cluster.namesrv.addr) as producer:
        for i in range(first, first + count):
            producer.send(Message(topic, f"m-{i}".encode()))
            time.sleep(pause)


def _start(spark: Any, cluster: Cluster, work: Path) -> Any:
    return (spark.readStream.format("rocketmq").option("namesrv", cluster.namesrv.addr).option("topic", TOPIC)
            .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", str(CAP))
            .option("commitGroup", GROUP).load()
            .selectExpr("broker", "queue_id", "queue_offset", "CAST(body AS STRING) AS body")
            .writeStream.format("parquet").option("path", str(work / "out"))
            .option("checkpointLocation", str(work / "checkpoint")).trigger(processingTime="200 milliseconds")
            .start())


def _sunk(spark: Any, work: Path) -> list[Any]:
    if not (work / "out" / "_spark_metadata").exists():
        return []
    schema = "broker string, queue_id int, queue_offset long, body string"
    return spark.read.schema(schema).parquet(str(work / "out")).collect()


def _until(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.3)


def test_stream_restart_exactly_once_capped_and_committed(spark: Any, cluster: Cluster, tmp_path: Path) -> None:
    asyncio.run(create_topic(cluster, TOPIC, queues=2))
    _send(cluster, 0, 30)
    query = _start(spark, cluster, tmp_path)
    sizes: list[int] = []
    try:
        _until(lambda: len(_sunk(spark, tmp_path)) >= 30, 90, "the first 30 messages in the sink")
        arriving = threading.Thread(target=_send, args=(cluster, 30, 30, 0.02))
        arriving.start()
        time.sleep(0.3)
    finally:
        sizes += [p["numInputRows"] for p in query.recentProgress]
        query.stop()
    query = _start(spark, cluster, tmp_path)
    try:
        arriving.join(60)
        _until(lambda: len(_sunk(spark, tmp_path)) >= 60, 90, "all 60 messages in the sink")
        time.sleep(1)
    finally:
        sizes += [p["numInputRows"] for p in query.recentProgress]
        query.stop()
    rows = _sunk(spark, tmp_path)
    assert sorted(r.body for r in rows) == sorted(f"m-{i}" for i in range(60))
    assert len({(r.broker, r.queue_id, r.queue_offset) for r in rows}) == 60
    assert sizes and max(sizes) <= CAP
    with SyncPullConsumer(GROUP, namesrv=cluster.namesrv.addr) as consumer:
        committed = sum(consumer.fetch_offset(mq) or 0 for mq in consumer.fetch_queues(TOPIC))
    # Spark commits a micro-batch to its source when it starts the next one: the group trails by one batch
    assert 60 - CAP <= committed <= 60
    # every micro-batch's reads pulled as the one reader group: the brokers gained no group per batch or queue
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        spark_groups = {g for b in cluster.brokers.values() for g in admin.groups.subscription_groups(b.addr)
                        if g.startswith("mq-spark")}
    assert len(sizes) >= 60 // CAP and spark_groups == {"mq-spark-reader"}


def test_stream_pipeline_topic_to_topic(spark: Any, cluster: Cluster, tmp_path: Path) -> None:
    """Read a topic, transform, write another topic, with a checkpoint (the README's pipeline)."""
    asyncio.run(create_topic(cluster, "SparkPipeIn", queues=2))
    asyncio.run(create_topic(cluster, "SparkStreamOut", queues=1))
    _send(cluster, 0, 20, topic="SparkPipeIn")
    query = (spark.readStream.format("rocketmq").option("namesrv", cluster.namesrv.addr)
             .option("topic", "SparkPipeIn")
             .option("startingOffsets", "earliest").load()
             .selectExpr("CAST(upper(CAST(body AS STRING)) AS BINARY) AS body", "'Piped' AS tags")
             .writeStream.format("rocketmq").option("namesrv", cluster.namesrv.addr)
             .option("topic", "SparkStreamOut").option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        _until(lambda: _stored(cluster, "SparkStreamOut") >= 20, 60, "20 messages piped to SparkStreamOut")
    finally:
        query.stop()
    got = (spark.read.format("rocketmq").option("namesrv", cluster.namesrv.addr).option("topic", "SparkStreamOut")
           .load().collect())
    assert sorted(bytes(r.body) for r in got) == sorted(f"M-{i}".encode() for i in range(20))
    assert {r.tags for r in got} == {"Piped"}


def _stored(cluster: Cluster, topic: str) -> int:
    from mqtools.client.admin.sync import SyncMQAdmin

    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        return sum(high - low for low, high in admin.queue_offsets.queue_bounds(topic).values())


def test_cap_shares_the_limit_across_queues() -> None:
    from mqtools.spark.stream import cap

    start = {"a": {"0": 0, "1": 10}}
    latest = {"a": {"0": 30, "1": 20}, "b": {"0": 5}}
    capped = cap({**start, "b": {"0": 0}}, latest, 9)
    moved = capped["a"]["0"] + capped["a"]["1"] - 10 + capped["b"]["0"]
    assert 1 <= moved <= 9 and all(capped[b][q] <= latest[b][q] for b in latest for q in latest[b])
    assert cap(start, {"a": {"0": 3, "1": 12}}, 9) == {"a": {"0": 3, "1": 12}}


def test_stream_available_now_reads_what_was_there_in_capped_batches(spark: Any, cluster: Cluster,
                                                                      tmp_path: Path) -> None:
    """trigger(availableNow=True): every message present at the start, in batches of maxOffsetsPerTrigger (a
    source without SupportsTriggerAvailableNow is read in one batch), then the query ends by itself while
    messages still arrive."""
    topic = "SparkAvailableNow"
    asyncio.run(create_topic(cluster, topic, queues=2))
    _send(cluster, 0, 20, topic=topic)
    query = (spark.readStream.format("rocketmq").option("namesrv", cluster.namesrv.addr).option("topic", topic)
             .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "6").load()
             .selectExpr("CAST(body AS STRING) AS body")
             .writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    _send(cluster, 20, 5, topic=topic)
    assert query.awaitTermination(90), "an availableNow query ends by itself"
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    bodies = sorted(r.body for r in spark.read.schema("body string").parquet(str(tmp_path / "out")).collect())
    assert set(bodies) >= {f"m-{i}" for i in range(20)} and len(bodies) == len(set(bodies))
    assert max(sizes) <= 6 and len(sizes) >= 4
