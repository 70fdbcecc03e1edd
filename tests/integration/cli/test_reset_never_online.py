"""A reset by time of a group with offsets on one broker only, nobody online, on mq's brokers: broker-a answers
CONSUMER_NOT_ONLINE and broker-b SYSTEM_ERROR "THe consumer group <G> not exist". Found in review on a 2m-2s-sync
cluster: broker-a was moved, then the command failed with broker-b's "error" (exit 1), or nothing moved, by the order
of the route; both brokers' queues are moved now, in both dialects."""

from __future__ import annotations

import pytest
from support.adminsupport import mq_here
from support.clientsupport import Cluster
from support.trafficsupport import commit, send_to

from mqtools.client.admin import SyncMQAdmin

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
CLUSTER = "ClientIT"
TOPIC = "NoOneTopic"


def committed(ns: str, group: str) -> dict[str, int | None]:
    with SyncMQAdmin(ns) as admin:
        return {q.broker_name: offset for q, offset in admin.offsets.committed_offsets(group, TOPIC).items()}


@pytest.fixture(scope="module")
def ns(cluster: Cluster) -> str:
    """The topic on both brokers, one queue each."""
    addr = cluster.namesrv.addr
    made = mq_here("admin", "topic", "create", TOPIC, "-c", CLUSTER, "-r", "1", "-w", "1", namesrv=addr)
    assert made.returncode == 0, made.stderr
    return addr


async def on_broker_a_only(ns: str, group: str) -> None:
    """The group configured everywhere, messages on both brokers, an offset committed on broker-a only, its
    consumer gone."""
    made = mq_here("admin", "group", "create", group, "-c", CLUSTER, namesrv=ns)
    assert made.returncode == 0, made.stderr
    await send_to(ns, TOPIC, {("broker-a", 0): 4, ("broker-b", 0): 2}, prefix=group)
    await commit(ns, group, TOPIC, {("broker-a", 0): 1})
    assert committed(ns, group) == {"broker-a": 1, "broker-b": None}


async def test_offset_reset_moves_the_broker_the_group_never_consumed_on(ns: str) -> None:
    await on_broker_a_only(ns, "NoOneGroup")
    reset = mq_here("admin", "offset", "reset", "NoOneGroup", TOPIC, "--latest", "--yes", namesrv=ns)
    assert reset.returncode == 0, reset.stderr
    with SyncMQAdmin(ns) as admin:
        ends = {q.broker_name: stats.max_offset for q, stats in admin.topics.topic_stats(TOPIC).items()}
    assert committed(ns, "NoOneGroup") == ends


async def test_reset_offset_by_time_moves_it_too(ns: str) -> None:
    await on_broker_a_only(ns, "NoOneGroup2")
    reset = mq_here("admin", "resetOffsetByTime", "-g", "NoOneGroup2", "-t", TOPIC, "-s", "0", namesrv=ns)
    assert reset.returncode == 0, reset.stderr
    assert committed(ns, "NoOneGroup2") == {"broker-a": 0, "broker-b": 0}
