"""Spark Connect: a real Spark Connect server (pyspark's bundled SparkConnectServer, started with
spark-submit on 127.0.0.1) and `mq spark-load produce|consume --remote sc://...` as a thin client: the
producing tasks and the data source's read run in the server's Python workers."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator

import pytest
from support.adminsupport import json_of, mq, one_line_error
from support.clientsupport import Cluster, create_topic
from support.sparkproc import spark_bin, stop, wait_for

from mqtools.client.admin.sync import SyncMQAdmin

pytest.importorskip("grpc")
TOPIC = "SparkConnect"


@pytest.fixture(scope="module")
def connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("connect")
    server = spark_bin("spark-submit", [
        "--class", "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", "local[2]",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", "spark.connect.grpc.binding.port=0",
        "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.bindAddress=127.0.0.1",
        "--conf", "spark.driver.host=127.0.0.1"], work / "connect.log", {"PYSPARK_PYTHON": sys.executable})
    try:
        port = wait_for(work / "connect.log", r"Spark Connect server started at: [0-9.]+:(\d+)", server, 120).group(1)
        yield f"sc://127.0.0.1:{port}"
    finally:
        stop([server])


def test_spark_load_over_spark_connect(cluster: Cluster, connect: str) -> None:
    asyncio.run(create_topic(cluster, TOPIC, queues=2))
    produced = json_of(mq("spark-load", "produce", "-t", TOPIC, "--messages", "100", "--tasks", "2", "--remote",
                          connect, "-o", "json", namesrv=cluster.namesrv.addr, timeout=180), "SparkLoadReport")
    assert produced["messages"] == 100 and produced["master"] == connect
    assert [t["messages"] for t in produced["tasks"]] == [50, 50]
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        assert sum(high - low for low, high in admin.queue_offsets.queue_bounds(TOPIC).values()) == 100
    consumed = json_of(mq("spark-load", "consume", "-t", TOPIC, "--remote", connect, "-o", "json",
                          namesrv=cluster.namesrv.addr, timeout=180), "SparkLoadReport")
    assert consumed["messages"] == 100 and consumed["latencyMs"]["max"] is not None


def test_remote_bad_url_and_unreachable(cluster: Cluster) -> None:
    asyncio.run(create_topic(cluster, TOPIC, queues=2))
    one_line_error(mq("spark-load", "produce", "-t", TOPIC, "--messages", "1", "--remote", "127.0.0.1:15002",
                      namesrv=cluster.namesrv.addr), 2, "sc://HOST:15002")
    one_line_error(mq("spark-load", "consume", "-t", TOPIC, "--remote", "sc://127.0.0.1:1",
                      namesrv=cluster.namesrv.addr, timeout=120), 3, "Spark Connect server", "unreachable")
