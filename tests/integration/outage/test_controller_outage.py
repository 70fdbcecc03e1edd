"""F7 of the outage matrix: controller mode (2m-2s-controller), broker-a's master SIGKILLed, read before
and after the controllers elect its slave.

Ground truth is written first (messages to every queue of both sets, a group's committed offsets). Right
after the kill every read is whole (broker-a's queues from whichever replica answers, the slave or the
newly elected master); once elected, every figure comes from masters again and writes are taken, not
refused: a set whose master was replaced has a master.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from support.adminsupport import mq_here
from support.outagesweep import MCP_READS, mcp_sweep, sweep
from support.presetcluster import PresetCluster, preset_cluster, wait_for
from support.promsupport import exported

from mqtools.client.admin import SyncMQAdmin
from mqtools.client.admin.models.groups import ResetTarget
from mqtools.client.sync import SyncProducer
from mqtools.cluster import supervisor as sv
from mqtools.common import properties as P
from mqtools.common.exitcodes import EXIT_OK, EXIT_REFUSED
from mqtools.common.message import Message
from mqtools.remoting.bodies import MessageQueue, SubscriptionGroupConfig, TopicConfig

pytestmark = [pytest.mark.integration, pytest.mark.faults, pytest.mark.timeout(300)]
TOPIC, GROUP = "CtlOutageTopic", "CtlOutageGroup"
PER_QUEUE, COMMITTED, BROKERS = 10, 4, ("broker-a", "broker-b")
SENT = PER_QUEUE * 4 * len(BROKERS)
LAG = (PER_QUEUE - COMMITTED) * 4 * len(BROKERS)
FIRST_ON_A: dict[str, str] = {}
"""broker-a's first message (key0): its offset msgId and msgId, filled by the fixture."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PresetCluster]:
    with preset_cluster(tmp_path_factory.mktemp("ctl-outage"), "2m-2s-controller") as running:
        with SyncMQAdmin(running.namesrv) as admin:
            masters = admin.master_addrs()
            for broker in BROKERS:
                admin.topics.create_topic(TopicConfig(TOPIC, 4, 4), broker_addr=masters[broker])
                admin.groups.create_subscription_group(SubscriptionGroupConfig(GROUP), broker_addr=masters[broker])
        with SyncProducer("ctl-outage-producer", namesrv=running.namesrv) as producer:
            for i in range(SENT):  # SYNC puts acknowledged by the whole SyncStateSet
                sent = producer.send(Message(TOPIC, f"m{i}".encode(), properties={P.KEYS: f"key{i}"}),
                                     queue=MessageQueue(TOPIC, BROKERS[i % 2], (i // 2) % 4))
                if i == 0:
                    FIRST_ON_A.update(msg=sent.offset_msg_id, uniq=sent.msg_id)
        with SyncMQAdmin(running.namesrv) as admin:
            admin.offsets.reset_offsets(GROUP, TOPIC, ResetTarget("offset", COMMITTED))
        yield running


def read(cluster: PresetCluster, *args: str) -> dict:
    result = mq_here("admin", *args, "-o", "json", "--timeout", "2", namesrv=cluster.namesrv)
    assert result.returncode == EXIT_OK, result.stdout + result.stderr
    return json.loads(result.stdout)


def master_of(cluster: PresetCluster, broker: str) -> str | None:
    with SyncMQAdmin(cluster.namesrv) as admin:
        data = admin.cluster_info().broker_addr_table.get(broker)
        return None if data is None else data.broker_addrs.get(0)


def test_reads_stay_whole_across_the_election_and_writes_resume_after_it(cluster: PresetCluster) -> None:
    old = master_of(cluster, "broker-a")
    (name,) = [n for n in cluster.rows if n.startswith("broker-a") and cluster.addr(n) == old]
    with SyncMQAdmin(cluster.namesrv) as admin:  # the slave holds the group's offsets (metadata sync, 1 s)
        slave = next(a for i, a in admin.cluster_info().broker_addr_table["broker-a"].broker_addrs.items() if i)
        wait_for(lambda: admin.offsets.committed_offsets(GROUP, TOPIC) and
                 _slave_offsets(admin, slave) == [COMMITTED] * 4, 30, "the slave to hold the offsets")
    controllers = sv.load_state(cluster.state).controller_addr
    assert controllers is not None
    cluster.kill(name)
    for args in (["controller", "metadata"], ["controller", "sync-state-set", "broker-a"]):  # the controllers hold on
        result = mq_here("admin", *args, "-a", controllers, "-o", "json", "--timeout", "2")
        assert result.returncode == EXIT_OK and json.loads(result.stdout)["partial"] is False, result.stderr
    during = read(cluster, "topic", "status", TOPIC)
    assert (during["partial"], during["messages"], len(during["queues"])) == (False, SENT, 8)
    progress = read(cluster, "group", "progress", GROUP)
    assert (progress["partial"], progress["diffTotal"]) == (False, LAG)

    wait_for(lambda: master_of(cluster, "broker-a") not in (None, old), 30, "the controllers to elect a master")
    after = read(cluster, "topic", "status", TOPIC)
    assert (after["partial"], after["messages"]) == (False, SENT)
    assert {q["source"] for q in after["queues"]} == {"master"}
    assert read(cluster, "group", "progress", GROUP)["diffTotal"] == LAG
    listing = read(cluster, "cluster", "list")
    assert listing["brokerSetsWithoutMaster"] == []
    values = {"topic": TOPIC, "group": GROUP, "addr": master_of(cluster, "broker-b") or "", "key": "key0", **FIRST_ON_A}
    codes = sweep(cluster.namesrv, values)
    # every read whole after the election (a message the dead master stored read from the new one); the new
    # master's SyncStateSet is itself alone until the old master returns, so `ha ready` says not safe; and
    # mqadmin's queryMsgById, as Apache's, finds the id's broker gone and tries it as a unique key
    assert {name: code for name, code in codes.items() if code != EXIT_OK} == {
        "ha ready": EXIT_REFUSED, "queryMsgById": EXIT_REFUSED}
    # MCP's read tools and the exporter the same: whole, the new master up, every message and the lag counted
    assert mcp_sweep(cluster.namesrv, values) == dict.fromkeys(set(MCP_READS) - {"proxy_clients"}, "whole")
    figures = exported(cluster.namesrv, TOPIC, GROUP)
    assert figures["mq_broker_set_master_up"] == {"broker-a": 1.0, "broker-b": 1.0}
    assert figures["rocketmq_producer_offset"] == {"broker-a": SENT / 2, "broker-b": SENT / 2}
    assert figures["rocketmq_group_diff"] == {TOPIC: LAG}
    write = mq_here("admin", "topic", "update", TOPIC, "-w", "4", namesrv=cluster.namesrv)
    assert write.returncode == EXIT_OK, write.stderr  # the set has a master again: writes are taken


def _slave_offsets(admin: SyncMQAdmin, slave: str) -> list[int]:
    from mqtools.remoting.bodies import ConsumeStats
    from mqtools.remoting.codes import RequestCode, ResponseCode
    from mqtools.remoting.headers import GetConsumeStatsRequestHeader

    resp = admin.call(slave, RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(GROUP, TOPIC).to_ext(),
                      ok=tuple(ResponseCode))
    if resp.code != ResponseCode.SUCCESS or not resp.body:
        return []
    return [w.consumer_offset for w in ConsumeStats.from_json(resp.body).offset_table.values()]
