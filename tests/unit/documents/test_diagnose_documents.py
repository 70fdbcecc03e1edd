"""The diagnose documents (a group's, brokers', the cluster's verdicts), rendered from hand-made diagnoses (no
cluster)."""

from __future__ import annotations

from support.documents import check

from mqtools.cli.output import plain
from mqtools.client.admin.models.live import NamesrvStatus
from mqtools.common.presentation import cell
from mqtools.diagnose.broker import BrokerDiagnosis, Finding, broker_diagnosis_view
from mqtools.diagnose.cluster import ClusterDiagnosis, Item, cluster_diagnosis_view, namesrv_items
from mqtools.diagnose.findings import Severity
from mqtools.diagnose.group import GroupDiagnosis, HeldQueue, Member, QueueEvidence, group_diagnosis_view
from mqtools.remoting.bodies import MessageQueue

A0, B1 = MessageQueue("Orders", "broker-a", 0), MessageQueue("Orders", "broker-b", 1)


def test_group_diagnosis_with_unknown_rates_and_a_member_not_read() -> None:
    d = GroupDiagnosis("G", "stalled", "1 queue stalled", 12.345, 1500, 1400, 12.34567, None, None, 3, None,
                       [QueueEvidence(A0, 100, 50, 50, 1.23456, None, "c1@host", 1_700_000_000_000, True),
                        QueueEvidence(B1, 10, None, 10, 0.0, 0.5, None, None, None)],
                       [Member("c1@host", "V5_1_0", True, {A0: HeldQueue(True)}), Member("c2")],
                       ["slow"], ["mq admin group connections G"])
    view = group_diagnosis_view(d)
    doc = check(view)
    assert view.title == "G: STALLED"
    assert view.rows[0] == ["Orders", "broker-a", 0, 100, 50, 50, 1.23456, None, "c1@host", True]
    assert [cell(v) for v in view.rows[1]] == ["Orders", "broker-b", "1", "10", "n/a", "10", "0.00", "0.50", "n/a",
                                               "n/a"]
    assert view.footer == [
        "1 queue stalled",
        "window 12.3 s: lag 1,500 (was 1,400), in 12.3 msgs/s, out n/a, drains in n/a, retries 3, to DLQ n/a",
        "member c1@host V5_1_0 orderly, holds 1 queue(s)",
        "member c2 n/a, holds n/a queue(s)",
        "also: slow",
        "next: mq admin group connections G",
    ]
    assert doc["consumeTps"] is None and doc["produceTps"] == 12.346 and doc["severity"] == "action"
    assert doc["queues"][1]["consumerOffset"] is None and doc["members"][1]["queuesHeld"] is None


def test_a_healthy_group_without_queues_still_has_its_table() -> None:
    view = group_diagnosis_view(GroupDiagnosis("H", "healthy", "fine", 10.0, 5, 5, 1000.0, 1234567.8, 0.0, 0, 0))
    doc = check(view)
    assert view.rows == [] and doc["severity"] == "ok"
    assert view.footer[1] == ("window 10.0 s: lag 5 (was 5), in 1,000.0 msgs/s, out 1,234,567.8 msgs/s, drains in "
                              "0 s, retries 0, to DLQ 0")
    header = "TOPIC  BROKER  QID  BROKER OFFSET  CONSUMER OFFSET  LAG  IN/S  OUT/S  OWNER  LOCKED"
    assert plain(view).splitlines()[:2] == ["H: HEALTHY", header]


def test_broker_diagnosis_of_a_master_and_a_slave_not_judged() -> None:
    busy = BrokerDiagnosis("broker-a", "10.0.0.1:10911", "SYNC_MASTER", "busy: send queue", "sends wait", 5.0,
                           [Finding("busy: send queue", Severity.ACTION, "waited 250 ms", 250.0, 200.0,
                                    "waitTimeMillsInSendQueue", "SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE]"),
                            Finding("traffic changed", Severity.INFO, "put TPS fell", None, None, None, None)],
                           {"putTps10s": 1234.5, "putTps10m": None, "sendQueueSize": 3, "sendQueueHeadWaitMs": 250,
                            "pageCacheLockMs": 0, "dispatchBehindBytes": 1 << 20, "diskRatio": 0.456,
                            "openFiles": 412, "openFilesLimit": 1048576})
    unknown = BrokerDiagnosis("broker-a", "10.0.0.2:10911", None, "unknown", "cannot judge: runtime info", 5.0)
    view = broker_diagnosis_view([busy, unknown])
    doc = check(view)
    assert view.title == "10.0.0.1:10911: BUSY: SEND QUEUE 10.0.0.2:10911: UNKNOWN"
    assert view.rows[0] == ["broker-a", "10.0.0.1:10911", "busy: send queue", 250.0, 200.0,
                            "waitTimeMillsInSendQueue", "SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE]"]
    assert [cell(v) for v in view.rows[1][3:]] == ["n/a", "n/a", "n/a", "n/a"]
    assert view.footer == [
        "broker-a 10.0.0.1:10911 (SYNC_MASTER): BUSY: SEND QUEUE: sends wait",
        "broker-a 10.0.0.2:10911 (n/a): UNKNOWN: cannot judge: runtime info",
        ("10.0.0.1:10911: put TPS 1,234 (10 s) n/a (10 min), send queue 3 waiting 250 ms, page cache lock 0 ms, "
         "dispatch behind 1,048,576 B, disk 46%, file descriptors 412 of 1,048,576"),
        ("10.0.0.2:10911: put TPS n/a (10 s) n/a (10 min), send queue n/a waiting n/a, page cache lock n/a, "
         "dispatch behind n/a, disk n/a, file descriptors n/a of n/a"),
    ]
    assert [b["severity"] for b in doc["brokers"]] == ["action", "unknown"]
    assert doc["brokers"][0]["findings"][1]["figure"] is None and doc["brokers"][1]["role"] is None


def test_cluster_diagnosis_worst_first_with_unused_groups() -> None:
    d = ClusterDiagnosis(10.0, [Item("broker", "broker-a 10.0.0.1:10911", "busy: send queue", Severity.ACTION,
                                     "sends wait", {}),
                                Item("group", "G", "healthy", Severity.OK, "fine", {})], ["Unused1", "Unused2"])
    view = cluster_diagnosis_view(d)
    doc = check(view)
    assert view.title == "cluster: ACTION (2 verdicts, worst first)"
    assert view.rows[1] == ["group", "G", "healthy", "ok", "fine"]
    assert view.footer == ["2 group(s) configured but never used: Unused1, Unused2"]
    assert doc["worst"] == "action" and doc["unusedGroups"] == ["Unused1", "Unused2"]


def test_an_empty_cluster_diagnosis_is_ok_and_has_no_footer() -> None:
    view = cluster_diagnosis_view(ClusterDiagnosis(10.0))
    doc = check(view)
    assert (view.title, view.rows, view.footer) == ("cluster: OK (0 verdicts, worst first)", [], [])
    assert doc["items"] == [] and doc["worst"] == "ok"


def test_a_cluster_diagnosis_that_could_not_list_a_sets_groups_is_partial() -> None:
    """Those groups have no verdict: the document says so (until stop 106 it was whole)."""
    from mqtools.common.presentation import Unreachable

    doc = check(cluster_diagnosis_view(ClusterDiagnosis(10.0, [], [], [
        Unreachable("broker-b", None, "its groups: connection refused")])))
    assert doc["partial"] and doc["unreachable"][0]["reason"] == "its groups: connection refused"


def test_name_servers_judged_each_against_what_the_others_list() -> None:
    both, one = frozenset({"10.0.0.1:10911", "10.0.0.2:10911"}), frozenset({"10.0.0.1:10911"})
    items = namesrv_items([NamesrvStatus("ns1:9876", True, 2.4, both, True),
                            NamesrvStatus("ns2:9876", False, None, None, None, "timed out after 5.000s"),
                            NamesrvStatus("ns3:9876", True, 1.0, one, True)])
    assert [(i.name, i.verdict, i.severity) for i in items] == [
        ("ns1:9876", "healthy", Severity.OK), ("ns2:9876", "not answering", Severity.ACTION),
        ("ns3:9876", "missing brokers", Severity.ACTION)]
    assert items[0].summary == "answers in 2 ms and lists every broker (2)"
    assert items[1].summary.startswith("timed out after 5.000s: a client that chose it waits one timeout")
    assert items[2].detail["missing"] == ["10.0.0.2:10911"] and "does not list 10.0.0.2:10911" in items[2].summary
    doc = check(cluster_diagnosis_view(ClusterDiagnosis(10.0, items)))
    assert [i["detail"]["rttMs"] for i in doc["items"]] == [2.4, None, 1.0] and doc["worst"] == "action"
    assert [i["detail"]["certificateDaysLeft"] for i in doc["items"]] == [None, None, None]  # no TLS: not known


def test_a_name_servers_certificate_is_judged_as_a_brokers() -> None:
    """From the verified handshake: within a week action, within a month info, else a healthy line that says it."""
    brokers, now, day = frozenset({"10.0.0.1:10911"}), 1_800_000_000.0, 86_400
    items = namesrv_items([NamesrvStatus(f"ns{d}:9876", True, 1.0, brokers, True, certificate_not_after=now + d * day)
                           for d in (3, 20, 300)], now_s=now)
    assert [(i.verdict, i.severity, i.detail["certificateDaysLeft"]) for i in items] == [
        ("TLS certificate", Severity.ACTION, 3.0), ("TLS certificate", Severity.INFO, 20.0),
        ("healthy", Severity.OK, 300.0)]
    assert items[0].summary.startswith("the TLS certificate it serves expires in 3 days: clients and brokers")
    assert items[2].summary == "answers in 1 ms and lists every broker (1); its TLS certificate has 300 days left"
    check(cluster_diagnosis_view(ClusterDiagnosis(10.0, items)))


def test_a_name_servers_expired_certificate_and_one_due_beside_missing_brokers_are_said() -> None:
    both, one, now, day = frozenset({"b1:10911", "b2:10911"}), frozenset({"b1:10911"}), 1_800_000_000.0, 86_400
    expired, partitioned, whole = namesrv_items([
        NamesrvStatus("ns1:9876", True, 1.0, both, True, certificate_not_after=now - 2 * day),
        NamesrvStatus("ns2:9876", True, 1.0, one, True, certificate_not_after=now + 3 * day),
        NamesrvStatus("ns3:9876", True, 1.0, both, True)], now_s=now)
    assert expired.summary.startswith("the TLS certificate it serves expired 2 days ago: clients")  # not "in -2"
    assert (partitioned.verdict, partitioned.severity) == ("missing brokers", Severity.ACTION)
    assert partitioned.summary.endswith("; and the TLS certificate it serves expires in 3 days (copy the renewed "
                                        "certificate and key over tls.server.certPath and keyPath: taken without a "
                                        "restart)")
    assert whole.verdict == "healthy"
