"""`mq admin offset reset|skip|clone`: dry runs change nothing, real resets land exactly where the dry
run said, and an online consumer re-reads from there without a restart."""

from __future__ import annotations

import asyncio
import time

import pytest
from support.adminsupport import json_of, mq_here, one_line_error
from support.clientsupport import Cluster, until
from support.trafficsupport import amq, commit, online, send_to

from mqtools.common.message import MessageExt

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]
CLUSTER = "ClientIT"
QUEUES = (("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1))


def create_topic(cluster: Cluster, topic: str) -> None:
    done = mq_here("admin", "topic", "create", topic, "-c", CLUSTER, "-r", "2", "-w", "2", namesrv=cluster.namesrv.addr)
    assert done.returncode == 0, done.stderr


def committed(cluster: Cluster, group: str, topic: str) -> dict[tuple[str, int], int | None]:
    doc = json_of(mq_here("admin", "group", "progress", group, "-t", topic, "-o", "json", namesrv=cluster.namesrv.addr),
                  "GroupProgress")
    return {(q["brokerName"], q["queueId"]): q["consumerOffset"] for q in doc["queues"]}


def moves(doc: dict) -> dict[tuple[str, int], tuple[int | None, int]]:
    return {(q["brokerName"], q["queueId"]): (q["old"], q["new"]) for q in doc["queues"]}


async def test_dry_run_then_reset_lands_on_the_plan_and_the_online_consumer_rereads(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    create_topic(cluster, "OcReset")
    await send_to(ns, "OcReset", dict.fromkeys(QUEUES, 2), prefix="early")
    await asyncio.sleep(0.05)
    middle = int(time.time() * 1000)
    await asyncio.sleep(0.05)
    late = await send_to(ns, "OcReset", {("broker-a", 0): 3, ("broker-b", 1): 2}, prefix="late")
    got: list[MessageExt] = []
    async with online(ns, "OcResetGroup", "OcReset", got):
        await until(lambda: len(got) >= 13, 30, "13 messages consumed")
        await until(lambda: sum(v or 0 for v in committed(cluster, "OcResetGroup", "OcReset").values()) == 13, 30,
                    "13 committed")
        plan = json_of(await amq("admin", "offset", "reset", "OcResetGroup", "OcReset", "--to-time", str(middle),
                                 "--dry-run", "-o", "json", namesrv=ns), "OffsetReset")
        assert plan["dryRun"] and plan["target"] == f"time {middle}"
        assert moves(plan) == {("broker-a", 0): (5, 2), ("broker-a", 1): (2, 2), ("broker-b", 0): (2, 2),
                               ("broker-b", 1): (4, 2)}
        assert sum(v or 0 for v in committed(cluster, "OcResetGroup", "OcReset").values()) == 13
        before = len(got)
        done = json_of(await amq("admin", "offset", "reset", "OcResetGroup", "OcReset", "--to-time", str(middle),
                                 "--yes", "-o", "json", namesrv=ns), "OffsetReset")
        assert not done["dryRun"] and moves(done) == moves(plan)
        assert {q["pushed"] for q in done["queues"]} == {True}  # both brokers told the online consumer
        assert {q["pushed"] for q in plan["queues"]} == {None}
        await until(lambda: len(got) >= before + len(late), 30, "the late messages consumed again")
        again = got[before:]
        assert sorted(m.body.decode() for m in again) == sorted(late)
        names = {proc.addr: name for name, proc in cluster.brokers.items()}
        for (broker, queue_id), (_, new) in moves(plan).items():
            offsets = [m.queue_offset for m in again
                       if (names[f"{m.store_host[0]}:{m.store_host[1]}"], m.queue_id) == (broker, queue_id)]
            assert not offsets or min(offsets) == new, (broker, queue_id, offsets)


async def test_explicit_offsets_shift_earliest_latest_skip_and_clone(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    create_topic(cluster, "OcMoves")
    await send_to(ns, "OcMoves", dict.fromkeys(QUEUES, 4))
    await commit(ns, "OcMovesGroup", "OcMoves", {("broker-a", 0): 2, ("broker-a", 1): 3, ("broker-b", 0): 4})

    def reset(*args: str) -> dict:
        return json_of(mq_here("admin", "offset", "reset", "OcMovesGroup", "OcMoves", *args, "--yes", "-o", "json",
                          namesrv=ns), "OffsetReset")

    one = reset("--to-offset", "1", "-b", "broker-a", "-q", "1")
    assert moves(one) == {("broker-a", 1): (3, 1)} and one["target"] == "offset 1 on broker-a:1"
    assert committed(cluster, "OcMovesGroup", "OcMoves") == {("broker-a", 0): 2, ("broker-a", 1): 1,
                                                            ("broker-b", 0): 4, ("broker-b", 1): 0}
    shifted = reset("--shift", "-3")
    assert moves(shifted) == {("broker-a", 0): (2, 0), ("broker-a", 1): (1, 0), ("broker-b", 0): (4, 1)}
    clamped = reset("--to-offset", "99")
    assert {k: v[1] for k, v in moves(clamped).items()} == dict.fromkeys(QUEUES, 4)
    assert {k: v[1] for k, v in moves(reset("--earliest")).items()} == dict.fromkeys(QUEUES, 0)
    assert {k: v[1] for k, v in moves(reset("--latest")).items()} == dict.fromkeys(QUEUES, 4)
    reset("--earliest")
    skip = json_of(mq_here("admin", "offset", "skip", "OcMovesGroup", "OcMoves", "--yes", "-o", "json", namesrv=ns),
                   "OffsetReset")
    assert skip["operation"] == "skip" and moves(skip) == dict.fromkeys(QUEUES, (0, 4))
    reset("--to-offset", "3", "-b", "broker-b", "-q", "0")
    cloned = json_of(mq_here("admin", "offset", "clone", "OcMovesGroup", "OcMovesCopy", "OcMoves", "--yes", "-o", "json",
                        namesrv=ns), "OffsetReset")
    assert cloned["source"] == "OcMovesGroup" and cloned["group"] == "OcMovesCopy"
    assert moves(cloned) == {("broker-a", 0): (None, 4), ("broker-a", 1): (None, 4), ("broker-b", 0): (None, 3),
                             ("broker-b", 1): (None, 4)}
    assert committed(cluster, "OcMovesCopy", "OcMoves") == {("broker-a", 0): 4, ("broker-a", 1): 4,
                                                           ("broker-b", 0): 3, ("broker-b", 1): 4}
    table = mq_here("admin", "offset", "reset", "OcMovesGroup", "OcMoves", "--earliest", "--dry-run", namesrv=ns)
    lines = table.stdout.splitlines()
    assert lines[0] == "dry run, nothing changed: reset OcMovesGroup on OcMoves to earliest"
    assert lines[1].split() == ["BROKER", "QID", "OLD", "NEW", "MOVE"] and lines[4].split() == ["broker-b", "0", "3",
                                                                                                 "0", "-3"]
    assert committed(cluster, "OcMovesGroup", "OcMoves")[("broker-b", 0)] == 3


async def test_bad_input_is_one_line_and_changes_nothing(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    create_topic(cluster, "OcBad")
    await send_to(ns, "OcBad", dict.fromkeys(QUEUES, 2))
    await commit(ns, "OcBadGroup", "OcBad", dict.fromkeys(QUEUES, 1))
    reset = ("admin", "offset", "reset", "OcBadGroup", "OcBad")
    for args, code, fragment in [
        ((), 2, "give exactly one of"),
        (("--earliest", "--latest"), 2, "not --earliest and --latest"),
        (("--to-time", "yesterday-ish"), 2, "bad time 'yesterday-ish'"),
        (("--to-offset", "1", "-b", "broker-a"), 2, "-b BROKER_NAME and -q QUEUE_ID together"),
        (("--shift", "1", "-b", "broker-a", "-q", "0"), 2, "-b/-q go with --to-offset"),
        (("--to-offset", "-1"), 2, "--to-offset"),
        (("--earliest",), 2, "Refusing without --yes"),
        (("--to-offset", "0", "-b", "broker-a", "-q", "9", "--yes"), 1, "broker-a:9 is not a queue of topic OcBad"),
    ]:
        one_line_error(mq_here(*reset, *args, namesrv=ns), code, fragment)
    one_line_error(mq_here("admin", "offset", "reset", "OcNoGroup", "OcBad", "--earliest", "--yes", namesrv=ns), 1,
                   "OcNoGroup", "SUBSCRIPTION_GROUP_NOT_EXIST")
    one_line_error(mq_here("admin", "offset", "reset", "OcBadGroup", "OcNoTopic", "--latest", "--yes", namesrv=ns), 1,
                   "OcNoTopic", "TOPIC_NOT_EXIST")
    one_line_error(mq_here("admin", "offset", "clone", "OcNoGroup", "OcBadGroup", "OcBad", "--yes", namesrv=ns), 1,
                   "OcNoGroup")
    assert committed(cluster, "OcBadGroup", "OcBad") == dict.fromkeys(QUEUES, 1)
