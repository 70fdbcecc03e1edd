"""`mq admin group ...` and `mq admin producer connections` against two real brokers and real clients."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
from support.adminsupport import json_of, mq_here, one_line_error
from support.clientsupport import Cluster, until
from support.trafficsupport import amq, commit, online, send_to

from mqtools.client.producer import Producer
from mqtools.common.message import Message, MessageExt

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]
CLUSTER = "ClientIT"


def create_topic(cluster: Cluster, topic: str, queues: int = 2) -> None:
    done = mq_here("admin", "topic", "create", topic, "-c", CLUSTER, "-r", str(queues), "-w", str(queues),
              namesrv=cluster.namesrv.addr)
    assert done.returncode == 0, done.stderr


@contextlib.asynccontextmanager
async def online_producer(cluster: Cluster, group: str, topic: str) -> AsyncIterator[Producer]:
    """A producer of `group` that has sent to a new one-queue `topic` and heartbeaten: every master lists it."""
    create_topic(cluster, topic, 1)
    async with Producer(group, namesrv=cluster.namesrv.addr) as producer:
        await producer.send(Message(topic, b"x"))
        await producer.instance.heartbeat()
        yield producer


async def test_progress_shows_the_exact_lag_after_n_sent_and_m_consumed(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    create_topic(cluster, "GcProgress")
    await send_to(ns, "GcProgress", {("broker-a", 0): 4, ("broker-a", 1): 3, ("broker-b", 0): 2, ("broker-b", 1): 3})
    await commit(ns, "GcProgressGroup", "GcProgress", {("broker-a", 0): 3, ("broker-b", 1): 2})
    doc = json_of(mq_here("admin", "group", "progress", "GcProgressGroup", "-t", "GcProgress", "-o", "json", namesrv=ns),
                  "GroupProgress")
    queues = {(q["brokerName"], q["queueId"]): (q["brokerOffset"], q["consumerOffset"], q["diff"]) for q in doc["queues"]}
    assert queues == {("broker-a", 0): (4, 3, 1), ("broker-a", 1): (3, 0, 3), ("broker-b", 0): (2, 0, 2),
                      ("broker-b", 1): (3, 2, 1)}
    assert doc["diffTotal"] == 12 - 5 and doc["topic"] == "GcProgress" and doc["consumeTps"] is not None
    last = {(q["brokerName"], q["queueId"]): q["lastTimestampMs"] for q in doc["queues"]}
    assert last[("broker-a", 0)] and last[("broker-b", 1)] and last[("broker-a", 1)] is None
    table = mq_here("admin", "group", "progress", "GcProgressGroup", namesrv=ns).stdout.splitlines()
    assert table[0].split()[:3] == ["TOPIC", "BROKER", "QID"]
    rows = [r.split() for r in table[1:] if r.startswith("GcProgress ")]
    assert [r[:6] for r in rows] == [["GcProgress", "broker-a", "0", "4", "3", "1"],
                                     ["GcProgress", "broker-a", "1", "3", "0", "3"],
                                     ["GcProgress", "broker-b", "0", "2", "0", "2"],
                                     ["GcProgress", "broker-b", "1", "3", "2", "1"]]
    assert table[-1].startswith("total: diff 7, in flight ")


def test_create_update_list_and_delete(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    made = json_of(mq_here("admin", "group", "create", "GcLife", "-c", CLUSTER, "--retry-max-times", "5", "-o", "json",
                      namesrv=ns), "GroupChange")
    assert [(b["brokerName"], b["old"], b["new"]["retryMaxTimes"], b["new"]["consumeBroadcastEnable"])
            for b in made["brokers"]] == [("broker-a", None, 5, False), ("broker-b", None, 5, False)]
    one_line_error(mq_here("admin", "group", "create", "GcLife", "-c", CLUSTER, namesrv=ns), 1, "GcLife already exists")
    changed = json_of(mq_here("admin", "group", "update", "GcLife", "--retry-max-times", "3", "--no-consume", "-o", "json",
                         namesrv=ns), "GroupChange")
    assert [(b["old"]["retryMaxTimes"], b["new"]["retryMaxTimes"], b["new"]["consumeEnable"], b["new"]["retryQueueNums"])
            for b in changed["brokers"]] == [(5, 3, False, 1), (5, 3, False, 1)]
    listed = json_of(mq_here("admin", "group", "list", "-o", "json", namesrv=ns), "GroupList")
    groups = {g["group"]: g for g in listed["groups"]}
    assert not groups["GcLife"]["system"] and groups["TOOLS_CONSUMER"]["system"]
    assert [(b["brokerName"], b["retryMaxTimes"], b["consumeEnable"]) for b in groups["GcLife"]["brokers"]] == [
        ("broker-a", 3, False), ("broker-b", 3, False)]
    table = mq_here("admin", "group", "list", namesrv=ns).stdout
    assert [r.split()[:4] for r in table.splitlines() if r.startswith("GcLife ")] == [
        ["GcLife", "no", "broker-a", "no"], ["GcLife", "no", "broker-b", "no"]]
    one_line_error(mq_here("admin", "group", "delete", "GcLife", "-c", CLUSTER, namesrv=ns), 2, "Refusing without --yes")
    deleted = mq_here("admin", "group", "delete", "GcLife", "-c", CLUSTER, "--yes", namesrv=ns)
    assert deleted.returncode == 0 and deleted.stdout.startswith("deleted group GcLife from "), deleted.stderr
    after = json_of(mq_here("admin", "group", "list", "-o", "json", namesrv=ns), "GroupList")
    assert "GcLife" not in {g["group"] for g in after["groups"]}


async def test_connections_and_status_of_an_online_group(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    create_topic(cluster, "GcOnline", 1)
    await send_to(ns, "GcOnline", {("broker-a", 0): 3, ("broker-b", 0): 2})
    got: list[MessageExt] = []
    async with online(ns, "GcOnlineGroup", "GcOnline", got) as consumer:
        await until(lambda: len(got) >= 5, 30, "5 messages consumed")
        conns = json_of(await amq("admin", "group", "connections", "GcOnlineGroup", "-o", "json", namesrv=ns),
                        "GroupConnections")
        assert [(c["clientId"], c["language"], c["versionDesc"]) for c in conns["clients"]] == [
            (consumer.instance.client_id, "PYTHON", "V4_9_7")]
        assert conns["subscriptions"] == {"GcOnline": "*", "%RETRY%GcOnlineGroup": "*"}
        assert (conns["consumeType"], conns["messageModel"], conns["consumeFromWhere"]) == (
            "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_FIRST_OFFSET")

        async def caught_up() -> dict | None:
            doc = json_of(await amq("admin", "group", "status", "GcOnlineGroup", "-o", "json", namesrv=ns),
                          "GroupStatus")
            return doc if doc["groups"][0]["diffTotal"] == 0 else None

        status = (await until(caught_up, 30, "committed offsets caught up"))["groups"][0]
        assert (status["online"], status["versionDesc"], status["consumeType"], status["messageModel"]) == (
            1, "V4_9_7", "CONSUME_PASSIVELY", "CLUSTERING")
        every = json_of(await amq("admin", "group", "status", "-o", "json", namesrv=ns), "GroupStatus")
        assert "GcOnlineGroup" in {g["group"] for g in every["groups"]}
    offline = json_of(mq_here("admin", "group", "connections", "GcOnlineGroup", "-o", "json", namesrv=ns),
                      "GroupConnections")
    assert offline["clients"] == [] and offline["consumeType"] is None
    table = mq_here("admin", "group", "connections", "GcOnlineGroup", namesrv=ns).stdout
    assert table.splitlines()[-1] == "no client of GcOnlineGroup is online"
    down = json_of(mq_here("admin", "group", "status", "GcOnlineGroup", "-o", "json", namesrv=ns), "GroupStatus")
    assert (down["groups"][0]["online"], down["groups"][0]["versionDesc"], down["groups"][0]["diffTotal"]) == (0, None, 0)


async def test_producer_connections(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    async with online_producer(cluster, "GcProducerGroup", "GcProducer") as producer:
        doc = json_of(await amq("admin", "producer", "connections", "GcProducerGroup", "GcProducer", "-o", "json",
                                namesrv=ns), "ProducerConnections")
        assert [(c["clientId"], c["language"], c["versionDesc"]) for c in doc["clients"]] == [
            (producer.instance.client_id, "PYTHON", "V4_9_7")]
    nobody = json_of(mq_here("admin", "producer", "connections", "GcNobody", "GcProducer", "-o", "json", namesrv=ns),
                     "ProducerConnections")
    assert nobody["clients"] == []


def test_unknown_group_is_one_line_exit_1_and_nothing_changes(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    for args in (("progress", "GcNowhere"), ("connections", "GcNowhere"), ("status", "GcNowhere"),
                 ("update", "GcNowhere", "--retry-max-times", "2"), ("delete", "GcNowhere", "-c", CLUSTER, "--yes")):
        one_line_error(mq_here("admin", "group", *args, namesrv=ns), 1, "GcNowhere", "SUBSCRIPTION_GROUP_NOT_EXIST")
    listed = json_of(mq_here("admin", "group", "list", "-o", "json", namesrv=ns), "GroupList")
    assert "GcNowhere" not in {g["group"] for g in listed["groups"]}


@pytest.mark.parametrize(("args", "fragment"), [
    (("create", "GcBad"), "give -c CLUSTER or -b BROKER_ADDR"),
    (("create", "GcBad", "-c", CLUSTER, "--retry-queues", "-1"), "--retry-queues"),
    (("update", "GcBad", "-c", CLUSTER), "nothing to change"),
    (("progress", "GcBad", "-o", "xml"), "-o must be one of"),
])
def test_bad_input_is_one_line_exit_2(cluster: Cluster, args: tuple[str, ...], fragment: str) -> None:
    one_line_error(mq_here("admin", "group", *args, namesrv=cluster.namesrv.addr), 2, fragment)
    listed = json_of(mq_here("admin", "group", "list", "-o", "json", namesrv=cluster.namesrv.addr), "GroupList")
    assert "GcBad" not in {g["group"] for g in listed["groups"]}


async def test_producer_list_shows_every_groups_producers_on_every_master(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    async with online_producer(cluster, "GcListGroup", "GcProducers") as producer:
        doc = json_of(await amq("admin", "producer", "list", "-o", "json", namesrv=ns), "ProducerTable")
        mine = [p for p in doc["producers"] if p["group"] == "GcListGroup"]
        assert {p["brokerName"] for p in mine} == {"broker-a", "broker-b"}  # it heartbeats to every master
        assert all(p["clientId"] == producer.instance.client_id and p["language"] == "PYTHON"
                   and p["remoteIp"].startswith("/127.0.0.1:") for p in mine)
        addr = cluster.brokers["broker-a"].addr
        one = json_of(await amq("admin", "producer", "list", "-b", addr, "-o", "json", namesrv=ns), "ProducerTable")
        assert {p["brokerAddr"] for p in one["producers"]} == {addr} and any(
            p["group"] == "GcListGroup" for p in one["producers"])
        table = (await amq("admin", "producer", "list", namesrv=ns)).stdout.splitlines()
        assert table[0].split() == ["GROUP", "CLIENT", "ID", "ADDR", "LANGUAGE", "VERSION", "BROKER"]
        assert sum(line.startswith("GcListGroup ") for line in table) == 2
