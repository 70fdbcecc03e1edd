"""A real Spark cluster: a standalone master and one worker started with pyspark's own spark-class on
127.0.0.1; `mq spark-load produce` and a data-source read (`consume`) run on it, so the job leaves the
driver's process."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from support.adminsupport import json_of, mq
from support.clientsupport import Cluster, create_topic
from support.sparkproc import spark_bin, stop, wait_for

from mqtools.client.admin.sync import SyncMQAdmin

TOPIC = "SparkStandalone"


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("standalone")
    procs = []
    try:
        master = spark_bin("spark-class", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                                           "0", "--webui-port", "0"], work / "master.log", {"SPARK_LOG_DIR": str(work)})
        procs.append(master)
        url = wait_for(work / "master.log", r"Starting Spark master at (spark://[0-9.]+:\d+)", master).group(1)
        worker = spark_bin("spark-class", ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                                           "--cores", "2", "--memory", "1g", "--webui-port", "0",
                                           "--work-dir", str(work / "worker")], work / "worker.log", {})
        procs.append(worker)
        wait_for(work / "worker.log", "Successfully registered with master", worker)
        yield url
    finally:
        stop(procs)


@pytest.mark.soak  # the same jobs on local[*] run in make test (test_spark_load)
def test_spark_load_on_a_standalone_cluster(cluster: Cluster, standalone: str) -> None:
    asyncio.run(create_topic(cluster, TOPIC, queues=2))
    conf = ["--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=2"]
    produced = json_of(mq("spark-load", "produce", "-t", TOPIC, "--messages", "120", "--tasks", "2", "--mode", "batch",
                          "--batch-size", "10",
                          "--master", standalone, *conf, "-o", "json", namesrv=cluster.namesrv.addr, timeout=240),
                       "SparkLoadReport")
    assert produced["messages"] == 120 and produced["master"] == standalone and produced["publishDelayMs"] is None
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        stored = sum(high - low for low, high in admin.queue_offsets.queue_bounds(TOPIC).values())
    assert stored == 120
    consumed = json_of(mq("spark-load", "consume", "-t", TOPIC, "--master", standalone, *conf, "-o", "json",
                          namesrv=cluster.namesrv.addr, timeout=240), "SparkLoadReport")
    assert consumed["messages"] == 120
