"""A batch read of a 2m-2s-sync cluster whose broker-a master was SIGKILLed returns every acknowledged message."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.presetcluster import PresetCluster, preset_cluster, wait_for

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.remoting.bodies import TopicConfig

TOPIC = "SparkFailover"
N = 60


@pytest.fixture(scope="module")
def sync_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PresetCluster]:
    with preset_cluster(tmp_path_factory.mktemp("failover"), "2m-2s-sync") as cluster:
        yield cluster


def test_read_survives_a_killed_master(spark: Any, sync_cluster: PresetCluster) -> None:
    namesrv = sync_cluster.namesrv
    with SyncMQAdmin(namesrv) as admin:
        for name in ("broker-a", "broker-b"):
            admin.topics.create_topic(TopicConfig(TOPIC, 2, 2), broker_addr=sync_cluster.addr(name))
        wait_for(lambda: len(admin.queue_offsets.topic_queues(TOPIC)) == 4, 30, "route of the topic on both brokers")
        # A slave serves a topic only once it has copied the master's topic table (every 10 s, as Apache's
        # SlaveSynchronize): a master killed before then leaves its slave answering TOPIC_NOT_EXIST, as an
        # Apache slave does (CI at 373f07f).
        wait_for(lambda: TOPIC in admin.topics.topic_configs(sync_cluster.addr("broker-a-s")), 30,
                 "broker-a's slave holding the topic")
    rows = [(f"acked-{i}".encode(),) for i in range(N)]
    (spark.createDataFrame(rows, "body binary").repartition(2).write.format("rocketmq")
     .option("namesrv", namesrv).option("topic", TOPIC).mode("append").save())
    with SyncMQAdmin(namesrv) as admin:
        on_a = sum(h - lo for mq, (lo, h) in admin.queue_offsets.queue_bounds(TOPIC).items() if mq.broker_name == "broker-a")
    assert on_a > 0
    sync_cluster.kill("broker-a")
    got = (spark.read.format("rocketmq").option("namesrv", namesrv).option("topic", TOPIC)
           .option("pullTimeoutMs", "60000").load().collect())
    assert sorted(bytes(r.body) for r in got) == sorted(b for (b,) in rows)
    assert sum(1 for r in got if r.broker == "broker-a") == on_a
