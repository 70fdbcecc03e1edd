"""`mq admin` writes on Apache's 2m-2s cluster, each read back by Apache's mqadmin 4.9.8 (a JVM per read, as
mqadmin runs): topic create, update, perm and delete; a broker's write permission wiped and added back;
a broker config value set. The cluster is left as it was found.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from readback import config_set_read_back, mqadmin, ok, registered_now, route
from refsupport import CLUSTER
from tkworld import TOPIC, World

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300), pytest.mark.faults]

NEW_TOPIC = "TkWritten"


def test_topic_writes_read_back_by_apaches_mqadmin(worlds: dict[str, World], ref_root: Path) -> None:
    world = worlds["apache"]
    ok("topic", "create", NEW_TOPIC, "-c", CLUSTER, "--read-queues", "3", "--write-queues", "3", world=world)
    assert route(ref_root, world.namesrv, NEW_TOPIC) == {"broker-a": (3, 3, 6), "broker-b": (3, 3, 6)}
    ok("topic", "update", NEW_TOPIC, "-c", CLUSTER, "--write-queues", "2", world=world)
    assert route(ref_root, world.namesrv, NEW_TOPIC) == {"broker-a": (3, 2, 6), "broker-b": (3, 2, 6)}
    ok("topic", "perm", NEW_TOPIC, "-c", CLUSTER, "--perm", "r", world=world)
    assert route(ref_root, world.namesrv, NEW_TOPIC) == {"broker-a": (3, 2, 4), "broker-b": (3, 2, 4)}
    ok("topic", "delete", NEW_TOPIC, "-c", CLUSTER, "--yes", world=world)
    assert NEW_TOPIC not in mqadmin(ref_root, world.namesrv, "topicList").split()


def test_write_permission_wiped_and_added_back(worlds: dict[str, World], ref_root: Path) -> None:
    world = worlds["apache"]
    registered_now(world, TOPIC)  # the test before deleted a topic
    before = route(ref_root, world.namesrv, TOPIC)
    ok("broker", "perm", "wipe", "broker-a", "--yes", world=world)
    try:
        wiped = route(ref_root, world.namesrv, TOPIC)
        assert wiped["broker-a"][2] == 4 and wiped["broker-b"] == before["broker-b"], wiped
    finally:
        ok("broker", "perm", "add", "broker-a", world=world)
    assert route(ref_root, world.namesrv, TOPIC) == before


def test_broker_config_set_read_back_by_apaches_mqadmin(worlds: dict[str, World], ref_root: Path) -> None:
    world = worlds["apache"]
    addr = world.brokers["broker-a"]
    config_set_read_back(world, addr, lambda: mqadmin(ref_root, world.namesrv, "getBrokerConfig", "-b", addr))
