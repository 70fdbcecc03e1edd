"""The toolkit on Apache RocketMQ 5.5.0: a SYNC_MASTER with its slave, the same world as on 4.9 (topics,
groups, a live Java consumer, a backlog), with Apache's mqadmin 5.5.0 as the oracle.

Every reading command of mq's dialect answers (-o table and -o json, valid JSON); the mqadmin dialect
prints what mqadmin 5.5.0 prints, haStatus included; `ha status` gives the same diff in bytes as Apache's
haStatus while the slave is frozen (SIGSTOP) behind its master, and `ha ready` says not safe, then safe once
the slave runs again; `mq top --once` fills every view.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import apache
import pytest
from adminsupport import json_of, mq_here
from checks import dialect_rows, reading_problems
from mqadminbatch import MqadminBatch
from refsupport import BROKER_PROPS, CLUSTER
from tkworld import LAG, LIVE, TOPIC, World, make_world

from mqtools.client.sync import SyncProducer
from mqtools.common.message import Message

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: mqadmin command -> why mq's dialect prints something else on 5.5.0 (README, Differences from Apache).
DOCUMENTED: dict[str, str] = {
    "queryMsgByKey": "mqadmin 5.5.0 adds an #IndexKey column from what 5.x brokers' index answers carry; mq's "
                     "dialect prints the three columns of mqadmin 4.9",
}


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
