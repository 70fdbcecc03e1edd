"""The group, producer and offset documents, rendered from hand-made models (no cluster)."""

from __future__ import annotations

import dataclasses

from support.documents import check

from mqtools.cli.output import plain
from mqtools.client.admin.models.configs import SubscriptionGroupConfig
from mqtools.client.admin.models.connections import group_connections_view, producer_connections_view
from mqtools.client.admin.models.groups import (
    ClientConnection,
    ConsumerProgress,
    GroupCatalogue,
    GroupChange,
    GroupConnections,
    GroupEntry,
    GroupPlacement,
    GroupSummary,
    OffsetReset,
    PopFigures,
    ProducerClients,
    QueueProgress,
    group_change_view,
    group_list_view,
    group_progress_view,
    group_status_view,
    offset_reset_view,
)
from mqtools.client.admin.models.proxies import ProxiedClients, ProxyClient
from mqtools.common.presentation import Unreachable, cell
from mqtools.remoting.bodies import MessageQueue

CONFIG = SubscriptionGroupConfig("Orders")
CLIENT = ClientConnection("10.0.0.9@4711", "10.0.0.9:50123", "JAVA", 453)


def test_group_list_flags_system_groups_and_gives_each_placement_its_config() -> None:
    entries = [GroupEntry("Orders", [GroupPlacement("broker-a", "10.0.0.1:10911", CONFIG),
                                     GroupPlacement("broker-b", "10.0.0.2:10911",
                                                    dataclasses.replace(CONFIG, retry_max_times=3))]),
               GroupEntry("TOOLS_CONSUMER", [GroupPlacement("broker-a", "10.0.0.1:10911", CONFIG)])]
    view = group_list_view(GroupCatalogue(entries))
    doc = check(view, "group list")
    assert view.rows[1][:3] == ["Orders", False, "broker-b"] and view.rows[1][8] == 3
    assert [c.header for c in view.columns][3:5] == ["CONSUME", "BROADCAST"]
    assert doc["groups"][1]["system"] is True
    assert doc["groups"][0]["brokers"][1]["retryMaxTimes"] == 3
    assert view.footer == ["2 groups, 1 of them system groups"] and not doc["partial"]


def test_group_list_names_the_sets_it_could_not_read_and_marks_those_read_from_a_slave() -> None:
    """Until stop 106 a set whose replicas did not answer left its groups out with no word."""
    entries = [GroupEntry("Orders", [GroupPlacement("broker-a", "10.0.0.1:10911", CONFIG)])]
    view = group_list_view(GroupCatalogue(entries, [Unreachable("broker-b", None, "connection refused")], ["broker-a"]))
    doc = check(view, "group list")
    assert doc["partial"] and doc["unreachable"][0]["brokerName"] == "broker-b"
    assert view.rows[0][2] == "broker-a*" and view.footer[1].startswith("* read from a slave")


def test_group_change_shows_old_to_new() -> None:
    changed = dataclasses.replace(CONFIG, retry_max_times=3, consume_enable=False)
    view = group_change_view("Orders", "update", [GroupChange("broker-a", "10.0.0.1:10911", CONFIG, changed)])
    doc = check(view, "group update")
    assert view.title == "update Orders"
    assert view.rows[0][2] == "yes -> no" and view.rows[0][7] == "16 -> 3" and view.rows[0][3] is True
    assert doc["brokers"][0]["old"]["consumeEnable"] is True and doc["brokers"][0]["new"]["consumeEnable"] is False


def test_group_created_on_a_broker_whose_name_is_unknown() -> None:
    view = group_change_view("Orders", "create", [GroupChange(None, "10.0.0.3:10911", None, CONFIG)])
    doc = check(view, "group create")
    assert [cell(v) for v in view.rows[0][:4]] == ["n/a", "10.0.0.3:10911", "yes", "yes"]
    assert doc["brokers"][0]["brokerName"] is None and doc["brokers"][0]["old"] is None
    assert doc["brokers"][0]["new"]["retryMaxTimes"] == 16


def test_group_progress_with_an_uncommitted_queue_has_unknown_inflight_and_tps() -> None:
    p = ConsumerProgress("Orders", [
        QueueProgress(MessageQueue("Orders", "broker-a", 0), 10, 4, 1_700_000_000_123, 6),
        QueueProgress(MessageQueue("Orders", "broker-b", 1), 3, None, None)])
    view = group_progress_view(p)
    doc = check(view, "group progress")
    assert (doc["group"], doc["topic"], doc["diffTotal"]) == ("Orders", None, 9)
    assert doc["inflightTotal"] is None and doc["consumeTps"] is None
    assert doc["queues"][0]["inflight"] == 2 and doc["queues"][1]["consumerOffset"] is None
    assert view.rows[0][5:7] == [6, 2]
    assert [cell(v) for v in view.rows[1][4:]] == ["n/a", "3", "n/a", "n/a", "n/a"]
    assert view.footer == ["total: diff 9, in flight n/a, consume TPS n/a"]


def test_group_progress_of_one_topic_sums_inflight() -> None:
    p = ConsumerProgress("Orders", [QueueProgress(MessageQueue("Orders", "broker-a", 0), 10, 4, None, 6)], 2.5)
    doc = check(group_progress_view(p, "Orders"), "group progress")
    assert (doc["topic"], doc["inflightTotal"], doc["consumeTps"]) == ("Orders", 2, 2.5)


def test_group_progress_of_a_pop_group_shows_what_is_popped_and_not_acknowledged() -> None:
    p = ConsumerProgress("Pops", [
        QueueProgress(MessageQueue("Orders", "broker-a", 0), 10, 10, None, 10, pop_inflight=4, revive_due=1),
        QueueProgress(MessageQueue("Orders", "broker-b", 0), 5, 5, None, 5, "slave")], 1.0,
        pop=PopFigures(True, 6, 1, 7, 2, complete=False))
    view = group_progress_view(p)
    doc = check(view)
    assert doc["pop"] == {"popped": True, "inflightTotal": 6, "reviveDueTotal": 1, "retryInflight": 2, "revived": 7,
                          "complete": False}
    assert (doc["queues"][0]["popInflight"], doc["queues"][0]["reviveDue"]) == (4, 1)
    assert doc["queues"][1]["popInflight"] is None  # the slave that answered does not track them
    assert view.rows[0][6:8] == [0, 4] and view.rows[1][7] is None
    assert view.footer[1] == ("POP: at least 6 popped and not acknowledged (1 past their invisible time, 2 from retry "
                              "topics), 7 came back since the brokers started; consumer offsets move when the broker "
                              "pops")
    plain = group_progress_view(ConsumerProgress("Orders", [], pop=PopFigures()))
    assert check(plain)["pop"]["popped"] is False and len(plain.footer) == 1  # not a POP group: no POP line


def test_group_connections_online_and_offline() -> None:
    online = GroupConnections("Orders", [CLIENT], {"Orders": "*"}, "CONSUME_PASSIVELY", "CLUSTERING",
                              "CONSUME_FROM_LAST_OFFSET")
    view = group_connections_view("Orders", online)
    doc = check(view, "group connections")
    assert view.rows == [["10.0.0.9@4711", "10.0.0.9:50123", "JAVA", "V5_2_0"]]
    assert doc["clients"][0] == {"clientId": "10.0.0.9@4711", "clientAddr": "10.0.0.9:50123", "language": "JAVA",
                                 "version": 453, "versionDesc": "V5_2_0"}
    assert view.footer == ["subscription: Orders *",
                           "consume type CONSUME_PASSIVELY, model CLUSTERING, from CONSUME_FROM_LAST_OFFSET"]

    view = group_connections_view("Orders", None)
    doc = check(view, "group connections")
    assert (doc["clients"], doc["subscriptions"], doc["consumeType"], doc["messageModel"]) == ([], {}, None, None)
    assert view.footer == ["no client of Orders is online"]


def test_producer_connections_through_proxies() -> None:
    """A topic's gRPC producers from the proxies asked; a proxy that answers only about consumers (Apache's) leaves
    its producers unknown, said in the footer and the document."""
    grpc_producer = ProxyClient("10.0.0.5:8080", "PRODUCER", "Orders", "py@2", "10.0.0.7:40001", "PYTHON", "V5_0_8")
    view = producer_connections_view("PG", "Orders", ProducerClients([CLIENT]),
                                     ProxiedClients(["10.0.0.5:8080", "10.0.0.6:8080"], [grpc_producer],
                                                    not_listing=["10.0.0.6:8080"]))
    doc = check(view, "producer connections")
    assert [r[-1] for r in view.rows] == ["broker", "proxy 10.0.0.5:8080"]
    assert doc["proxyClients"] == [grpc_producer.to_json()] and doc["proxiesNotListing"] == ["10.0.0.6:8080"]
    assert doc["partial"] is False and view.footer == [
        "1 gRPC producer(s) of Orders through the proxies asked",
        "n/a producers on 10.0.0.6:8080: it answers only about consumers (Apache's rocketmq-proxy)"]


def test_group_connections_through_proxies() -> None:
    """A group consumed through RocketMQ 5 proxies: its gRPC clients come from the proxies asked, a proxy that did
    not answer makes the document partial."""
    grpc_client = ProxyClient("10.0.0.5:8080", "SIMPLE", "Orders", "py@1", "10.0.0.7:40000", "PYTHON", "V5_0_8")
    through = ProxiedClients(["10.0.0.5:8080", "10.0.0.6:8080"], [grpc_client],
                                [Unreachable(None, "10.0.0.6:8080", "connection refused")])
    view = group_connections_view("Orders", None, through)
    doc = check(view, "group connections")
    assert view.rows == [["py@1", "10.0.0.7:40000", "PYTHON", "V5_0_8", "proxy 10.0.0.5:8080 (SIMPLE)"]]
    assert doc["partial"] is True and doc["proxiesAsked"] == ["10.0.0.5:8080", "10.0.0.6:8080"]
    assert doc["proxyClients"] == [grpc_client.to_json()] and doc["clients"] == []
    assert view.footer == ["no client of Orders is online at the brokers; 1 through the proxies asked"]
    both = group_connections_view("Orders", GroupConnections("Orders", [CLIENT], {"Orders": "*"}, "CONSUME_PASSIVELY",
                                                             "CLUSTERING", "CONSUME_FROM_LAST_OFFSET"),
                                  ProxiedClients(["10.0.0.5:8080"], [grpc_client]))
    assert [r[-1] for r in both.rows] == ["broker", "proxy 10.0.0.5:8080 (SIMPLE)"] and check(both)["partial"] is False


def test_group_status_unknown_group_reads_n_a() -> None:
    view = group_status_view([GroupSummary("Orders", 2, 453, "CONSUME_ACTIVELY", "CLUSTERING", 3.25, 10),
                              GroupSummary("Gone", None, None, None, None, None, None)])
    doc = check(view, "group status")
    assert view.rows[0] == ["Orders", 2, "V5_2_0", "PULL", "CLUSTERING", 3.25, 10]
    assert doc["groups"][1] == {"group": "Gone", "online": None, "minVersion": None, "versionDesc": None,
                                "consumeType": None, "messageModel": None, "consumeTps": None, "diffTotal": None,
                                "pop": None}
    assert plain(view).splitlines()[1].split() == ["Orders", "2", "V5_2_0", "PULL", "CLUSTERING", "3.25", "10"]
    assert plain(view).splitlines()[2].split() == ["Gone", *["n/a"] * 6]


def test_group_status_with_a_set_not_read_names_it_once() -> None:
    """Two groups on the set no replica answered for: the document is partial and names the set once."""
    gone = Unreachable("broker-a", "10.0.0.1:10911", "no master registered; slave 10.0.0.2:10911: timed out")
    view = group_status_view([GroupSummary("G1", 1, 453, "CONSUME_PASSIVELY", "CLUSTERING", None, 5, None, [gone]),
                              GroupSummary("G2", 0, None, None, None, None, 7, None, [gone])])
    doc = check(view, "group status")
    assert (doc["partial"], doc["unreachable"]) == (True, [gone.to_json()])
    assert [g["diffTotal"] for g in doc["groups"]] == [5, 7]


def test_group_status_marks_the_groups_served_by_pop() -> None:
    view = group_status_view([GroupSummary("Pushed", 2, 453, "CONSUME_PASSIVELY", "CLUSTERING", 1.0, 0, True),
                              GroupSummary("Grpc", 1, 453, "CONSUME_POP", "CLUSTERING", 1.0, 0, False),
                              GroupSummary("Idle", 0, None, None, None, 0.0, 0, True),
                              GroupSummary("Plain", 1, 453, "CONSUME_PASSIVELY", "CLUSTERING", 1.0, 0, False)])
    doc = check(view, "group status")
    assert [r[3] for r in view.rows] == ["PUSH (POP)", "POP", "POP", "PUSH"]
    assert [g["pop"] for g in doc["groups"]] == [True, False, True, False]


def test_producer_connections() -> None:
    view = producer_connections_view("OrderProducers", "Orders", ProducerClients([CLIENT]))
    doc = check(view, "producer connections")
    assert (doc["group"], doc["topic"], doc["clients"][0]["versionDesc"]) == ("OrderProducers", "Orders", "V5_2_0")
    assert view.footer == [] and doc["partial"] is False
    empty = producer_connections_view("OrderProducers", "Orders", ProducerClients([]))
    assert check(empty, "producer connections")["clients"] == []
    assert empty.footer == ["no producer of OrderProducers is connected to the brokers of Orders"]


def test_producer_connections_with_a_master_not_answering_are_partial() -> None:
    """A producer connected only to the hung master is not listed: the document says so, naming it."""
    hung = Unreachable("broker-b", "10.0.0.2:10911", "timed out")
    view = producer_connections_view("OrderProducers", "Orders", ProducerClients([CLIENT], [hung]))
    doc = check(view, "producer connections")
    assert (doc["partial"], doc["unreachable"], len(doc["clients"])) == (True, [hung.to_json()], 1)


def test_offset_reset_moves_and_warns_about_a_broker_that_did_not_push() -> None:
    rows = [OffsetReset(MessageQueue("Orders", "broker-a", 0), 5, 0, True),
            OffsetReset(MessageQueue("Orders", "broker-b", 0), None, 7, False)]
    view = offset_reset_view("G", "Orders", "reset", "time 1700000000000", rows, dry_run=False)
    doc = check(view, "offset reset")
    assert view.title == "reset G on Orders to time 1700000000000"
    assert view.rows[0] == ["broker-a", 0, 5, 0, -5]
    assert [cell(v) for v in view.rows[1]] == ["broker-b", "0", "n/a", "7", "n/a"]
    assert doc["queues"][1] == {"brokerName": "broker-b", "queueId": 0, "old": None, "new": 7, "pushed": False}
    assert (doc["source"], doc["dryRun"]) == (None, False)
    assert len(view.footer) == 1 and view.footer[0].startswith("warning: broker-b had no consumer of G registered")


def test_offset_skip_and_clone_dry_runs() -> None:
    rows = [OffsetReset(MessageQueue("Orders", "broker-a", 0), 2, 9)]
    skip = offset_reset_view("G", "Orders", "skip", "latest", rows, dry_run=True)
    assert check(skip, "offset skip")["dryRun"] is True
    assert skip.title == "dry run, nothing changed: skip G on Orders to latest" and skip.footer == []
    clone = offset_reset_view("G2", "Orders", "clone", "the offsets of G", rows, dry_run=True, source="G")
    doc = check(clone, "offset clone")
    assert (doc["group"], doc["source"], doc["queues"][0]["pushed"]) == ("G2", "G", None)


def test_consume_modes_name_their_origin_and_a_set_no_replica_answered() -> None:
    from mqtools.client.admin.models.consume_modes import ConsumeMode, ConsumeModes, consume_modes_view
    from mqtools.common.presentation import Unreachable

    view = consume_modes_view(ConsumeModes("G", None, [
        ConsumeMode("broker-a", "10.0.0.1:10911", "master", "T", "POP", 1, "set"),
        ConsumeMode("broker-b", "10.0.0.4:10911", "slave", None, "PULL", None, "default"),
        ConsumeMode("broker-c", "10.0.0.5:10911", "master", None, "PULL", None, "no POP (RocketMQ 4)")],
        [Unreachable("broker-d", "10.0.0.7:10911", "timed out")]))
    doc = check(view)
    assert doc["partial"] and doc["topic"] is None
    assert view.rows[1] == ["broker-b*", "10.0.0.4:10911", None, "PULL", None, "default"]
    assert doc["brokers"][0] == {"brokerName": "broker-a", "addr": "10.0.0.1:10911", "source": "master",
                                 "topic": "T", "mode": "POP", "popShareQueueNum": 1, "origin": "set"}
    text = plain(view)
    assert "read from a slave (no master answering): broker-b" in text
    assert "partial: could not read broker-d" in text
