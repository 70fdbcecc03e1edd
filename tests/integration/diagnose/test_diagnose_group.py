"""`mq admin diagnose group` against real conditions on a local cluster, each giving its verdict and no other.

Members are consumer processes (tests/support/consumerproc.py), so one can be paused with SIGSTOP; load comes from
a producer thread of this process. Each test has its own topic and group.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support.adminsupport import json_of, mq
from support.clientsupport import Cluster, create_topic, two_broker_cluster, until
from support.consumerproc import ConsumerProc

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.client.sync import SyncProducer
from mqtools.common.exitcodes import EXIT_OK, EXIT_REFUSED
from mqtools.common.message import Message

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

WINDOW = "10"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from two_broker_cluster(tmp_path_factory.mktemp("diagnose"))


@contextmanager
def load(namesrv: str, *topics: str, rate: float) -> Iterator[None]:
    """Sends to `topics` in turn at `rate` msgs/s until the block ends."""
    stop = threading.Event()

    def run() -> None:
        with SyncProducer("PG_DIAGNOSE", namesrv=namesrv) as producer:
            i = 0
            began = time.monotonic()
            while not stop.is_set():
                producer.send(Message(topics[i % len(topics)], f"m-{i}".encode()))
                i += 1
                stop.wait(max(0.0, began + i / rate - time.monotonic()))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(30)


@contextmanager
def members(namesrv: str, group: str, *specs: tuple[str, ...]) -> Iterator[list[ConsumerProc]]:
    """Consumer processes of `group`, one per spec (topic, options...); all stopped at the end."""
    started: list[ConsumerProc] = []
    try:
        for topic, *options in specs:
            started.append(ConsumerProc(namesrv, group, topic, *options))
        yield started
    finally:
        for proc in started:
            proc.stop()


def diagnose(cluster: Cluster, group: str, exit_code: int, *options: str) -> dict[str, Any]:
    return json_of(mq("admin", "diagnose", "group", group, "--window", WINDOW, "-o", "json", *options,
                      namesrv=cluster.namesrv.addr, timeout=120), "GroupDiagnosis", exit_code)


def topic(cluster: Cluster, name: str) -> str:
    asyncio.run(create_topic(cluster, name, queues=2))
    return name


def lag(cluster: Cluster, group: str) -> int:
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        return admin.groups.consumer_progress(group).total_diff


def wait(check: Any, timeout: float, what: str) -> None:
    asyncio.run(until(check, timeout, what))


def test_healthy_then_stalled_when_its_member_is_paused_then_offline(cluster: Cluster) -> None:
    t = topic(cluster, "DgStall")
    with load(cluster.namesrv.addr, t, rate=20), members(cluster.namesrv.addr, "CG_DG_STALL", (t,)) as (member,):
        wait(lambda: lag(cluster, "CG_DG_STALL") < 20, 30, "the member caught up")
        healthy = diagnose(cluster, "CG_DG_STALL", EXIT_OK)
        assert (healthy["verdict"], healthy["also"]) == ("healthy", []), healthy
        assert [m["clientId"] for m in healthy["members"]] == [member.client_id]
        assert all(q["owner"] == member.client_id for q in healthy["queues"])
        member.pause()
        try:
            stalled = diagnose(cluster, "CG_DG_STALL", EXIT_REFUSED)
        finally:
            member.resume()
        assert (stalled["verdict"], stalled["also"]) == ("stalled", []), stalled
        assert stalled["summary"].startswith(f"{sum(1 for q in stalled['queues'] if q['lag'] and q['topic'] == t)} "
                                             "queue(s) made no progress")
        assert all(q["consumedPerSec"] == 0 for q in stalled["queues"] if q["topic"] == t)
        member.stop()
        offline = diagnose(cluster, "CG_DG_STALL", EXIT_REFUSED)
    assert (offline["verdict"], offline["also"], offline["members"]) == ("offline", [], []), offline
    assert offline["lag"] > 0 and "mq admin group connections CG_DG_STALL" in offline["actions"]


def test_slow_when_the_listener_cannot_keep_up(cluster: Cluster) -> None:
    t = topic(cluster, "DgSlow")
    with load(cluster.namesrv.addr, t, rate=60), \
            members(cluster.namesrv.addr, "CG_DG_SLOW", (t, "--sleep", "0.05", "--threads", "1")):
        wait(lambda: lag(cluster, "CG_DG_SLOW") > 200, 30, "a backlog")
        slow = diagnose(cluster, "CG_DG_SLOW", EXIT_REFUSED, "--lag-ok", "100")
    assert (slow["verdict"], slow["also"]) == ("slow", []), slow
    assert slow["consumeTps"] > 0 and slow["produceTps"] > slow["consumeTps"] and slow["drainSeconds"] is None
    assert slow["lag"] > slow["lagAtStart"]


def test_blocked_by_retries_when_every_message_fails(cluster: Cluster) -> None:
    t = topic(cluster, "DgRetry")
    with load(cluster.namesrv.addr, t, rate=20), members(cluster.namesrv.addr, "CG_DG_RETRY", (t, "--fail")):
        wait(lambda: lag(cluster, "CG_DG_RETRY") < 20, 30, "the member took what was sent")
        blocked = diagnose(cluster, "CG_DG_RETRY", EXIT_REFUSED)
    assert (blocked["verdict"], blocked["also"]) == ("blocked by retries", []), blocked
    assert blocked["retryGrowth"] >= 100 and "sent back for retry" in blocked["summary"]


def test_unowned_queues_when_members_subscribe_differently(cluster: Cluster) -> None:
    one, other = topic(cluster, "DgUnownedA"), topic(cluster, "DgUnownedB")
    with load(cluster.namesrv.addr, one, other, rate=20), \
            members(cluster.namesrv.addr, "CG_DG_UNOWNED", (one,), (other,)):
        time.sleep(3)  # both members rebalanced against each other
        unowned = diagnose(cluster, "CG_DG_UNOWNED", EXIT_REFUSED)
    assert (unowned["verdict"], unowned["also"]) == ("unowned queues", []), unowned
    free = [q for q in unowned["queues"] if q["owner"] is None and not q["topic"].startswith("%RETRY%")]
    assert free and unowned["summary"].startswith(f"{len(free)} queue(s) held by no online member")


def test_rebalancing_when_a_member_joins(cluster: Cluster) -> None:
    t = topic(cluster, "DgJoin")
    with load(cluster.namesrv.addr, t, rate=20), members(cluster.namesrv.addr, "CG_DG_JOIN", (t,)):
        wait(lambda: lag(cluster, "CG_DG_JOIN") < 20, 30, "the member caught up")
        got: dict[str, Any] = {}
        running = threading.Thread(target=lambda: got.update(diagnose(cluster, "CG_DG_JOIN", EXIT_OK)))
        running.start()
        time.sleep(3)
        with members(cluster.namesrv.addr, "CG_DG_JOIN", (t,)) as (joined,):
            running.join(60)
    assert (got["verdict"], got["also"]) == ("rebalancing", []), got
    assert f"joined {joined.client_id}" in got["summary"]


def test_stuck_orderly_queue_when_the_lock_holder_makes_no_progress(cluster: Cluster) -> None:
    t = topic(cluster, "DgOrderly")
    with load(cluster.namesrv.addr, t, rate=10), \
            members(cluster.namesrv.addr, "CG_DG_ORDERLY", (t, "--orderly", "--hang")) as (holder,):
        wait(lambda: lag(cluster, "CG_DG_ORDERLY") > 20, 30, "messages waiting")
        stuck = diagnose(cluster, "CG_DG_ORDERLY", EXIT_REFUSED)
    assert (stuck["verdict"], stuck["also"]) == ("stuck orderly queue", []), stuck
    assert stuck["members"][0]["orderly"] is True and f"held by {holder.client_id}" in stuck["summary"]
    assert all(q["locked"] for q in stuck["queues"] if q["topic"] == t)


def test_unknown_group_is_named(cluster: Cluster, tmp_path: Path) -> None:
    unknown = diagnose(cluster, "CG_DG_NOBODY", 3)
    assert unknown["verdict"] == "unknown" and "consume stats" in unknown["summary"]
