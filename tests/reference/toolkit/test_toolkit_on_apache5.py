"""The toolkit on Apache RocketMQ 5.5.0: a SYNC_MASTER with its slave, the same world as on 4.9 (topics,
groups, a live Java consumer, a backlog), with Apache's mqadmin 5.5.0 as the oracle.

Every reading command of mq's dialect answers (-o table and -o json, valid JSON); the mqadmin dialect
prints what mqadmin 5.5.0 prints, haStatus included; `ha status` gives the same diff in bytes as Apache's
haStatus while the slave is frozen (SIGSTOP) behind its master, and `ha ready` says not safe, then safe once
the slave runs again; `mq top --once` fills every view; writes (topics, groups, the broker's write
permission, broker config, KV) read back by Apache, and an online offset reset the live Java consumer follows;
the `rocketmq` Spark source reads the topic exactly and `mq spark-load produce` writes to it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import apache
import pytest
from checks import dialect_rows, reading_problems
from mqadminbatch import MqadminBatch
from readback import config_set_read_back, ok, parse_consumer_config, parse_route, reset_followed
from refsupport import BROKER_PROPS, CLUSTER
from sparkjob import produces, reads_exactly
from support.adminsupport import json_of, mq_here
from tkworld import KV_NAMESPACE, LAG, LIVE, TOPIC, World, make_world

from mqtools.client.sync import SyncProducer
from mqtools.common.message import Message

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: mqadmin command -> why mq's dialect prints something else on 5.5.0 (docs/compatibility.md, Differences from Apache).
DOCUMENTED: dict[str, str] = {
    "queryMsgByKey": "mqadmin 5.5.0 adds an #IndexKey column from what 5.x brokers' index answers carry; mq's "
                     "dialect prints the three columns of mqadmin 4.9",
}
NEW_TOPIC = "Tk5Written"
NEW_GROUP = "Tk5GroupWritten"


@pytest.fixture(scope="module")
def apache5_1m1s(ref_root: Path) -> Iterator[tuple[apache.ApacheCluster, World]]:
    """Apache 5.5.0's name server, broker-a as SYNC_MASTER and its slave (a slave that does not answer
    fails a send after 1 s, not 5), with the toolkit's world made on it; gone after this module."""
    cluster = apache.start_cluster(ref_root / "apache5-1m1s", "apache-5", masters=("broker-a",), cluster=CLUSTER,
                                   syncFlushTimeout="1000", **BROKER_PROPS)
    world = None
    try:
        world = make_world("apache-5", cluster.addr)
        yield cluster, world
    finally:
        if world is not None:
            world.consumer.close()
        cluster.kill()


@pytest.fixture
def world5(apache5_1m1s: tuple[apache.ApacheCluster, World]) -> World:
    return apache5_1m1s[1]


def test_every_reading_command_answers_on_apache5(world5: World) -> None:
    failures = reading_problems(world5)
    assert not failures, "\n".join(failures)


def test_the_mqadmin_dialect_prints_what_mqadmin5_prints(world5: World, mqadmin5: MqadminBatch) -> None:
    rows, differ = dialect_rows(world5, mqadmin5, None, DOCUMENTED)
    print("\n| mqadmin command on Apache 5.5.0 | mq's dialect |\n|---|---|\n" + "\n".join(rows))
    assert not differ, "\n".join(differ)


def test_top_once_fills_every_view_on_apache5(world5: World) -> None:
    doc = json_of(mq_here("top", "--once", "-o", "json", namesrv=world5.namesrv), "TopSnapshot")
    views = doc["views"]
    brokers = views["brokers"]["rows"]
    assert sorted((b["brokerName"], b["brokerId"]) for b in brokers) == [("broker-a", 0), ("broker-a", 1)]
    assert all(b["status"] == "ok" and b["version"] == "V5_5_0" for b in brokers), brokers
    assert [(r["master"], r["diffBytes"]) for r in views["ha"]["rows"]] == [("broker-a", 0)], views["ha"]
    assert TOPIC in {t["topic"] for t in views["topics"]["rows"]}
    groups = {g["group"]: g for g in views["groups"]["rows"]}
    assert groups[LAG]["lag"] > 0 and groups[LIVE]["members"] == 1, groups


def test_the_spark_source_reads_an_apache5_topic_exactly(world5: World, tmp_path: Path) -> None:
    reads_exactly(world5, tmp_path)  # before the tests that add messages the world does not record


def test_spark_load_produces_to_apache5(world5: World, mqadmin5: MqadminBatch) -> None:
    produces(world5, mqadmin5)


def _apache_diff(mqadmin5: MqadminBatch, world: World) -> int:
    """The diff Apache's haStatus prints for broker-a's one slave ('#Diff' column of its connection table)."""
    out = mqadmin5.run("haStatus", "-b", world.brokers["broker-a"], "-n", world.namesrv).out
    lines = [line.split() for line in out.splitlines() if line.strip()]
    header = next(i for i, cells in enumerate(lines) if "#Diff" in cells)
    return int(lines[header + 1][lines[header].index("#Diff")])


def test_ha_status_and_ready_beside_apaches_hastatus(apache5_1m1s: tuple[apache.ApacheCluster, World],
                                                      mqadmin5: MqadminBatch) -> None:
    cluster, world = apache5_1m1s
    slave = cluster.brokers["broker-a-s"]
    os.kill(slave.pid, signal.SIGSTOP)
    try:
        with SyncProducer("TkFrozenProducers", namesrv=world.namesrv) as producer:
            for i in range(3):  # stored on the master; each send then waits out syncFlushTimeout
                producer.send(Message(TOPIC, f"while the slave is frozen {i}".encode()))
        theirs = _apache_diff(mqadmin5, world)
        status = json_of(mq_here("admin", "ha", "status", "-b", world.brokers["broker-a"], "-o", "json",
                                 "--timeout", "1", namesrv=world.namesrv), "HAStatus")
        (group,) = status["groups"]
        (ours,) = group["slaves"]
        assert theirs > 0 and ours["diffBytes"] == theirs, (theirs, group)
        frozen = mq_here("admin", "ha", "ready", "broker-a", "--max-diff", "0", "--timeout", "1",
                         namesrv=world.namesrv)
        assert frozen.returncode == 1 and re.search(r"not safe", frozen.stdout), frozen.stdout + frozen.stderr
    finally:
        os.kill(slave.pid, signal.SIGCONT)
    deadline = time.monotonic() + 30
    while (ready := mq_here("admin", "ha", "ready", "broker-a", "--max-diff", "0",
                            namesrv=world.namesrv)).returncode != 0:
        assert time.monotonic() < deadline, ready.stdout + ready.stderr
        time.sleep(0.5)
    assert _apache_diff(mqadmin5, world) == 0


def _read(mqadmin5: MqadminBatch, *args: str) -> str:
    """What mqadmin 5.5.0 printed; it must have succeeded."""
    done = mqadmin5.run(*args)
    assert "Exception" not in done.out + done.err, f"{args}\n{done.err}\n{done.out}"
    return done.out


def test_writes_read_back_by_apache5(apache5_1m1s: tuple[apache.ApacheCluster, World],
                                     mqadmin5: MqadminBatch) -> None:
    """Topic create/update/perm/delete, group create/update/delete, the broker's write permission wiped and
    added back, a broker config value and a KV entry, each read back by Apache: mqadmin 5.5.0, or its name
    server's kvConfig.json. The cluster is left as it was found."""
    cluster, world = apache5_1m1s
    ns, addr = world.namesrv, world.brokers["broker-a"]

    def route(topic: str) -> dict[str, tuple[int, int, int]]:
        return parse_route(_read(mqadmin5, "topicRoute", "-t", topic, "-n", ns))

    def group() -> dict[str, tuple[str, str]]:
        configs = parse_consumer_config(_read(mqadmin5, "getConsumerConfig", "-g", NEW_GROUP, "-n", ns))
        return {broker: (c["retryMaxTimes"], c["consumeEnable"]) for broker, c in configs.items()}

    def kv() -> dict[str, str]:
        kv_file = cluster.namesrv.workdir / "namesrv" / "kvConfig.json"
        return json.loads(kv_file.read_text())["configTable"][KV_NAMESPACE]

    ok("topic", "create", NEW_TOPIC, "-c", CLUSTER, "--read-queues", "3", "--write-queues", "3", world=world)
    assert route(NEW_TOPIC) == {"broker-a": (3, 3, 6)}
    ok("topic", "update", NEW_TOPIC, "-c", CLUSTER, "--write-queues", "2", world=world)
    assert route(NEW_TOPIC) == {"broker-a": (3, 2, 6)}
    ok("topic", "perm", NEW_TOPIC, "-c", CLUSTER, "--perm", "r", world=world)
    assert route(NEW_TOPIC) == {"broker-a": (3, 2, 4)}
    ok("topic", "delete", NEW_TOPIC, "-c", CLUSTER, "--yes", world=world)
    assert NEW_TOPIC not in _read(mqadmin5, "topicList", "-n", ns).split()

    before = route(TOPIC)
    ok("broker", "perm", "wipe", "broker-a", "--yes", world=world)
    try:
        assert route(TOPIC)["broker-a"][2] == 4
    finally:
        ok("broker", "perm", "add", "broker-a", world=world)
    assert route(TOPIC) == before

    ok("group", "create", NEW_GROUP, "-c", CLUSTER, "--retry-max-times", "3", world=world)
    assert group() == {"broker-a": ("3", "true")}
    ok("group", "update", NEW_GROUP, "--retry-max-times", "5", "--no-consume", world=world)
    assert group() == {"broker-a": ("5", "false")}
    ok("group", "delete", NEW_GROUP, "-c", CLUSTER, "--yes", world=world)
    # 5.x's GET_SUBSCRIPTIONGROUP_CONFIG creates a group it does not know (autoCreateSubscriptionGroup): the
    # written config is gone when the read finds the defaults again
    assert group() == {"broker-a": ("16", "true")}

    config_set_read_back(world, addr, lambda: _read(mqadmin5, "getBrokerConfig", "-b", addr, "-n", ns))

    ok("kv", "set", KV_NAMESPACE, "k2", "written by mq", world=world)
    assert kv() == {"k1": "v1", "k2": "written by mq"}
    ok("kv", "delete", KV_NAMESPACE, "k2", world=world)
    assert kv() == {"k1": "v1"}


def test_offset_reset_online_redelivers_to_the_live_java_consumer_on_apache5(world5: World) -> None:
    reset_followed(world5)
