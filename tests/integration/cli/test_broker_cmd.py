"""`mq admin broker` against real brokers: runtime status, config get/set, every group's lag, statsAll,
draining a broker with `perm wipe` (sends avoid it) and `perm add`, --watch stopped by SIGINT, and a
broker killed mid-command leaving n/a in its row while the others still answer."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from support.adminsupport import json_of, mq_here, one_line_error
from support.clientsupport import Cluster, broker_cluster, create_topic
from support.mqproc import connected, start_broker

from mqtools.client.admin import MQAdmin
from mqtools.client.producer import Producer
from mqtools.client.pull_consumer import PullConsumer
from mqtools.common.exitcodes import EXIT_PARTIAL
from mqtools.common.message import Message
from mqtools.common.presentation import load_schema
from mqtools.remoting.bodies import SubscriptionGroupConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def test_status_and_config_get_set(cluster: Cluster) -> None:
    ns, addr = cluster.namesrv.addr, cluster.brokers["broker-a"].addr
    status = json_of(mq_here("admin", "broker", "status", addr, "-o", "json", namesrv=ns), "BrokerStatus")
    assert status["brokerAddr"] == addr and status["runtime"]["brokerActive"] == "true"
    assert int(status["runtime"]["commitLogMaxOffset"]) >= 0
    changed = mq_here("admin", "broker", "config", "set", addr, "defaultTopicQueueNums", "6", namesrv=ns)
    assert changed.returncode == 0 and changed.stdout.strip().endswith("defaultTopicQueueNums 8 -> 6"), changed.stdout
    config = json_of(mq_here("admin", "broker", "config", "get", addr, "-o", "json", namesrv=ns), "BrokerConfig")
    assert config["config"]["defaultTopicQueueNums"] == "6" and config["config"]["brokerName"] == "broker-a"
    refused = mq_here("admin", "broker", "config", "set", addr, "brokerName", "other", namesrv=ns)
    one_line_error(refused, 1, "black list")
    config = json_of(mq_here("admin", "broker", "config", "get", addr, "-o", "json", namesrv=ns), "BrokerConfig")
    assert config["config"]["brokerName"] == "broker-a"


async def test_consume_stats_show_each_groups_lag(cluster: Cluster) -> None:
    ns, addr = cluster.namesrv.addr, cluster.brokers["broker-b"].addr
    await create_topic(cluster, "AdmBrkLag", 1)
    async with Producer("PG_ADM_LAG", namesrv=ns) as producer:
        results = [await producer.send(Message("AdmBrkLag", f"lag-{i}".encode())) for i in range(12)]
    on_b = [r for r in results if r.queue.broker_name == "broker-b"]
    assert on_b
    async with MQAdmin(ns) as admin:  # the broker reports the groups it has a subscription config for
        await admin.groups.create_subscription_group(SubscriptionGroupConfig("CG_ADM_LAG"), cluster="ClientIT")
    async with PullConsumer("CG_ADM_LAG", namesrv=ns) as consumer:
        await consumer.instance.route("AdmBrkLag", refresh=True)
        await consumer.commit_offset(on_b[0].queue, 1)
    doc = json_of(mq_here("admin", "broker", "consume-stats", addr, "-o", "json", namesrv=ns), "BrokerConsumeStats")
    rows = [q for q in doc["queues"] if q["group"] == "CG_ADM_LAG"]
    assert rows == [{"topic": "AdmBrkLag", "group": "CG_ADM_LAG", "brokerName": "broker-b", "queueId": 0,
                     "brokerOffset": len(on_b), "consumerOffset": 1, "diff": len(on_b) - 1,
                     "lastTimestamp": rows[0]["lastTimestamp"]}]
    assert rows[0]["lastTimestamp"] is not None and doc["totalDiff"] >= len(on_b) - 1
    none_left = json_of(mq_here("admin", "broker", "consume-stats", addr, "--level", "100000", "-o", "json", namesrv=ns),
                        "BrokerConsumeStats")
    assert none_left["queues"] == []
    stats = json_of(mq_here("admin", "broker", "stats", "-t", "AdmBrkLag", "-o", "json", namesrv=ns), "StatsAll")
    row = next(r for r in stats["rows"] if r["group"] == "CG_ADM_LAG")
    assert row["accumulation"] == 12 - 1 and row["inMsg24Hour"] == 12 and row["inTps"] > 0


async def test_perm_wipe_drains_a_broker_and_add_brings_it_back(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    await create_topic(cluster, "AdmBrkDrain", 4)
    wiped = mq_here("admin", "broker", "perm", "wipe", "broker-a", "--yes", namesrv=ns)
    assert wiped.returncode == 0 and f"{ns}: wiped write permission of broker-a" in wiped.stdout, wiped.stderr
    async with Producer("PG_ADM_DRAIN", namesrv=ns) as producer:
        drained = [await producer.send(Message("AdmBrkDrain", b"x")) for _ in range(20)]
    assert {r.queue.broker_name for r in drained} == {"broker-b"}
    added = mq_here("admin", "broker", "perm", "add", "broker-a", namesrv=ns)
    assert added.returncode == 0 and f"{ns}: restored write permission of broker-a" in added.stdout
    async with Producer("PG_ADM_UNDRAIN", namesrv=ns) as producer:
        back = [await producer.send(Message("AdmBrkDrain", b"y")) for _ in range(20)]
    assert {r.queue.broker_name for r in back} == {"broker-a", "broker-b"}


def test_perm_wipe_refuses_without_yes_off_a_terminal(cluster: Cluster) -> None:
    one_line_error(mq_here("admin", "broker", "perm", "wipe", "broker-a", namesrv=cluster.namesrv.addr), 2, "--yes")


def test_watch_stops_cleanly_on_sigint(cluster: Cluster) -> None:
    argv = [sys.executable, "-m", "mqtools.cli.main", "admin", "broker", "status", cluster.brokers["broker-a"].addr,
            "--watch", "0.2", "-o", "json", "-n", cluster.namesrv.addr]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
        second = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
        assert first["kind"] == second["kind"] == "BrokerStatus"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.1)


def test_a_broker_killed_mid_command_leaves_na_in_its_row(tmp_path: Path) -> None:
    """A cluster of its own, so the shared one keeps its brokers. broker-y is frozen (SIGSTOP) so the
    command finds it registered and waits on it, then killed (SIGKILL) while the command waits: its row is n/a and
    the list partial, naming it."""
    gen = broker_cluster(tmp_path, ("broker-x",), brokerClusterName="KillIT")
    small = next(gen)
    doomed = start_broker(tmp_path, small.namesrv.addr, "broker-y", brokerClusterName="KillIT")
    try:
        ns = small.namesrv.addr

        def both_listed() -> bool:
            doc = json_of(mq_here("admin", "cluster", "list", "-o", "json", namesrv=ns), "ClusterList")
            return {b["brokerName"] for b in doc["brokers"]} == {"broker-x", "broker-y"}

        wait_for(both_listed, 30, "both brokers registered")
        doomed.signal(signal.SIGSTOP)
        argv = [sys.executable, "-m", "mqtools.cli.main", "admin", "cluster", "list", "-o", "json", "--timeout", "15",
                "-n", ns]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: connected(proc.pid, doomed.port), 20, "the command waiting on broker-y")
        doomed.kill()
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == EXIT_PARTIAL, err  # the killed broker's figures could not be read
        doc = json.loads(out)
        jsonschema.validate(doc, load_schema("ClusterList"))
        assert doc["partial"] and [u["brokerName"] for u in doc["unreachable"]] == ["broker-y"]
        rows = {b["brokerName"]: b for b in doc["brokers"]}
        assert rows["broker-x"]["error"] is None and rows["broker-x"]["commitLogMaxOffset"] is not None
        dead = rows["broker-y"]
        assert dead["error"] and dead["version"] is None and dead["commitLogMaxOffset"] is None
        assert dead["inTps"] is None and dead["diskRatio"] is None
        one_line_error(mq_here("admin", "broker", "status", doomed.addr, namesrv=ns), 3, doomed.addr)
    finally:
        doomed.stop()
        gen.close()
