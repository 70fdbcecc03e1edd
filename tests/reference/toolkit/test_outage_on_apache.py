"""The outage matrix on Apache RocketMQ 4.9.7 (issue: the toolkit tells the truth while the cluster is
broken), on Apache's 2m-2s SYNC cluster with known ground truth written first (messages sent to every queue,
a group's committed offsets, both known to the slaves). Faults applied and healed in place, in order: one of
two name servers given does not answer (F4), broker-a's master hung (F2), broker-b's slave SIGKILLed (F3),
broker-a's master SIGKILLed (F1) and then its slave hung too (no replica of the set answers).

mq's dialect must give the whole truth, a master-less set read from its slave (exit 0), or say it is partial
and name what it missed (exit 4); the mqadmin dialect must print what Apache's mqadmin 4.9.8 prints in the
same state (normalised as the other reference tests normalise); writes refuse and name the set. What was
killed is started again after, for the tests after.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator

import apache
import pytest
from catalogue import as_4x, normalise
from mqadminbatch import MqadminBatch
from refsupport import CLUSTER, Clusters2m2s, make_topic, name, slaves_in_sync
from support.adminsupport import mq_here
from support.outagesweep import HUNG_TIMEOUT, MCP_READS, NO_REPLICA_OF_A, mcp_sweep
from support.ports import free_port
from support.presetcluster import wait_for
from support.promsupport import exported

from mqtools.client.admin import SyncMQAdmin
from mqtools.client.admin.models.groups import ResetTarget
from mqtools.client.sync import SyncProducer
from mqtools.common import properties as P
from mqtools.common.exitcodes import EXIT_OK, EXIT_PARTIAL, EXIT_REFUSED, EXIT_UNREACHABLE
from mqtools.common.message import Message
from mqtools.common.topics import retry_topic
from mqtools.remoting.bodies import ConsumeStats, MessageQueue, SubscriptionGroupConfig
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import GetConsumeStatsRequestHeader, TopicRequestHeader

pytestmark = [pytest.mark.integration, pytest.mark.faults, pytest.mark.timeout(300)]

PER_QUEUE, QUEUES, COMMITTED = 15, 4, 5
BROKERS = ("broker-a", "broker-b")
SENT = PER_QUEUE * QUEUES * len(BROKERS)
LAG = (PER_QUEUE - COMMITTED) * QUEUES * len(BROKERS)
ANY_CODE = tuple(ResponseCode)
TIMEOUT = "2"
FIRST_ON_A: dict[str, str] = {}
"""broker-a's first message (key0): its offset msgId, filled by the `written` fixture."""


def slave_knows(admin: SyncMQAdmin, addr: str, topic: str, group: str) -> bool:
    """The slave has the topic's config and the group's offsets (Apache's slave syncs them every 10 s)."""
    stats = admin.call(addr, RequestCode.GET_TOPIC_STATS_INFO, TopicRequestHeader(topic).to_ext(), ok=ANY_CODE)
    consume = admin.call(addr, RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(group, topic).to_ext(),
                         ok=ANY_CODE)
    if stats.code != ResponseCode.SUCCESS or consume.code != ResponseCode.SUCCESS or not consume.body:
        return False
    offsets = ConsumeStats.from_json(consume.body).offset_table.values()
    return len(offsets) == QUEUES and all(w.consumer_offset == COMMITTED for w in offsets)


def probe_of(topic: str) -> str:
    """Where a healed set's slaves are awaited (refsupport.slaves_in_sync sends there), not the ground truth."""
    return f"{topic}_PROBE"


@pytest.fixture(scope="module")
def written(clusters_2m2s: Clusters2m2s) -> tuple[str, str, str]:
    """(name server, topic, group) on Apache's cluster with the ground truth written: SENT messages on every
    queue of both sets, the group's offsets committed at COMMITTED, and the slaves knowing both."""
    cluster = clusters_2m2s.apache
    topic, group = name("OUTAGE"), name("OUTAGE_CG")
    make_topic(cluster.addr, topic, QUEUES)
    make_topic(cluster.addr, retry_topic(group), 1)  # as a consumer's start creates it: Apache's mqadmin needs its route
    make_topic(cluster.addr, probe_of(topic))
    with SyncProducer(name("OUTAGE_P"), namesrv=cluster.addr) as producer:
        for i in range(SENT):
            sent = producer.send(Message(topic, f"m{i}".encode(), properties={P.KEYS: f"key{i}"}),
                                 queue=MessageQueue(topic, BROKERS[i % 2], (i // 2) % QUEUES))
            if i == 0:
                FIRST_ON_A["msg"] = sent.offset_msg_id
    with SyncMQAdmin(cluster.addr) as admin:
        admin.groups.create_subscription_group(SubscriptionGroupConfig(group), cluster=CLUSTER)
        admin.offsets.reset_offsets(group, topic, ResetTarget("offset", COMMITTED))
        for slave in ("broker-a-s", "broker-b-s"):
            addr = cluster.brokers[slave].addr
            wait_for(lambda a=addr: slave_knows(admin, a, topic, group), 40, f"{slave} to know {topic}, {group}")
    return cluster.addr, topic, group


def whole(namesrv: str, topic: str, group: str) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """mq's topic status and group progress, asserted whole (exit 0, every message and the whole lag); the
    source of each set's figures in each."""
    status = mq_here("admin", "topic", "status", topic, "-o", "json", "--timeout", TIMEOUT, namesrv=namesrv)
    assert status.returncode == EXIT_OK, status.stderr
    doc = json.loads(status.stdout)
    assert (doc["partial"], doc["messages"], len(doc["queues"])) == (False, SENT, QUEUES * len(BROKERS))
    progress = mq_here("admin", "group", "progress", group, "-o", "json", "--timeout", TIMEOUT, namesrv=namesrv)
    assert progress.returncode == EXIT_OK, progress.stderr
    lag = json.loads(progress.stdout)
    assert (lag["partial"], lag["diffTotal"]) == (False, LAG)
    return sources(doc), sources(lag)


def sources(doc: dict) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for q in doc["queues"]:
        found.setdefault(q["brokerName"], set()).add(q["source"])
    return found


def mcp_values(clusters: Clusters2m2s, topic: str, group: str) -> dict[str, str]:
    """What the MCP sweep fills in: the world's topic and group, broker-b's master, broker-a's first message."""
    return {"topic": topic, "group": group, "addr": clusters.apache.brokers["broker-b"].addr, "key": "key0",
            **FIRST_ON_A}


NO_PROXY = set(MCP_READS) - {"proxy_clients"}
"""The MCP read tools a world without a proxy sweeps."""


def same_as_mqadmin(mqadmin: MqadminBatch, namesrv: str, topic: str, group: str) -> list[str]:
    """topicStatus and consumerProgress in mq's mqadmin dialect equal Apache's mqadmin 4.9.8's (normalised);
    mq's topicStatus lines."""
    ours = normalise(mq_here("admin", "topicStatus", "-t", topic, namesrv=namesrv).stdout)
    theirs = mqadmin.run("topicStatus", "-t", topic, "-n", namesrv)
    assert sorted(as_4x("topicStatus", ours)) == sorted(normalise(theirs.out)), theirs.out + theirs.err
    progress = normalise(mq_here("admin", "consumerProgress", "-g", group, namesrv=namesrv).stdout)
    theirs = mqadmin.run("consumerProgress", "-g", group, "-n", namesrv)
    assert sorted(as_4x("consumerProgress", progress)) == sorted(normalise(theirs.out)), theirs.out + theirs.err
    return ours


def test_one_name_server_down_on_apache_every_read_is_whole(clusters_2m2s: Clusters2m2s, written: tuple[str, str, str],
                                                             mqadmin: MqadminBatch) -> None:
    """F4 as a client meets it: the first of two name servers given does not answer; MCP's read tools and the
    exporter whole too."""
    live, topic, group = written
    dead = f"127.0.0.1:{free_port()}"
    namesrv = f"{dead};{live}"
    assert whole(namesrv, topic, group) == ({"broker-a": {"master"}, "broker-b": {"master"}},) * 2
    same_as_mqadmin(mqadmin, namesrv, topic, group)
    top = mq_here("top", "--once", "-o", "json", namesrv=namesrv)
    assert top.returncode == EXIT_OK, top.stderr
    views = json.loads(top.stdout)["views"]
    assert {r["addr"]: r["reachable"] for r in views["namesrv"]["rows"]} == {dead: False, live: True}
    assert {r["brokerName"] for r in views["brokers"]["rows"] if r["status"] == "ok"} == set(BROKERS)
    assert mcp_sweep(namesrv, mcp_values(clusters_2m2s, topic, group)) == dict.fromkeys(NO_PROXY, "whole")
    figures = exported(namesrv, topic, group, TIMEOUT)
    assert figures["mq_broker_set_master_up"] == dict.fromkeys(BROKERS, 1.0)
    assert figures["rocketmq_producer_offset"] == dict.fromkeys(BROKERS, SENT / 2)
    assert figures["rocketmq_group_diff"] == {topic: LAG}


def test_a_hung_master_on_apache_is_read_from_its_slave_within_one_timeout(
        clusters_2m2s: Clusters2m2s, written: tuple[str, str, str]) -> None:
    """F2: broker-a's master SIGSTOPped, still registered; mq's dialect reads the set from its slave after one
    timeout for the set; so do MCP's read tools and the exporter, and diagnose calls the master unreachable."""
    namesrv, topic, group = written
    master = clusters_2m2s.apache.brokers["broker-a"]
    os.kill(master.pid, signal.SIGSTOP)
    try:
        began = time.monotonic()
        found = whole(namesrv, topic, group)
        took = time.monotonic() - began
        hung = mq_here("admin", "broker", "status", master.addr, "--timeout", TIMEOUT, namesrv=namesrv)
        judged = mq_here("admin", "diagnose", "broker", master.addr, "--window", "1", "--timeout", TIMEOUT, "-o",
                         "json", namesrv=namesrv)
        tools = mcp_sweep(namesrv, mcp_values(clusters_2m2s, topic, group), HUNG_TIMEOUT)
        figures = exported(namesrv, topic, group, TIMEOUT)
    finally:
        os.kill(master.pid, signal.SIGCONT)
    assert judged.returncode == EXIT_UNREACHABLE and "Traceback" not in judged.stderr, judged.stdout + judged.stderr
    # the hung master's figures: its HA figures, and its row of the cluster list
    assert tools == {**dict.fromkeys(NO_PROXY, "whole"), "ha_status": "partial", "cluster_list": "partial"}
    assert figures["mq_broker_set_master_up"] == {"broker-a": 0.0, "broker-b": 1.0}
    assert figures["rocketmq_producer_offset"] == dict.fromkeys(BROKERS, SENT / 2)
    assert figures["rocketmq_group_diff"] == {topic: LAG}
    assert found == ({"broker-a": {"slave"}, "broker-b": {"master"}},) * 2
    assert took < 4 * float(TIMEOUT) + 10  # two commands, one timeout each for the hung set, not one per queue
    assert hung.returncode == EXIT_UNREACHABLE and hung.stderr.startswith("mq: error:"), hung.stderr
    assert hung.stderr.count("\n") == 1, hung.stderr


def test_a_killed_slave_on_apache_leaves_every_read_whole(clusters_2m2s: Clusters2m2s, written: tuple[str, str, str],
                                                           mqadmin: MqadminBatch) -> None:
    """F3: broker-b's slave SIGKILLed; every read whole from the masters, as Apache's mqadmin prints it, and
    `ha` names the missing slave; MCP's read tools whole, and the exporter has every set's figures but no HA
    figure for the lost slave. The slave is started again after."""
    namesrv, topic, group = written
    cluster = clusters_2m2s.apache
    cluster.brokers["broker-b-s"].kill()
    try:
        with SyncMQAdmin(namesrv) as admin:
            wait_for(lambda: len(admin.cluster_info().broker_addr_table["broker-b"].broker_addrs) == 1, 30,
                     "the name server to drop broker-b's slave")
        assert whole(namesrv, topic, group) == ({"broker-a": {"master"}, "broker-b": {"master"}},) * 2
        same_as_mqadmin(mqadmin, namesrv, topic, group)
        ha = mq_here("admin", "ha", "status", "--timeout", TIMEOUT, namesrv=namesrv)
        assert ha.returncode == EXIT_OK and "broker-b: no slave registered" in ha.stdout, ha.stdout
        ready = mq_here("admin", "ha", "ready", "broker-b", "-o", "json", "--timeout", TIMEOUT, namesrv=namesrv)
        assert ready.returncode == EXIT_REFUSED and json.loads(ready.stdout)["verdict"] == "not safe", ready.stdout
        assert mcp_sweep(namesrv, mcp_values(clusters_2m2s, topic, group)) == dict.fromkeys(NO_PROXY, "whole")
        figures = exported(namesrv, topic, group, TIMEOUT)
        assert figures["mq_broker_set_master_up"] == dict.fromkeys(BROKERS, 1.0)
        assert figures["rocketmq_producer_offset"] == dict.fromkeys(BROKERS, SENT / 2)
        assert figures["rocketmq_group_diff"] == {topic: LAG}
        assert "broker-b" not in figures.get("mq_ha_diff_bytes", {}), figures.get("mq_ha_diff_bytes")
    finally:
        cluster.brokers["broker-b-s"] = apache.restart_broker(cluster.brokers["broker-b-s"])
        slaves_in_sync(namesrv, probe_of(topic), list(BROKERS))


@pytest.fixture
def master_down(clusters_2m2s: Clusters2m2s, written: tuple[str, str, str]) -> Iterator[tuple[str, str, str]]:
    """The written world with broker-a's master SIGKILLed; started again after."""
    cluster = clusters_2m2s.apache
    cluster.brokers["broker-a"].kill()
    try:
        with SyncMQAdmin(cluster.addr) as admin:
            wait_for(lambda: 0 not in admin.cluster_info().broker_addr_table["broker-a"].broker_addrs, 30,
                     "the name server to drop broker-a's master")
        yield written
    finally:
        cluster.brokers["broker-a"] = apache.restart_broker(cluster.brokers["broker-a"])
        slaves_in_sync(cluster.addr, probe_of(written[1]), list(BROKERS))


@pytest.mark.soak  # Apache 5.5.0's killed master (test_toolkit_on_apache5) runs in make test
def test_a_killed_master_on_apache_reads_from_its_slave_as_apaches_mqadmin_does(
        clusters_2m2s: Clusters2m2s, master_down: tuple[str, str, str], mqadmin: MqadminBatch) -> None:
    """F1, then F5's one-shot form: broker-a's slave hung too, so no replica of the set answers."""
    namesrv, topic, group = master_down
    assert whole(namesrv, topic, group) == ({"broker-a": {"slave"}, "broker-b": {"master"}},) * 2
    ours = same_as_mqadmin(mqadmin, namesrv, topic, group)
    assert sum(line.count("broker-a") for line in ours) == QUEUES  # Apache's too: the set read from its slave

    ha = mq_here("admin", "ha", "status", "-o", "json", "--timeout", TIMEOUT, namesrv=namesrv)
    (lost,) = [g for g in json.loads(ha.stdout)["groups"] if g["brokerName"] == "broker-a"]
    assert (lost["masterAddr"], lost["error"]) == (None, "no master registered")
    listing = json.loads(mq_here("admin", "cluster", "list", "-o", "json", namesrv=namesrv).stdout)
    assert [s["brokerName"] for s in listing["brokerSetsWithoutMaster"]] == ["broker-a"]
    refused = mq_here("admin", "topic", "update", topic, "-w", "2", namesrv=namesrv)
    assert refused.returncode == EXIT_REFUSED
    assert refused.stderr.startswith("mq: error: broker set broker-a has no master registered"), refused.stderr
    # MCP's read tools whole (the set from its slave, a message of it by its offset msgId too), and the
    # exporter: the set has no master, its figures are read from Apache's slave, the lag counted whole
    assert mcp_sweep(namesrv, mcp_values(clusters_2m2s, topic, group)) == dict.fromkeys(NO_PROXY, "whole")
    figures = exported(namesrv, topic, group, TIMEOUT)
    assert figures["mq_broker_set_master_up"] == {"broker-a": 0.0, "broker-b": 1.0}
    assert figures["rocketmq_producer_offset"] == {"broker-a": SENT / 2, "broker-b": SENT / 2}
    assert figures["rocketmq_group_diff"] == {topic: LAG}
    # diagnose: the group's lag counted whole from the slave, the set without a master the cluster's first action
    judged = json.loads(mq_here("admin", "diagnose", "group", group, "-o", "json", namesrv=namesrv).stdout)
    assert judged["lag"] == LAG and (judged["verdict"], judged["also"][:1]) == ("offline", ["no master"]), judged
    verdicts = mq_here("admin", "diagnose", "cluster", "-o", "json", namesrv=namesrv)
    assert verdicts.returncode == EXIT_REFUSED, verdicts.stderr
    first = json.loads(verdicts.stdout)["items"][0]
    assert (first["kind"], first["name"], first["verdict"], first["severity"]) == ("set", "broker-a", "no master",
                                                                                     "action")

    slave = clusters_2m2s.apache.brokers["broker-a-s"]
    os.kill(slave.pid, signal.SIGSTOP)
    try:
        status = mq_here("admin", "topic", "status", topic, "-o", "json", "--timeout", TIMEOUT, namesrv=namesrv)
        progress = mq_here("admin", "group", "progress", group, "-o", "json", "--timeout", TIMEOUT, namesrv=namesrv)
        tools = mcp_sweep(namesrv, mcp_values(clusters_2m2s, topic, group), HUNG_TIMEOUT)
        figures = exported(namesrv, topic, group, TIMEOUT)
    finally:
        os.kill(slave.pid, signal.SIGCONT)
    # MCP: what needs broker-a is partial, or an error of one line where only broker-a has it; the exporter
    # leaves broker-a's figures out (never 0) and the diff, which summed without them would undercount
    assert {name: outcome for name, outcome in tools.items() if outcome != "whole"} == {
        name: outcome for name, outcome in NO_REPLICA_OF_A.items() if name in NO_PROXY}
    assert figures["mq_broker_set_master_up"] == {"broker-a": 0.0, "broker-b": 1.0}
    assert figures["rocketmq_producer_offset"] == {"broker-b": SENT / 2}
    assert "rocketmq_group_diff" not in figures
    doc, lag = json.loads(status.stdout), json.loads(progress.stdout)
    assert (status.returncode, doc["partial"], doc["messages"]) == (EXIT_PARTIAL, True, SENT // 2), status.stderr
    assert [(u["brokerName"], u["addr"]) for u in doc["unreachable"]] == [("broker-a", slave.addr)]
    assert (progress.returncode, lag["partial"], lag["diffTotal"]) == (EXIT_PARTIAL, True, LAG // 2)
