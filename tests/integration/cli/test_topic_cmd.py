"""`mq admin topic ...` against two real brokers: queue counts, permissions, message figures, refusals."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from support.adminsupport import json_of, mq_here, one_line_error
from support.clientsupport import Cluster
from support.trafficsupport import send_to

from mqtools.client.admin import SyncMQAdmin
from mqtools.common.exitcodes import EXIT_PARTIAL

pytestmark = pytest.mark.integration
CLUSTER = "ClientIT"


def route_of(cluster: Cluster, topic: str) -> dict[str, dict]:
    doc = json_of(mq_here("admin", "topic", "route", topic, "-o", "json", namesrv=cluster.namesrv.addr), "TopicRoute")
    return {b["brokerName"]: b for b in doc["brokers"]}


def test_created_topic_is_routed_with_its_queue_counts_the_moment_create_returns(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    created = json_of(mq_here("admin", "topic", "create", "TcRoute", "-c", CLUSTER, "-r", "8", "-w", "8", "-o", "json",
                         namesrv=ns), "TopicChange")
    assert created["operation"] == "create"
    assert sorted(b["brokerName"] for b in created["brokers"]) == ["broker-a", "broker-b"]
    assert all(b["old"] is None and b["new"] == {"readQueues": 8, "writeQueues": 8, "perm": 6, "permText": "RW-",
                                                 "order": False, "attributes": {}} for b in created["brokers"])
    doc = json_of(mq_here("admin", "topic", "route", "TcRoute", "-o", "json", namesrv=ns), "TopicRoute")
    assert (doc["totalReadQueues"], doc["totalWriteQueues"], doc["orderTopicConf"]) == (16, 16, None)
    for b in doc["brokers"]:
        assert (b["readQueues"], b["writeQueues"], b["permText"], b["cluster"]) == (8, 8, "RW-", CLUSTER)
        assert b["addrs"] == {"0": cluster.brokers[b["brokerName"]].addr}
    table = mq_here("admin", "topic", "route", "TcRoute", namesrv=ns)
    head, *rows, blank, total = table.stdout.splitlines()
    assert head.split() == ["BROKER", "CLUSTER", "MASTER", "SLAVES", "READ", "Q", "WRITE", "Q", "PERM"]
    assert [r.split() for r in rows] == [[n, CLUSTER, cluster.brokers[n].addr, "n/a", "8", "8", "RW-"]
                                         for n in ("broker-a", "broker-b")]
    assert blank == "" and total == "total: 2 brokers, 16 read queues, 16 write queues"


def test_create_refuses_an_existing_topic_and_update_a_missing_one(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    assert mq_here("admin", "topic", "create", "TcTwice", "-b", cluster.brokers["broker-a"].addr, "-r", "2", "-w", "2",
              namesrv=ns).returncode == 0
    one_line_error(mq_here("admin", "topic", "create", "TcTwice", "-c", CLUSTER, namesrv=ns), 1,
                   "TcTwice already exists on", cluster.brokers["broker-a"].addr)
    assert list(route_of(cluster, "TcTwice")) == ["broker-a"]  # nothing written to broker-b
    one_line_error(mq_here("admin", "topic", "update", "TcMissing", "-c", CLUSTER, "-w", "4", namesrv=ns), 1,
                   "TcMissing does not exist", "TOPIC_NOT_EXIST")
    one_line_error(mq_here("admin", "topic", "route", "TcMissing", namesrv=ns), 1, "TcMissing", "CODE 17")


def test_update_keeps_what_is_not_given_and_perm_changes_only_the_permission(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    mq_here("admin", "topic", "create", "TcUpdate", "-c", CLUSTER, "-r", "8", "-w", "8", namesrv=ns)
    doc = json_of(mq_here("admin", "topic", "update", "TcUpdate", "-w", "4", "-o", "json", namesrv=ns), "TopicChange")
    assert [(b["brokerName"], b["old"]["writeQueues"], b["new"]["writeQueues"], b["new"]["readQueues"])
            for b in doc["brokers"]] == [("broker-a", 8, 4, 8), ("broker-b", 8, 4, 8)]
    grown = json_of(mq_here("admin", "topic", "perm", "TcUpdate", "-p", "r", "-b", cluster.brokers["broker-b"].addr,
                       "-o", "json", namesrv=ns), "TopicChange")
    assert [(b["brokerName"], b["old"]["permText"], b["new"]["permText"], b["new"]["writeQueues"])
            for b in grown["brokers"]] == [("broker-b", "RW-", "R--", 4)]
    route = route_of(cluster, "TcUpdate")
    assert {n: (b["readQueues"], b["writeQueues"], b["perm"]) for n, b in route.items()} == {
        "broker-a": (8, 4, 6), "broker-b": (8, 4, 4)}
    table = mq_here("admin", "topic", "perm", "TcUpdate", "-p", "6", namesrv=ns)
    assert table.returncode == 0 and "R-- -> RW-" in table.stdout and "RW-  " in table.stdout


def test_a_message_type_is_kept_changed_alone_and_kept_by_other_updates(cluster: Cluster) -> None:
    """RocketMQ 5's message.type attribute (what a 5.x proxy checks each send against): set at create, changed
    by update without touching the rest, and kept by an update of something else."""
    ns = cluster.namesrv.addr
    made = json_of(mq_here("admin", "topic", "create", "TcTyped", "-c", CLUSTER, "-r", "2", "-w", "2", "--message-type",
                      "fifo", "-o", "json", namesrv=ns), "TopicChange")
    assert {b["new"]["attributes"]["message.type"] for b in made["brokers"]} == {"FIFO"}
    changed = json_of(mq_here("admin", "topic", "update", "TcTyped", "--message-type", "TRANSACTION", "-o", "json",
                         namesrv=ns), "TopicChange")
    assert [(b["old"]["attributes"], b["new"]["attributes"], b["new"]["writeQueues"]) for b in changed["brokers"]] \
        == [({"message.type": "FIFO"}, {"message.type": "TRANSACTION"}, 2)] * 2
    kept = json_of(mq_here("admin", "topic", "update", "TcTyped", "-w", "4", "-o", "json", namesrv=ns), "TopicChange")
    assert {b["new"]["attributes"]["message.type"] for b in kept["brokers"]} == {"TRANSACTION"}
    with SyncMQAdmin(ns) as admin:
        stored = admin.topics.topic_configs(cluster.brokers["broker-a"].addr)["TcTyped"]
    assert (stored.attributes, stored.write_queue_nums) == ({"message.type": "TRANSACTION"}, 4)


async def test_status_counts_what_each_queue_holds(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    mq_here("admin", "topic", "create", "TcStatus", "-c", CLUSTER, "-r", "2", "-w", "2", namesrv=ns)
    await send_to(ns, "TcStatus", {("broker-a", 0): 3, ("broker-a", 1): 1, ("broker-b", 1): 6})
    doc = json_of(mq_here("admin", "topic", "status", "TcStatus", "-o", "json", namesrv=ns), "TopicStatus")
    figures = {(q["brokerName"], q["queueId"]): (q["minOffset"], q["maxOffset"], q["messages"]) for q in doc["queues"]}
    assert figures == {("broker-a", 0): (0, 3, 3), ("broker-a", 1): (0, 1, 1), ("broker-b", 0): (0, 0, 0),
                       ("broker-b", 1): (0, 6, 6)}
    assert doc["messages"] == 10 and doc["putTps"] is not None and doc["putTps"] > 0
    stamps = {(q["brokerName"], q["queueId"]): q["lastUpdateMs"] for q in doc["queues"]}
    assert stamps[("broker-b", 0)] is None
    assert all(abs(v - time.time() * 1000) < 120_000 for k, v in stamps.items() if k != ("broker-b", 0))
    table = mq_here("admin", "topic", "status", "TcStatus", namesrv=ns).stdout.splitlines()
    assert table[0].split() == ["BROKER", "QID", "MIN", "MAX", "MESSAGES", "LAST", "STORED"]
    assert table[3].split() == ["broker-b", "0", "0", "0", "0", "n/a"]
    assert table[-1].startswith("total: 4 queues, 10 messages; put TPS ")
    csv = mq_here("admin", "topic", "status", "TcStatus", "-o", "csv", namesrv=ns).stdout.splitlines()
    assert csv[0] == "BROKER,QID,MIN,MAX,MESSAGES,LAST STORED" and csv[4].startswith("broker-b,1,0,6,6,")


def test_list_flags_kinds_and_clusters(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    mq_here("admin", "topic", "create", "TcList", "-c", CLUSTER, "-r", "1", "-w", "1", namesrv=ns)
    doc = json_of(mq_here("admin", "topic", "list", "-o", "json", namesrv=ns), "TopicList")
    kinds = {t["topic"]: (t["kind"], t["clusters"]) for t in doc["topics"]}
    assert kinds["TcList"] == ("normal", [CLUSTER])
    assert kinds["TBW102"] == ("system", [CLUSTER]) and kinds["broker-a"] == ("system", [CLUSTER])
    assert kinds[CLUSTER] == ("system", [CLUSTER])
    only = json_of(mq_here("admin", "topic", "list", "-c", CLUSTER, "-o", "json", namesrv=ns), "TopicList")
    assert only["cluster"] == CLUSTER and {t["topic"] for t in only["topics"]} == set(kinds)
    one_line_error(mq_here("admin", "topic", "list", "-c", "Nope", namesrv=ns), 1, "cluster Nope not found")
    clusters = json_of(mq_here("admin", "topic", "clusters", "TcList", "-o", "json", namesrv=ns), "TopicClusters")
    assert clusters == {"kind": "TopicClusters", "schemaVersion": 1, "partial": False, "unreachable": [],
                        "topic": "TcList", "clusters": [CLUSTER]}


def test_delete_asks_first_then_removes_the_topic_everywhere(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    mq_here("admin", "topic", "create", "TcDelete", "-c", CLUSTER, namesrv=ns)
    one_line_error(mq_here("admin", "topic", "delete", "TcDelete", namesrv=ns), 2, "Refusing without --yes")
    one_line_error(mq_here("admin", "topic", "delete", "TcDelete", "-c", "Nope", "--yes", namesrv=ns), 1,
                   "not on cluster Nope", "nothing deleted")
    assert set(route_of(cluster, "TcDelete")) == {"broker-a", "broker-b"}
    done = mq_here("admin", "topic", "delete", "TcDelete", "--yes", namesrv=ns)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("deleted topic TcDelete from ") and f"(cluster {CLUSTER})" in done.stdout
    one_line_error(mq_here("admin", "topic", "route", "TcDelete", namesrv=ns), 1, "TOPIC_NOT_EXIST")
    listed = json_of(mq_here("admin", "topic", "list", "-o", "json", namesrv=ns), "TopicList")
    assert "TcDelete" not in {t["topic"] for t in listed["topics"]}


@pytest.mark.parametrize(("args", "fragment"), [
    (("create", "TcBad", "-c", CLUSTER, "-r", "0"), "--read-queues"),
    (("create", "TcBad", "-c", CLUSTER, "-w", "1025"), "--write-queues"),
    (("create", "TcBad", "-c", CLUSTER, "-p", "x"), "bad perm 'x'"),
    (("create", "TcBad", "-c", CLUSTER, "-p", "5"), "bad perm '5'"),
    (("create", "TcBad"), "give -c CLUSTER or -b BROKER_ADDR"),
    (("update", "TcBad", "-c", CLUSTER), "nothing to change"),
    (("create", "TcBad", "-c", CLUSTER, "--message-type", "BLUE"), "bad message type 'BLUE'"),
    (("status", "TcBad", "-o", "yaml"), "-o must be one of"),
])
def test_bad_input_is_one_line_exit_2_and_creates_nothing(cluster: Cluster, args: tuple[str, ...],
                                                          fragment: str) -> None:
    one_line_error(mq_here("admin", "topic", *args, namesrv=cluster.namesrv.addr), 2, fragment)
    listed = json_of(mq_here("admin", "topic", "list", "-o", "json", namesrv=cluster.namesrv.addr), "TopicList")
    assert "TcBad" not in {t["topic"] for t in listed["topics"]}


def test_unknown_topic_is_one_line_exit_1(cluster: Cluster) -> None:
    for args in (("route",), ("status",), ("clusters",), ("delete", "--yes"), ("perm", "-p", "r")):
        one_line_error(mq_here("admin", "topic", args[0], "TcNowhere", *args[1:], namesrv=cluster.namesrv.addr), 1,
                       "TcNowhere")


def test_watch_redraws_until_interrupted(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    mq_here("admin", "topic", "create", "TcWatch", "-c", CLUSTER, "-r", "1", "-w", "1", namesrv=ns)
    proc = subprocess.Popen([sys.executable, "-m", "mqtools.cli.main", "admin", "topic", "status", "TcWatch",
                             "--watch", "0.3", "-n", ns], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    rounds = [line for line in out.splitlines() if line.startswith("# ")]
    assert len(rounds) >= 2 and out.count("total: 2 queues, 0 messages") == len(rounds)


async def test_cq_shows_each_brokers_units_and_queryCq_prints_as_mqadmin(cluster: Cluster) -> None:
    """`topic cq` asks every set serving the topic (one row per unit, each broker's bounds below); -b one broker; an
    index a broker does not hold is its remark. The mqadmin dialect's queryCq prints mqadmin's layout."""
    ns = cluster.namesrv.addr
    mq_here("admin", "topic", "create", "TcCq", "-c", CLUSTER, "-r", "2", "-w", "2", namesrv=ns)
    await send_to(ns, "TcCq", {("broker-a", 1): 4, ("broker-b", 1): 2})
    doc = json_of(mq_here("admin", "topic", "cq", "TcCq", "1", "--index", "1", "--count", "2", "-o", "json",
                          namesrv=ns), "ConsumeQueueUnits")
    brokers = {b["brokerName"]: b for b in doc["brokers"]}
    assert (brokers["broker-a"]["minIndex"], brokers["broker-a"]["maxIndex"]) == (0, 4)
    assert [u["index"] for u in brokers["broker-a"]["units"]] == [1, 2]
    assert [u["index"] for u in brokers["broker-b"]["units"]] == [1]
    a = brokers["broker-a"]["units"]
    assert a[1]["physicOffset"] == a[0]["physicOffset"] + a[0]["physicSize"]  # one after another in broker-a's log
    table = mq_here("admin", "topic", "cq", "TcCq", "1", "--index", "1", "--count", "2", namesrv=ns).stdout.splitlines()
    assert table[0].split() == ["BROKER", "INDEX", "PHYSIC", "OFFSET", "SIZE", "TAGS", "CODE"] and len(table) >= 4
    past = json_of(mq_here("admin", "topic", "cq", "TcCq", "1", "--index", "9", "-b",
                           cluster.brokers["broker-b"].addr, "-o", "json", namesrv=ns), "ConsumeQueueUnits")
    assert [(b["brokerName"], b["units"], b["remark"]) for b in past["brokers"]] == [
        ("broker-b", None, "Index 9 of 1@TcCq is not exist!")]
    gone = mq_here("admin", "topic", "cq", "TcCq", "1", "-b", "127.0.0.1:1", "-o", "json", namesrv=ns)
    assert gone.returncode == EXIT_PARTIAL, gone.stderr  # a broker -b names that does not answer: named, no units
    unread = json.loads(gone.stdout)
    assert (unread["partial"], unread["brokers"]) == (True, [])
    assert [(u["brokerName"], u["addr"]) for u in unread["unreachable"]] == [(None, "127.0.0.1:1")]
    printed = mq_here("admin", "queryCq", "-t", "TcCq", "-q", "1", "-i", "0", "-c", "2", "-b",
                      cluster.brokers["broker-a"].addr, namesrv=ns)
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    assert lines[:3] == ["Queue data: ", "max: 4, min: 0", "======================================"]
    assert lines[3] == "idx: 0" and lines[4].startswith("ConsumeQueueData{physicOffset=")
    assert lines[4].endswith(", extendDataJson='null', bitMap='null', eval=false, msg='null'}") and len(lines) == 9
    one_line_error(mq_here("admin", "queryCq", "-t", "TcCq", "-q", "1", "-i", "9", "-b",
                           cluster.brokers["broker-a"].addr, namesrv=ns), 1, "Index 9 of 1@TcCq is not exist!")
