"""`mq admin` writes on groups, offsets, name server KV, messages and dead letters, on Apache's 2m-2s
cluster, each read back by Apache itself: its mqadmin 4.9.8 (getConsumerConfig, consumerProgress), its
name server's kvConfig.json, or its Java consumer receiving what the write put back. The cluster is left
as it was found.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from javaclient import JavaClient, run_java
from readback import consumer_config, diff_total, ok, reset_followed
from refsupport import CLUSTER, Clusters2m2s, make_topic
from tkworld import KV_NAMESPACE, LIVE, World

from mqtools.client.admin.sync import SyncMQAdmin

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300), pytest.mark.faults]

NEW_GROUP = "TkGroupWritten"
DEAD_TOPIC = "TkDeadTopic"
DEAD_GROUP = "TkDead"


def test_group_create_update_delete_read_back_by_apaches_mqadmin(worlds: dict[str, World], ref_root: Path) -> None:
    world = worlds["apache"]
    ok("group", "create", NEW_GROUP, "-c", CLUSTER, "--retry-max-times", "3", world=world)
    configs = consumer_config(ref_root, world, NEW_GROUP)
    assert sorted(configs) == ["broker-a", "broker-b"], configs
    assert {(c["retryMaxTimes"], c["consumeEnable"]) for c in configs.values()} == {("3", "true")}, configs
    ok("group", "update", NEW_GROUP, "--retry-max-times", "5", "--no-consume", world=world)
    configs = consumer_config(ref_root, world, NEW_GROUP)
    assert {(c["retryMaxTimes"], c["consumeEnable"]) for c in configs.values()} == {("5", "false")}, configs
    ok("group", "delete", NEW_GROUP, "-c", CLUSTER, "--yes", world=world)
    assert consumer_config(ref_root, world, NEW_GROUP) == {}


@pytest.mark.soak  # the same reset on Apache 5.5.0 (test_toolkit_on_apache5) runs in make test
def test_offset_reset_online_redelivers_to_the_live_java_consumer(worlds: dict[str, World], ref_root: Path) -> None:
    world = worlds["apache"]
    reset_followed(world)
    assert diff_total(ref_root, world, LIVE) == 0


def test_kv_set_and_delete_reach_apaches_name_server_file(worlds: dict[str, World],
                                                          clusters_2m2s: Clusters2m2s) -> None:
    world = worlds["apache"]
    kv_file = clusters_2m2s.apache.namesrv.workdir / "namesrv" / "kvConfig.json"

    def table() -> dict[str, str]:
        return json.loads(kv_file.read_text())["configTable"][KV_NAMESPACE]

    ok("kv", "set", KV_NAMESPACE, "k2", "written by mq", world=world)
    assert table() == {"k1": "v1", "k2": "written by mq"}
    ok("kv", "delete", KV_NAMESPACE, "k2", world=world)
    assert table() == {"k1": "v1"}


def test_dlq_resend_redelivers_to_the_groups_java_consumer(worlds: dict[str, World]) -> None:
    """Messages sent by `mq admin msg send`, given up on by a Java consumer (no retries), listed by `dlq
    list` and resent: the group's next Java consumer receives each once more, keys and tags intact."""
    world = worlds["apache"]
    make_topic(world.namesrv, DEAD_TOPIC)
    keys = [f"dead-{i}" for i in range(3)]
    for key in keys:
        ok("msg", "send", DEAD_TOPIC, f"body of {key}", "--keys", key, "--tags", "TagD", world=world)
    dying = JavaClient("consume", world.namesrv, "--topic", DEAD_TOPIC, "--group", DEAD_GROUP, "--fail-times", "99",
                       "--max-reconsume", "0", "--expect", "0", "--timeout-s", "60")
    try:
        dying.wait_for(lambda ev: sum(e["event"] == "received" for e in ev) >= len(keys), 60, "3 refused deliveries")
    finally:
        dying.close()
    deadline = time.monotonic() + 30
    with SyncMQAdmin(world.namesrv) as admin:
        while len(admin.dlq.dead_messages(DEAD_GROUP).messages) < len(keys):
            assert time.monotonic() < deadline, "the given-up messages never reached the DLQ"
            time.sleep(0.2)
    listed = ok("dlq", "list", DEAD_GROUP, "-o", "json", world=world)
    assert sorted(key for m in json.loads(listed)["messages"] for key in m["keys"]) == keys, listed
    ok("dlq", "resend", DEAD_GROUP, "--all", "--yes", world=world)
    again = run_java("consume", world.namesrv, "--topic", DEAD_TOPIC, "--group", DEAD_GROUP, "--expect", "3",
                     "--timeout-s", "60").of("received")
    assert sorted((e["keys"], e["tags"], e["topic"], e["body"]) for e in again) == [
        (key, "TagD", DEAD_TOPIC, f"body of {key}") for key in keys]
