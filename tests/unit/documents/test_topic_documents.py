"""The topic documents, rendered from hand-made models (no cluster)."""

from __future__ import annotations

from support.documents import check

from mqtools.cli.output import plain
from mqtools.client.admin.models.consume_queue import (
    BrokerQueueUnits,
    ConsumeQueueUnits,
    QueueUnit,
    consume_queue_units_view,
)
from mqtools.client.admin.models.topics import (
    QueueStats,
    TopicChange,
    TopicEntry,
    TopicStatus,
    topic_change_view,
    topic_clusters_view,
    topic_list_view,
    topic_route_view,
    topic_status_view,
)
from mqtools.common.presentation import Unreachable
from mqtools.remoting.bodies import BrokerData, MessageQueue, QueueData, TopicConfig, TopicRouteData


def test_topic_list() -> None:
    view = topic_list_view([TopicEntry("Orders", "normal", ["DefaultCluster"]), TopicEntry("%RETRY%G", "retry", [])])
    doc = check(view, "topic list")
    assert view.rows[1] == ["%RETRY%G", "retry", None]
    assert doc["topics"][0] == {"topic": "Orders", "kind": "normal", "clusters": ["DefaultCluster"]}


def test_topic_route() -> None:
    route = TopicRouteData(
        queue_datas=[QueueData("broker-a", 4, 4, 6, 0)],
        broker_datas=[BrokerData("DefaultCluster", "broker-a", {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}),
                      BrokerData("DefaultCluster", "broker-b", {0: "10.0.0.3:10911"})])
    view = topic_route_view("Orders", route)
    doc = check(view, "topic route")
    assert view.rows[0] == ["broker-a", "DefaultCluster", "10.0.0.1:10911", "10.0.0.2:10911", 4, 4, "RW-"]
    assert doc["brokers"][1]["readQueues"] is None
    assert view.footer == ["total: 2 brokers, 4 read queues, 4 write queues"]


def test_topic_status_unknown_tps_is_null() -> None:
    st = TopicStatus("Orders", [QueueStats(MessageQueue("Orders", "broker-a", 0), 5, 12, None)], None)
    view = topic_status_view(st)
    doc = check(view, "topic status")
    assert doc["putTps"] is None and doc["messages"] == 7
    assert view.footer == ["total: 1 queues, 7 messages; put TPS n/a"]


def test_topic_clusters_and_change() -> None:
    check(topic_clusters_view("Orders", ["A", "B"]), "topic clusters")
    old = TopicConfig("Orders", 4, 4, 6)
    view = topic_change_view("Orders", "update", [TopicChange("broker-a", "10.0.0.1:10911", old,
                                                              TopicConfig("Orders", 8, 8, 6))])
    check(view, "topic update")
    assert view.rows[0][2:4] == ["4 -> 8", "4 -> 8"]


def test_topic_status_with_a_set_read_from_its_slave_and_one_unreachable_is_partial() -> None:
    st = TopicStatus("Orders", [QueueStats(MessageQueue("Orders", "broker-a", 0), 0, 10, 1_700_000_000_000, "slave"),
                                QueueStats(MessageQueue("Orders", "broker-b", 0), 0, 4, None)], None,
                     [Unreachable("broker-c", "10.0.0.5:10911", "timed out")])
    view = topic_status_view(st)
    doc = check(view, "topic status")
    assert doc["partial"] is True
    assert doc["unreachable"] == [{"brokerName": "broker-c", "addr": "10.0.0.5:10911", "reason": "timed out"}]
    assert [q["source"] for q in doc["queues"]] == ["slave", "master"]
    assert view.rows[0][0] == "broker-a*" and view.rows[1][0] == "broker-b"
    assert view.footer[0] == "total: at least 2 queues, at least 14 messages; put TPS n/a"
    assert view.footer[1] == "* read from a slave (no master answering): broker-a"
    assert view.notes() == ["partial: could not read broker-c 10.0.0.5:10911: timed out"]
    assert plain(view).splitlines()[-1] == "partial: could not read broker-c 10.0.0.5:10911: timed out"


def test_a_complete_document_says_it_is_not_partial() -> None:
    doc = check(topic_clusters_view("Orders", ["A"]))
    assert (doc["partial"], doc["unreachable"]) == (False, [])


def test_topic_cq_marks_a_broker_the_name_servers_do_not_list() -> None:
    found = ConsumeQueueUnits("Orders", 0, 3, 2, None, [
        BrokerQueueUnits("broker-a", "10.0.0.1:10911", 0, 9, [QueueUnit(3, 4096, 190, 77)]),
        BrokerQueueUnits(None, "10.0.0.9:10911", None, None, None, "Index 3 of 0@Orders is not exist!")])
    view = consume_queue_units_view(found)
    doc = check(view)
    assert view.rows == [["broker-a", 3, 4096, 190, 77]]
    assert view.footer == ["queue 0 on broker-a (10.0.0.1:10911): indexes 0..9",
                           "queue 0 on n/a (10.0.0.9:10911): indexes n/a; Index 3 of 0@Orders is not exist!"]
    assert [(b["brokerName"], b["units"]) for b in doc["brokers"]] == [
        ("broker-a", [{"index": 3, "physicOffset": 4096, "physicSize": 190, "tagsCode": 77}]), (None, None)]
