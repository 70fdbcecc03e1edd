"""F6 of the outage matrix: a master partitioned from the name servers and its slave, alive for clients
(issue: the toolkit tells the truth while the cluster is broken).

A 2m-2s-sync preset whose processes run in network namespaces (`mq cluster up --netns`, root), its name
server expiring a silent broker after 15 s (`--namesrv-set brokerChannelExpiredTime=15000`; brokers register
every 10 s). Known ground truth is written first. broker-a's master is then cut off from every other
process (clients still reach it, as the partition drills do): while the name server still lists it, every
read comes whole from it; once the name server has dropped it, the set is master-less and read from its
slave, whole (every message was on the slave before the cut), writes refuse, `ha status` and `mq top` name
it, and the master itself still answers a client that asks it. Healed, it registers again and reads come
from it once more.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from support.adminsupport import mq
from support.outagesweep import MCP_READS, mcp_sweep
from support.ports import random_base_port
from support.presetcluster import wait_for
from support.promsupport import exported

from mqtools.client.admin import SyncMQAdmin
from mqtools.client.admin.models.groups import ResetTarget
from mqtools.client.sync import SyncProducer
from mqtools.cluster import netns
from mqtools.cluster import supervisor as sv
from mqtools.common import properties as P
from mqtools.common.exitcodes import EXIT_OK, EXIT_REFUSED
from mqtools.common.message import Message
from mqtools.remoting.bodies import ConsumeStats, MessageQueue, SubscriptionGroupConfig, TopicConfig
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import GetConsumeStatsRequestHeader

pytestmark = [pytest.mark.integration, pytest.mark.faults, pytest.mark.timeout(300),
              pytest.mark.skipif(netns.unavailable() is not None, reason=f"partitions: {netns.unavailable()}")]
TOPIC, GROUP = "PartitionTopic", "PartitionGroup"
BROKERS = ("broker-a", "broker-b")
PER_QUEUE, COMMITTED = 10, 4
SENT = PER_QUEUE * 4 * len(BROKERS)
LAG = (PER_QUEUE - COMMITTED) * 4 * len(BROKERS)
FIRST_ON_A: dict[str, str] = {}
"""broker-a's first message (key0): its offset msgId, filled by the fixture."""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return mq(*args, timeout=120.0)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sv.ClusterState]:
    root = tmp_path_factory.mktemp("partition") / "cluster"
    try:
        up = cli("cluster", "up", "--preset", "2m-2s-sync", "--netns", "--dir", str(root), "--base-port",
                 str(random_base_port()), "--set", "registerNameServerPeriod=10000",
                 "--namesrv-set", "brokerChannelExpiredTime=15000", "--namesrv-set", "scanNotActiveBrokerInterval=1000")
        assert up.returncode == 0, up.stdout + up.stderr
        state = sv.load_state(root)
        assert state is not None
        write_truth(state)
        yield state
    finally:
        cli("cluster", "down", "--dir", str(root), "--grace", "10")


def addr(state: sv.ClusterState, name: str) -> str:
    return next(p.addr for p in state.procs if p.name == name)


def write_truth(state: sv.ClusterState) -> None:
    """SENT messages over 4 queues on each master, the group committed at COMMITTED everywhere, and both
    slaves knowing the topic and the offsets (mq's slaves sync them every 10 s)."""
    with SyncMQAdmin(state.namesrv_addr) as admin:
        for broker in BROKERS:
            admin.topics.create_topic(TopicConfig(TOPIC, 4, 4), broker_addr=addr(state, broker))
            admin.groups.create_subscription_group(SubscriptionGroupConfig(GROUP), broker_addr=addr(state, broker))
        with SyncProducer("partition-producer", namesrv=state.namesrv_addr) as producer:
            for i in range(SENT):
                sent = producer.send(Message(TOPIC, f"m{i}".encode(), properties={P.KEYS: f"key{i}"}),
                                     queue=MessageQueue(TOPIC, BROKERS[i % 2], (i // 2) % 4))
                if i == 0:
                    FIRST_ON_A["msg"] = sent.offset_msg_id
        admin.offsets.reset_offsets(GROUP, TOPIC, ResetTarget("offset", COMMITTED))

        def knows(slave: str) -> bool:
            header = GetConsumeStatsRequestHeader(GROUP, TOPIC).to_ext()
            stats = admin.call(slave, RequestCode.GET_CONSUME_STATS, header, ok=tuple(ResponseCode))
            if stats.code != ResponseCode.SUCCESS or not stats.body:
                return False
            return [w.consumer_offset for w in ConsumeStats.from_json(stats.body).offset_table.values()] == [COMMITTED] * 4

        for slave in ("broker-a-s", "broker-b-s"):
            where = addr(state, slave)
            wait_for(lambda a=where: knows(a), 40, f"{slave} to know {TOPIC}, {GROUP}")


def reads(state: sv.ClusterState) -> dict[str, dict[str, set[str]]]:
    """topic status and group progress, asserted whole (exit 0, every message, the whole lag); the source
    of each set's figures in each."""
    found: dict[str, dict[str, set[str]]] = {}
    for args, key, want in ((("topic", "status", TOPIC), "messages", SENT), (("group", "progress", GROUP), "diffTotal", LAG)):
        result = cli("admin", *args, "-o", "json", "--timeout", "2", "-n", state.namesrv_addr)
        assert result.returncode == EXIT_OK, result.stdout + result.stderr
        doc = json.loads(result.stdout)
        assert (doc["partial"], doc[key]) == (False, want), doc
        sources: dict[str, set[str]] = {}
        for q in doc["queues"]:
            sources.setdefault(q["brokerName"], set()).add(q["source"])
        found[args[0]] = sources
    return found


def master_registered(state: sv.ClusterState) -> bool:
    with SyncMQAdmin(state.namesrv_addr) as admin:
        return 0 in admin.cluster_info().broker_addr_table["broker-a"].broker_addrs


def test_a_master_cut_off_from_the_name_servers_is_read_from_its_slave_once_dropped(cluster: sv.ClusterState) -> None:
    state = cluster
    from_masters = {"broker-a": {"master"}, "broker-b": {"master"}}
    assert reads(state) == {"topic": from_masters, "group": from_masters}
    layout = netns.Layout(state.netns_tag)
    k = [p.name for p in state.procs].index("broker-a")
    netns.partition(layout, k)
    try:
        # still registered: the truth comes from the master, which clients still reach
        assert reads(state) == {"topic": from_masters, "group": from_masters}
        wait_for(lambda: not master_registered(state), 40, "the name server to drop broker-a's master")
        from_slave = {"broker-a": {"slave"}, "broker-b": {"master"}}
        assert reads(state) == {"topic": from_slave, "group": from_slave}
        ns = state.namesrv_addr
        ha = cli("admin", "ha", "status", "-o", "json", "--timeout", "2", "-n", ns)
        (lost,) = [g for g in json.loads(ha.stdout)["groups"] if g["brokerName"] == "broker-a"]
        assert (lost["masterAddr"], lost["error"]) == (None, "no master registered"), lost
        refused = cli("admin", "topic", "update", TOPIC, "-w", "2", "-n", ns)
        assert refused.returncode == EXIT_REFUSED
        assert refused.stderr.startswith("mq: error: broker set broker-a has no master registered"), refused.stderr
        top = cli("top", "--once", "-o", "json", "-n", ns)
        assert top.returncode == EXIT_OK, top.stderr
        brokers = json.loads(top.stdout)["views"]["brokers"]["rows"]
        assert [(r["brokerName"], r["brokerId"]) for r in brokers if r["status"] == "no master"] == [("broker-a", 0)]
        # MCP's read tools whole (the set from its slave), and the exporter: the set has no master, its
        # figures are read from the slave, and the lag is counted whole
        values = {"topic": TOPIC, "group": GROUP, "addr": addr(state, "broker-b"), "key": "key0", **FIRST_ON_A}
        assert mcp_sweep(ns, values) == dict.fromkeys(set(MCP_READS) - {"proxy_clients"}, "whole")
        figures = exported(ns, TOPIC, GROUP)
        assert figures["mq_broker_set_master_up"] == {"broker-a": 0.0, "broker-b": 1.0}
        assert figures["rocketmq_producer_offset"] == {"broker-a": SENT / 2, "broker-b": SENT / 2}
        assert figures["rocketmq_group_diff"] == {TOPIC: LAG}
        # the master is alive: a client that asks it directly is answered
        alive = cli("admin", "broker", "status", addr(state, "broker-a"), "-o", "json", "--timeout", "2", "-n", ns)
        assert alive.returncode == EXIT_OK, alive.stdout + alive.stderr
    finally:
        netns.heal(layout, k)
    wait_for(lambda: master_registered(state), 40, "broker-a's master to register again")
    assert reads(state) == {"topic": from_masters, "group": from_masters}
