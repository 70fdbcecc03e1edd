"""The outage matrix on Apache RocketMQ 4.9.7 (issue: the toolkit tells the truth while the cluster is
broken): broker-a's master SIGKILLed on Apache's 2m-2s SYNC cluster, its slave alive, with known ground
truth written before the fault (messages sent to every queue, a group's committed offsets).

mq's dialect must give the whole truth, broker-a's queues read from its slave (exit 0); the mqadmin dialect
must print what Apache's mqadmin 4.9.8 prints in the same state (normalised as the other reference tests
normalise); writes refuse and name the set. The master is started again at the end, for the tests after.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import apache
import pytest
from catalogue import as_4x, normalise
from mqadminbatch import MqadminBatch
from refsupport import CLUSTER, Clusters2m2s, make_topic, name, slaves_in_sync
from support.adminsupport import mq_here
from support.presetcluster import wait_for

from mqtools.client.admin import SyncMQAdmin
from mqtools.client.admin.models.groups import ResetTarget
from mqtools.client.sync import SyncProducer
from mqtools.common.exitcodes import EXIT_OK, EXIT_REFUSED
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


def slave_knows(admin: SyncMQAdmin, addr: str, topic: str, group: str) -> bool:
    """The slave has the topic's config and the group's offsets (Apache's slave syncs them every 10 s)."""
    stats = admin.call(addr, RequestCode.GET_TOPIC_STATS_INFO, TopicRequestHeader(topic).to_ext(), ok=ANY_CODE)
    consume = admin.call(addr, RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(group, topic).to_ext(),
                         ok=ANY_CODE)
    if stats.code != ResponseCode.SUCCESS or consume.code != ResponseCode.SUCCESS or not consume.body:
        return False
    offsets = ConsumeStats.from_json(consume.body).offset_table.values()
    return len(offsets) == QUEUES and all(w.consumer_offset == COMMITTED for w in offsets)


@pytest.fixture
def master_down(clusters_2m2s: Clusters2m2s) -> Iterator[tuple[str, str, str]]:
    """(name server, topic, group) on Apache's cluster with broker-a's master SIGKILLed; restarted after."""
    cluster = clusters_2m2s.apache
    topic, group = name("OUTAGE"), name("OUTAGE_CG")
    make_topic(cluster.addr, topic, QUEUES)
    make_topic(cluster.addr, retry_topic(group), 1)  # as a consumer's start creates it: Apache's mqadmin needs its route
    with SyncProducer(name("OUTAGE_P"), namesrv=cluster.addr) as producer:
        for i in range(SENT):
            producer.send(Message(topic, f"m{i}".encode()), queue=MessageQueue(topic, BROKERS[i % 2], (i // 2) % QUEUES))
    with SyncMQAdmin(cluster.addr) as admin:
        admin.groups.create_subscription_group(SubscriptionGroupConfig(group), cluster=CLUSTER)
        admin.offsets.reset_offsets(group, topic, ResetTarget("offset", COMMITTED))
        slave = cluster.brokers["broker-a-s"].addr
        wait_for(lambda: slave_knows(admin, slave, topic, group), 40, f"broker-a's slave to know {topic}, {group}")
    cluster.brokers["broker-a"].kill()
    try:
        with SyncMQAdmin(cluster.addr) as admin:
            wait_for(lambda: 0 not in admin.cluster_info().broker_addr_table["broker-a"].broker_addrs, 30,
                     "the name server to drop broker-a's master")
        yield cluster.addr, topic, group
    finally:
        cluster.brokers["broker-a"] = apache.restart_broker(cluster.brokers["broker-a"])
        slaves_in_sync(cluster.addr, topic, list(BROKERS))


def test_a_killed_master_on_apache_reads_from_its_slave_as_apaches_mqadmin_does(
        master_down: tuple[str, str, str], mqadmin: MqadminBatch) -> None:
    namesrv, topic, group = master_down
    status = mq_here("admin", "topic", "status", topic, "-o", "json", "--timeout", "2", namesrv=namesrv)
    assert status.returncode == EXIT_OK, status.stderr
    doc = json.loads(status.stdout)
    assert (doc["partial"], doc["messages"], len(doc["queues"])) == (False, SENT, QUEUES * len(BROKERS))
    assert {q["brokerName"]: q["source"] for q in doc["queues"]} == {"broker-a": "slave", "broker-b": "master"}
    progress = mq_here("admin", "group", "progress", group, "-o", "json", "--timeout", "2", namesrv=namesrv)
    assert progress.returncode == EXIT_OK, progress.stderr
    assert (json.loads(progress.stdout)["partial"], json.loads(progress.stdout)["diffTotal"]) == (False, LAG)

    ours = normalise(mq_here("admin", "topicStatus", "-t", topic, namesrv=namesrv).stdout)
    theirs = mqadmin.run("topicStatus", "-t", topic, "-n", namesrv)
    assert sorted(as_4x("topicStatus", ours)) == sorted(normalise(theirs.out)), theirs.out + theirs.err
    assert sum(line.count("broker-a") for line in ours) == QUEUES  # Apache's too: the set read from its slave
    ours = normalise(mq_here("admin", "consumerProgress", "-g", group, namesrv=namesrv).stdout)
    theirs = mqadmin.run("consumerProgress", "-g", group, "-n", namesrv)
    assert sorted(as_4x("consumerProgress", ours)) == sorted(normalise(theirs.out)), theirs.out + theirs.err

    ha = mq_here("admin", "ha", "status", "-o", "json", "--timeout", "2", namesrv=namesrv)
    (lost,) = [g for g in json.loads(ha.stdout)["groups"] if g["brokerName"] == "broker-a"]
    assert (lost["masterAddr"], lost["error"]) == (None, "no master registered")
    listing = json.loads(mq_here("admin", "cluster", "list", "-o", "json", namesrv=namesrv).stdout)
    assert [s["brokerName"] for s in listing["brokerSetsWithoutMaster"]] == ["broker-a"]
    refused = mq_here("admin", "topic", "update", topic, "-w", "2", namesrv=namesrv)
    assert refused.returncode == EXIT_REFUSED
    assert refused.stderr.startswith("mq: error: broker set broker-a has no master registered"), refused.stderr
