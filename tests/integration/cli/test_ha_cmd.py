"""`mq admin ha status|ready` and mqadmin's haStatus against `mq cluster up --preset 2m-2s-async`.

The figures are checked against what the brokers themselves answer (GET_BROKER_HA_STATUS, runtime
info), idle and under load; a SIGSTOPped slave makes `ha ready` say not safe, and its catch-up after
SIGCONT shows as a shrinking trend; the exit codes are the documented ones.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import jsonschema
import pytest
from support.adminsupport import json_of, mq_here, one_line_error
from support.mqproc import connected
from support.presetcluster import PresetCluster, preset_cluster, wait_for

from mqtools.client.admin import SyncMQAdmin
from mqtools.client.sync import SyncProducer
from mqtools.common.message import Message
from mqtools.common.presentation import load_schema
from mqtools.remoting.bodies import MessageQueue, TopicConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
TOPIC = "HaLoad"
BODY = b"x" * 1024


@pytest.fixture(scope="module")
def ha(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PresetCluster]:
    # a paused slave keeps its HA connection for the whole test (the default housekeeping is 20 s)
    with preset_cluster(tmp_path_factory.mktemp("ha"), "2m-2s-async", "haHousekeepingInterval=60000") as cluster:
        with SyncMQAdmin(cluster.namesrv) as admin:
            admin.topics.create_topic(TopicConfig(TOPIC, 4, 4), broker_addr=cluster.addr("broker-a"))
        yield cluster


@pytest.fixture(scope="module")
def admin(ha: PresetCluster) -> Iterator[SyncMQAdmin]:
    with SyncMQAdmin(ha.namesrv) as a:
        yield a


def send(ns: str, count: int) -> None:
    with SyncProducer("PG_HA_CMD", namesrv=ns) as producer:
        for i in range(count):
            producer.send(Message(TOPIC, BODY), queue=MessageQueue(TOPIC, "broker-a", i % 4))


@contextmanager
def load(ns: str) -> Iterator[list[int]]:
    """Sends to broker-a without pause while the block runs; yields the running count."""
    sent = [0]
    stop = threading.Event()

    def run() -> None:
        with SyncProducer("PG_HA_LOAD", namesrv=ns) as producer:
            while not stop.is_set():
                producer.send(Message(TOPIC, BODY), queue=MessageQueue(TOPIC, "broker-a", sent[0] % 4))
                sent[0] += 1

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: sent[0] > 200, 20, "load under way")
        yield sent
    finally:
        stop.set()
        thread.join(20)


def in_sync(admin: SyncMQAdmin, master: str) -> bool:
    status = admin.brokers.ha_status(master)
    return bool(status.slaves) and all(s.diff_bytes == 0 for s in status.slaves)


def doc_of(result: subprocess.CompletedProcess[str], kind: str, code: int) -> dict[str, Any]:
    """A JSON document printed along with a non-zero verdict exit code, validated against its schema."""
    assert result.returncode == code, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert doc["kind"] == kind
    jsonschema.validate(doc, load_schema(kind))
    return doc


def group_of(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(g for g in doc["groups"] if g["brokerName"] == name)


def failed(doc: dict[str, Any]) -> list[str]:
    return [c["name"] for c in doc["checks"] if c["ok"] is False]


def test_idle_figures_are_what_the_brokers_report(ha: PresetCluster, admin: SyncMQAdmin) -> None:
    send(ha.namesrv, 50)
    master, slave = ha.addr("broker-a"), ha.addr("broker-a-s")
    wait_for(lambda: in_sync(admin, master), 20, "broker-a's slave in sync")
    doc = json_of(mq_here("admin", "ha", "status", "--window", "1", "-o", "json", namesrv=ha.namesrv), "HAStatus")
    raw, own, runtime = admin.brokers.ha_status(master), admin.brokers.ha_status(slave), admin.brokers.broker_runtime_info(master)
    assert {g["brokerName"] for g in doc["groups"]} == {"broker-a", "broker-b"}
    g = group_of(doc, "broker-a")
    assert (g["masterAddr"], g["role"], g["cluster"]) == (master, "ASYNC_MASTER", "DefaultCluster")
    assert g["commitLogMaxOffset"] == raw.commitlog_max_offset == runtime.commitlog_max_offset > 0
    assert g["inSyncSlaves"] == raw.in_sync_slaves == 1 and g["error"] is None
    assert g["averageMessageSize"] == pytest.approx(runtime.average_message_size)
    assert 1024 < g["averageMessageSize"] < 1400  # the 1 KiB bodies plus RocketMQ's stored headers
    (s,) = g["slaves"]
    (conn,) = raw.slaves
    assert (s["connection"], s["brokerAddr"], s["brokerId"]) == (conn.addr, slave, 1)
    assert s["ackOffset"] == conn.ack_offset == raw.commitlog_max_offset
    assert (s["diffBytes"], s["diffMessages"], s["catchUpSeconds"], s["inSync"]) == (0, 0, 0.0, True)
    assert s["trend"] == "steady" and len(s["samples"]) >= 3
    assert s["transferFromWhere"] == conn.transfer_from
    report = s["slaveReport"]
    assert own.client is not None
    assert report["masterHaAddr"] == own.client.master_addr == ha.ha_addr("broker-a")
    assert report["maxOffset"] == own.client.max_offset == raw.commitlog_max_offset
    assert report["connected"] is True and report["error"] is None
    assert report["lastReadMs"] is not None and abs(report["lastReadMs"] - time.time() * 1000) < 30_000

    table = mq_here("admin", "ha", "status", "--window", "0", namesrv=ha.namesrv)
    assert table.returncode == 0, table.stderr
    head, *rows = table.stdout.splitlines()
    assert head.split()[:5] == ["BROKER", "MASTER", "SLAVE", "ACK", "OFFSET"]
    row = next(r.split() for r in rows if r.startswith("broker-a "))
    assert row[:6] == ["broker-a", master, slave, str(conn.ack_offset), "0", "0"]


def test_figures_under_load_are_between_what_the_brokers_said_before_and_after(
        ha: PresetCluster, admin: SyncMQAdmin) -> None:
    master, slave = ha.addr("broker-a"), ha.addr("broker-a-s")
    with load(ha.namesrv):
        time.sleep(1.0)
        before, before_own = admin.brokers.ha_status(master), admin.brokers.ha_status(slave)
        doc = json_of(mq_here("admin", "ha", "status", "-b", master, "--window", "2", "-o", "json",
                         namesrv=ha.namesrv), "HAStatus")
        after, after_own = admin.brokers.ha_status(master), admin.brokers.ha_status(slave)
    (g,) = doc["groups"]
    (s,) = g["slaves"]
    assert before.commitlog_max_offset <= g["commitLogMaxOffset"] <= after.commitlog_max_offset
    assert before.slaves[0].ack_offset <= s["ackOffset"] <= after.slaves[0].ack_offset
    assert s["diffBytes"] == g["commitLogMaxOffset"] - s["ackOffset"] >= 0  # one answer, one instant
    assert s["diffMessages"] == round(s["diffBytes"] / g["averageMessageSize"])
    assert s["transferBytesPerSecond"] > 0
    expected = 0.0 if s["diffBytes"] == 0 else s["diffBytes"] / s["transferBytesPerSecond"]
    assert s["catchUpSeconds"] == pytest.approx(expected)
    assert len(s["samples"]) >= 4 and [x["t"] for x in s["samples"]] == sorted(x["t"] for x in s["samples"])
    assert s["trend"] in ("steady", "shrinking", "growing") and s["inSync"] is True
    assert before_own.client is not None and after_own.client is not None
    assert before_own.client.max_offset <= s["slaveReport"]["maxOffset"] <= after_own.client.max_offset


def test_a_stopped_slave_far_behind_is_not_safe_and_shrinks_after_sigcont(
        ha: PresetCluster, admin: SyncMQAdmin) -> None:
    master = ha.addr("broker-a")
    wait_for(lambda: in_sync(admin, master), 20, "broker-a's slave in sync")
    ha.pause("broker-a-s")
    try:
        send(ha.namesrv, 3000)  # ~3.5 MiB the slave does not get
        verdict = doc_of(mq_here("admin", "ha", "ready", "broker-a", "--window", "1", "--timeout", "2",
                            "--max-diff", "1000000", "-o", "json", namesrv=ha.namesrv), "HAReady", 1)
        assert verdict["verdict"] == "not safe" and verdict["safe"] is False and verdict["exitCode"] == 1
        # not "catching up": until the slave is overdue (two heartbeat intervals) the master's speed counts the bytes
        # the kernel still takes for the stopped slave, so whether it fails depends on the socket's buffer
        assert {"slave answers", "diff under bound"} <= set(failed(verdict))
        (s,) = verdict["group"]["slaves"]
        assert s["diffBytes"] > 3_000_000 and s["slaveReport"]["error"]
        assert verdict["lossBytes"] == s["diffBytes"] and verdict["lossMessages"] == s["diffMessages"]
        assert abs(s["diffMessages"] - 3000) <= 30
        table = mq_here("admin", "ha", "ready", "broker-a", "--window", "0", "--timeout", "2", namesrv=ha.namesrv)
        assert table.returncode == 1 and "NOT SAFE" in table.stdout and "verdict: not safe (exit 1)" in table.stdout

        watch = subprocess.Popen([sys.executable, "-m", "mqtools.cli.main", "admin", "ha", "status", "-b", master,
                                  "--window", "6", "-o", "json", "-n", ha.namesrv],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # the first samples see the paused slave: kept paused until the watch asks the master (its start took more
        # than the 3 s once given at CI at 85275c1, and its first sample came after the resume)
        port = int(master.rsplit(":", 1)[1])
        wait_for(lambda: connected(watch.pid, port), 30, "the watch connected to the master")
        time.sleep(2.0)
    finally:
        ha.resume("broker-a-s")
    out, err = watch.communicate(timeout=60)
    assert watch.returncode == 0, err
    (s,) = json.loads(out)["groups"][0]["slaves"]
    assert s["samples"][0]["diffBytes"] > 3_000_000 and s["samples"][-1]["diffBytes"] < 1_000_000
    assert s["trend"] == "shrinking"


def test_an_in_sync_slave_is_safe(ha: PresetCluster, admin: SyncMQAdmin) -> None:
    wait_for(lambda: in_sync(admin, ha.addr("broker-a")), 30, "broker-a's slave in sync")
    doc = json_of(mq_here("admin", "ha", "ready", "broker-a", "--window", "1", "-o", "json", namesrv=ha.namesrv),
                  "HAReady")
    assert doc["verdict"] == "safe" and doc["safe"] is True and doc["exitCode"] == 0 and failed(doc) == []
    assert doc["slave"] == ha.addr("broker-a-s") and doc["role"] == "ASYNC_MASTER"
    assert (doc["lossBytes"], doc["lossMessages"], doc["maxDiffBytes"]) == (0, 0, 1024 * 1024)
    table = mq_here("admin", "ha", "ready", "broker-a", "--window", "0", namesrv=ha.namesrv)
    assert table.returncode == 0 and table.stdout.startswith("broker-a: SAFE to stop the master")


def test_mqadmin_ha_status_in_rocketmq_5_layout(ha: PresetCluster, admin: SyncMQAdmin) -> None:
    master, slave = ha.addr("broker-a"), ha.addr("broker-a-s")
    wait_for(lambda: in_sync(admin, master), 30, "broker-a's slave in sync")
    time.sleep(2.5)  # the transfer speed of an idle connection falls to 0 after two quiet seconds
    raw = admin.brokers.ha_status(master)
    (conn,) = raw.slaves
    out = mq_here("admin", "haStatus", "-b", master, namesrv=ha.namesrv)
    assert out.returncode == 0, out.stderr
    top = raw.commitlog_max_offset
    assert out.stdout == (
        f"\n#MasterAddr\t{master}\n#MasterCommitLogMaxOffset\t{top}\n#SlaveNum\t1\n#InSyncSlaveNum\t1\n"
        "#SlaveAddr                        #SlaveAckOffset             #Diff #TransferSpeed(KB/s)          "
        "#Status #TransferFromWhere\n"
        f"{conn.addr:<32}  {top:<16} {0:>16} {'0.00':>16} {'OK':>16} {top:>16}\n")
    own = mq_here("admin", "HASTATUS", "--brokerAddr", slave, namesrv=ha.namesrv)
    assert own.returncode == 0, own.stderr
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"
    assert re.fullmatch(rf"\n#MasterAddr\t{re.escape(ha.ha_addr('broker-a'))}\n#CommitLogMaxOffset\t{top}\n"
                        rf"#TransferSpeed\(KB/s\)\t0\.00\n#LastReadTime\t{stamp}\n#LastWriteTime\t{stamp}\n"
                        r"#MasterFlushOffset\t0\n", own.stdout), own.stdout
    both = mq_here("admin", "haStatus", "-c", "DefaultCluster", namesrv=ha.namesrv)
    assert both.returncode == 0 and both.stdout.count("#MasterAddr") == 2
    assert f"#MasterAddr\t{master}\n" in both.stdout and f"#MasterAddr\t{ha.addr('broker-b')}\n" in both.stdout
    one_line_error(mq_here("admin", "haStatus", namesrv=ha.namesrv), 2, "-b")


def test_no_slave_is_not_safe(ha: PresetCluster, admin: SyncMQAdmin) -> None:
    ha.stop("broker-a-s")
    try:
        wait_for(lambda: not admin.brokers.ha_status(ha.addr("broker-a")).slaves, 30, "the slave's connection gone")
        doc = doc_of(mq_here("admin", "ha", "ready", "broker-a", "--window", "0", "-o", "json", namesrv=ha.namesrv),
                     "HAReady", 1)
        assert doc["verdict"] == "not safe" and failed(doc) == ["slave connected"]
        assert doc["group"]["slaves"] == [] and doc["lossBytes"] is None
        status = json_of(mq_here("admin", "ha", "status", "-b", ha.addr("broker-a"), "--window", "0", "-o", "json",
                            namesrv=ha.namesrv), "HAStatus")
        assert status["groups"][0]["slaves"] == []
    finally:
        ha.start("broker-a-s")
    wait_for(lambda: in_sync(admin, ha.addr("broker-a")), 30, "the slave back in sync")


def test_unknown_when_the_master_or_the_name_servers_cannot_be_asked(ha: PresetCluster) -> None:
    ha.pause("broker-b")
    try:
        doc = doc_of(mq_here("admin", "ha", "ready", "broker-b", "--window", "0", "--timeout", "1", "-o", "json",
                        namesrv=ha.namesrv), "HAReady", 3)
    finally:
        ha.resume("broker-b")
    assert doc["verdict"] == "unknown" and doc["safe"] is None and failed(doc) == ["master reachable"]
    assert doc["group"]["error"] and "timed out" in doc["group"]["error"]
    gone = doc_of(mq_here("admin", "ha", "ready", "broker-a", "-o", "json", namesrv="127.0.0.1:1"), "HAReady", 3)
    assert gone["group"] is None and failed(gone) == ["name servers reachable"]


def test_usage_errors(ha: PresetCluster) -> None:
    one_line_error(mq_here("admin", "ha", "ready", "broker-z", namesrv=ha.namesrv), 2, "broker-z", "broker-a")
    one_line_error(mq_here("admin", "ha", "status", "-c", "Nope", namesrv=ha.namesrv), 2, "Nope")
    one_line_error(mq_here("admin", "ha", "status", "-c", "DefaultCluster", "-b", "h:1", namesrv=ha.namesrv), 2, "-b")
    one_line_error(mq_here("admin", "ha", "status", "-o", "yaml", namesrv=ha.namesrv), 2, "yaml")
    one_line_error(mq_here("admin", "ha", "status"), 2, "no name server")
