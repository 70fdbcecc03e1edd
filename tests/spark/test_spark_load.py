"""`mq spark-load produce` then `consume` on local[2]: the reports' counts equal what the brokers stored.

The jobs run in this process (typer's CliRunner) on the session's SparkSession, which spark-load uses and
leaves running, as it would a notebook's: one Spark for the suite. A run in a process of its own, with
its own session, is the reference toolkit's `spark-load produce` to each Apache version.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.adminsupport import json_of, mq, mq_here, one_line_error
from support.clientsupport import Cluster, create_topic

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.spark.export import omb_schema

TOPIC = "SparkLoad"


def _stored(cluster: Cluster, topic: str) -> int:
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        return sum(high - low for low, high in admin.queue_offsets.queue_bounds(topic).values())


@pytest.fixture(scope="module")
def topic(cluster: Cluster) -> str:
    asyncio.run(create_topic(cluster, TOPIC, queues=2))
    return TOPIC


def _load(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return mq_here("spark-load", *args, "--master", "local[2]", "-o", "json", namesrv=cluster.namesrv.addr)


def _omb(path: Path) -> dict[str, Any]:
    """The --omb file, validated against OMB's TestResult schema."""
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, omb_schema())
    return doc


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_produce_then_consume_counts_match_the_brokers(spark: Any, cluster: Cluster, topic: str,
                                                      tmp_path: Path) -> None:
    before = _stored(cluster, topic)
    produced = json_of(_load(cluster, "produce", "-t", topic, "--messages", "300", "--tasks", "2", "--mode",
                             "async", "--size", "64", "--keys", "--tags", "3", "--rate", "2000",
                             "--csv", str(tmp_path / "p.csv"), "--omb", str(tmp_path / "p.json")), "SparkLoadReport")
    assert produced["messages"] == 300 and produced["failed"] == {}
    assert [t["messages"] for t in produced["tasks"]] == [150, 150]
    assert produced["bytes"] == 300 * 64 and produced["latencyMs"]["p50"] is not None
    assert produced["publishDelayMs"] is not None
    assert _stored(cluster, topic) - before == 300
    stored = _stored(cluster, topic)
    rows = _csv(tmp_path / "p.csv")
    assert [r["task"] for r in rows] == ["0", "1", "all"] and [int(r["messages"]) for r in rows] == [150, 150, 300]
    assert float(rows[-1]["latency_p50_ms"]) == produced["latencyMs"]["p50"]
    omb = _omb(tmp_path / "p.json")
    assert omb["publishRate"] == [pytest.approx(produced["msgsPerSec"], rel=1e-3)] and omb["consumeRate"] == []
    assert (omb["messageSize"], omb["partitions"], omb["producersPerTopic"]) == (64, 4, 2)  # 2 queues x 2 brokers
    assert omb["aggregatedPublishLatency50pct"] == produced["latencyMs"]["p50"]
    assert omb["aggregatedPublishDelayLatencyMax"] is not None and omb["aggregatedEndToEndLatencyAvg"] is None

    consumed = json_of(_load(cluster, "consume", "-t", topic, "--omb", str(tmp_path / "c.json")), "SparkLoadReport")
    assert consumed["messages"] == stored and consumed["latencyMs"]["max"] is not None
    omb = _omb(tmp_path / "c.json")
    assert omb["consumeRate"] and omb["publishRate"] == [] and omb["aggregatedPublishLatencyAvg"] is None
    assert omb["aggregatedEndToEndLatencyMax"] == consumed["latencyMs"]["max"] and omb["consumersPerTopic"] >= 1


def test_until_n_takes_n_evenly_from_the_queues() -> None:
    from mqtools.spark.load import limit_ranges, offsets_json
    from mqtools.spark.offsets import QueueRange

    ranges = [QueueRange("T", "broker-a", 0, 5, 100), QueueRange("T", "broker-a", 1, 0, 3),
              QueueRange("T", "broker-b", 0, 0, 0)]
    limited = limit_ranges(ranges, 50)
    assert sum(r.size for r in limited) == 50 and limited[1].size == 3 and limited[0].start == 5
    assert json.loads(offsets_json(limited, "end")) == {"broker-a": {"0": 52, "1": 3}, "broker-b": {"0": 0}}


@pytest.mark.parametrize(("args", "code", "fragment"), [
    (["produce", "-t", TOPIC, "--messages", "5", "--rate", "0"], 2, "--rate must be above zero"),
    (["produce", "-t", "NoSuchSparkTopic", "--messages", "5"], 2, "unknown topic"),
    (["consume", "-t", TOPIC, "--from", "{\"broker-a\": "], 2, "not valid JSON"),
    (["consume", "-t", TOPIC, "--until", "soon"], 2, "--until must be"),
    (["consume", "-t", TOPIC, "--omb", "/no/such/dir/r.json"], 2, "no such directory"),
    (["consume", "-t", TOPIC, "--group", "readers/a"], 2, "--group: the specified group[readers/a] contains illegal"),
    (["e2e", "-t", TOPIC, "--messages", "5", "-g", ""], 2, "--group: the specified group is blank"),
])
def test_bad_input_is_one_line_before_spark(cluster: Cluster, topic: str, args: list[str], code: int,
                                            fragment: str) -> None:
    one_line_error(mq("spark-load", *args, namesrv=cluster.namesrv.addr), code, fragment)


def test_a_task_failed_by_the_cluster_is_one_line(spark: Any, cluster: Cluster, topic: str) -> None:
    """A read task refused for good (brokers that do not create groups, a --group they lack): the task's own error
    in one line and exit 1, not Spark's traceback of it."""
    json_of(_load(cluster, "produce", "-t", topic, "--messages", "20", "--tasks", "1"), "SparkLoadReport")
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        for broker in cluster.brokers.values():
            admin.brokers.update_broker_config(broker.addr, {"autoCreateSubscriptionGroup": "false"})
        try:
            result = mq_here("spark-load", "consume", "-t", topic, "--group", "SparkLoadNoReaders", "--master",
                             "local[2]", namesrv=cluster.namesrv.addr)
        finally:
            for broker in cluster.brokers.values():
                admin.brokers.update_broker_config(broker.addr, {"autoCreateSubscriptionGroup": "true"})
    one_line_error(result, 1, "mq: error: a Spark task failed: SparkLoad broker-",
                   "no subscription group SparkLoadNoReaders", "mq admin group create SparkLoadNoReaders")


def test_an_e2e_stream_stopped_by_a_failure_says_so_at_once(spark: Any, cluster: Cluster, topic: str) -> None:
    """The e2e stream's micro-batch fails (a --group the brokers lack and will not create): the command ends with
    that error, not after --drain with the stream's rows reported as a silent shortfall."""
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        for broker in cluster.brokers.values():
            admin.brokers.update_broker_config(broker.addr, {"autoCreateSubscriptionGroup": "false"})
        try:
            t0 = time.monotonic()
            result = mq_here("spark-load", "e2e", "-t", topic, "--messages", "20", "--tasks", "1", "--drain", "120",
                             "--group", "SparkLoadNoStreamReaders", namesrv=cluster.namesrv.addr)
            took = time.monotonic() - t0
        finally:
            for broker in cluster.brokers.values():
                admin.brokers.update_broker_config(broker.addr, {"autoCreateSubscriptionGroup": "true"})
    one_line_error(result, 1, "mq: error: a Spark task failed: SparkLoad broker-",
                   "no subscription group SparkLoadNoStreamReaders")
    assert took < 60, f"waited {took:.0f} s of the 120 s drain"


def test_no_namesrv_and_unreachable(tmp_path: Any) -> None:
    result = mq("spark-load", "produce", "-t", "T", "--messages", "1", env={"MQ_CONFIG_DIR": str(tmp_path)})
    one_line_error(result, 2, "no name server")
    one_line_error(mq("spark-load", "consume", "-t", "T", namesrv="127.0.0.1:1"), 3, "unreachable")


def test_schema_is_listed() -> None:
    from mqtools.common.presentation import load_schema

    assert load_schema("SparkLoadReport")["properties"]["kind"]["const"] == "SparkLoadReport"
    json.dumps(load_schema("SparkLoadReport"))


def test_without_pyspark_it_names_the_package(tmp_path: Any) -> None:
    """pyspark hidden from the interpreter: spark-load says what to install, the rest of mq works."""
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pyspark':\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, _Hide())\n")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    one_line_error(mq("spark-load", "produce", "-t", "T", "--messages", "1", namesrv="127.0.0.1:1", env=env), 2,
                   "pyspark", "pip install 'mqtools[spark]'")
    assert mq("version", env=env).returncode == 0
    assert mq("admin", "--help", env=env).returncode == 0


def test_e2e_reads_every_message_it_produced(spark: Any, cluster: Cluster, tmp_path: Path) -> None:
    """Producers and a streaming read at once: the stream reads exactly what was sent, with born-to-read
    latency; OMB's result has both the publish and the end-to-end side."""
    topic = "SparkLoadE2E"
    asyncio.run(create_topic(cluster, topic, queues=2))
    before = _stored(cluster, topic)
    report = json_of(mq_here("spark-load", "e2e", "-t", topic, "--messages", "200", "--rate", "400", "--tasks", "1",
                             "--master", "local[3]", "-o", "json", "--omb", str(tmp_path / "e.json"),
                             "--group", "SparkLoadE2EReaders", namesrv=cluster.namesrv.addr), "SparkLoadReport")
    assert report["master"] == "local[2]"  # the running session's, not the --master asked for
    assert report["action"] == "e2e" and report["produced"]["messages"] == 200 and report["produced"]["failed"] == {}
    assert report["messages"] == 200 == _stored(cluster, topic) - before
    assert report["latencyMs"]["p50"] is not None and report["publishDelayMs"] is not None
    omb = _omb(tmp_path / "e.json")
    assert omb["publishRate"] and omb["consumeRate"] and omb["aggregatedPublishLatency50pct"] is not None
    assert omb["aggregatedEndToEndLatencyMax"] == report["latencyMs"]["max"]
    with SyncMQAdmin(cluster.namesrv.addr) as admin:  # the stream pulled as --group says
        assert any("SparkLoadE2EReaders" in admin.groups.subscription_groups(b.addr) for b in cluster.brokers.values())
