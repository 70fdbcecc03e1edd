"""A streaming read while one of two masters (no slaves) is SIGKILLed and started again: the query goes on with the
broker that is left (its commitGroup commits included), and the returning broker's queues are read from where the
query was, not again from their start (each message in the sink once)."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.clientsupport import Cluster, broker_cluster, create_topic
from support.mqproc import start_broker
from support.presetcluster import wait_for

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.client.sync import SyncProducer
from mqtools.common.message import Message

TOPIC = "SparkStreamOutage"
CLUSTER = "StreamOutage"
GROUP = "spark-outage-progress"


@pytest.fixture(scope="module")
def outage_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from broker_cluster(tmp_path_factory.mktemp("stream-outage"), ("broker-sa", "broker-sb"),
                              brokerClusterName=CLUSTER)


def routed(cluster: Cluster) -> set[str]:
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        return {q.broker_name for q in admin.topics.topic_route(TOPIC).queue_datas}


def send(cluster: Cluster, first: int, count: int) -> None:
    with SyncProducer("spark-outage-producer", namesrv=cluster.namesrv.addr) as producer:
        for i in range(first, first + count):
            producer.send(Message(TOPIC, f"m-{i}".encode()))


def sunk(spark: Any, work: Path) -> list[Any]:
    if not (work / "out" / "_spark_metadata").exists():
        return []
    return spark.read.schema("broker string, queue_id int, queue_offset long, body string").parquet(
        str(work / "out")).collect()


def until(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.3)


def test_a_broker_gone_and_back_is_read_on_from_where_the_query_was(spark: Any, outage_cluster: Cluster,
                                                                    tmp_path: Path) -> None:
    cluster = outage_cluster
    asyncio.run(create_topic(cluster, TOPIC, queues=2))
    send(cluster, 0, 20)
    query = (spark.readStream.format("rocketmq").option("namesrv", cluster.namesrv.addr).option("topic", TOPIC)
             .option("startingOffsets", "earliest").option("commitGroup", GROUP).load()
             .selectExpr("broker", "queue_id", "queue_offset", "CAST(body AS STRING) AS body")
             .writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(processingTime="200 milliseconds")
             .start())
    try:
        until(lambda: len(sunk(spark, tmp_path)) >= 20, 90, "the first 20 messages in the sink")
        gone = cluster.brokers["broker-sb"]
        gone.signal(signal.SIGKILL)
        gone.proc.wait(10)
        wait_for(lambda: routed(cluster) == {"broker-sa"}, 30, "broker-sb out of the route")
        send(cluster, 20, 10)  # all to broker-sa: the query reads on without broker-sb
        until(lambda: len(sunk(spark, tmp_path)) >= 30, 90, "the 10 sent while broker-sb was down")
        assert query.isActive, query.exception()
        cluster.brokers["broker-sb"] = start_broker(cluster.workdir, cluster.namesrv.addr, "broker-sb",
                                                    brokerClusterName=CLUSTER)
        wait_for(lambda: routed(cluster) == {"broker-sa", "broker-sb"}, 30, "broker-sb back in the route")
        send(cluster, 30, 10)
        until(lambda: len(sunk(spark, tmp_path)) >= 40, 90, "the 10 sent once broker-sb was back")
        # what a re-read of broker-sb would have added comes in the micro-batch that reads its new messages
        time.sleep(1)
    finally:
        query.stop()
    rows = sunk(spark, tmp_path)
    assert sorted(r.body for r in rows) == sorted(f"m-{i}" for i in range(40))
    assert len({(r.broker, r.queue_id, r.queue_offset) for r in rows}) == 40
