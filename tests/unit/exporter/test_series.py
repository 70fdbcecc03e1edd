"""Admin answers into samples: rocketmq-exporter's names and labels, and nothing for what was not given."""

from __future__ import annotations

from mqtools.client.admin.models.brokers import BrokerRow, BrokerRuntime, ClusterSnapshot
from mqtools.client.admin.models.groups import ConsumerProgress, QueueProgress
from mqtools.common.presentation import Unreachable
from mqtools.exporter.catalogue import FAMILIES
from mqtools.exporter.series import (
    broker_up_samples,
    group_samples,
    master_up_samples,
    node_samples,
    runtime_samples,
)
from mqtools.remoting.bodies import MessageQueue


def test_runtime_figures_by_rocketmq_exporters_names_and_only_those_given() -> None:
    rt = BrokerRuntime.from_table({
        "brokerVersionDesc": "V4_9_8", "brokerVersion": "413", "bootTimestamp": "1700000000000",
        "putTps": "12.5 10.0 8.25", "commitLogMaxOffset": "4096", "remainHowManyDataToFlush": "1.5 KiB",
        "commitLogDirCapacity": "Total : 2.0 GiB, Free : 512.0 MiB.",
        "putMessageDistributeTime": "[<=0ms]:7 [0~10ms]:3 [10~50ms]:0 [10s~]:1", "pageCacheLockTimeMills": "n/a"})
    got = {s.name: s for s in runtime_samples("C", "10.0.0.1:10911", rt)}
    assert got["rocketmq_brokeruntime_put_tps10"].value == 12.5 and got["rocketmq_brokeruntime_put_tps600"].value == 8.25
    assert got["rocketmq_brokeruntime_commitlog_maxoffset"].labels == (
        "C", "10.0.0.1:10911", "", "V4_9_8", "1700000000000", "413")
    assert got["rocketmq_brokeruntime_remain_howmanydata_toflush"].value == 1536
    assert got["rocketmq_brokeruntime_commitlogdir_capacity_total"].value == 2 * 1024**3
    assert got["rocketmq_brokeruntime_commitlogdir_capacity_free"].value == 512 * 1024**2
    assert (got["rocketmq_brokeruntime_pmdt_0ms"].value, got["rocketmq_brokeruntime_pmdt_10stomore"].value) == (7, 1)
    assert "rocketmq_brokeruntime_pagecache_lock_time_mills" not in got  # not a number: absent, not 0
    assert "rocketmq_brokeruntime_getmiss_tps10" not in got  # not given
    assert got.keys() <= FAMILIES.keys()


def test_open_files_and_certificate_expiry_of_every_node_that_reports_them() -> None:
    mine = BrokerRuntime.from_table({"openFileDescriptors": "322", "maxOpenFileDescriptors": "1048576",
                                     "tlsCertificateNotAfter": "1796083200000"})
    assert [(s.name, s.labels, s.value) for s in node_samples("C", "s:10911", mine)] == [
        ("mq_broker_open_files", ("C", "s:10911"), 322.0), ("mq_broker_open_files_limit", ("C", "s:10911"), 1048576.0),
        ("mq_broker_tls_certificate_expiry_timestamp_seconds", ("C", "s:10911"), 1796083200.0)]
    plain = BrokerRuntime.from_table({"openFileDescriptors": "20", "maxOpenFileDescriptors": "1024"})
    assert [s.name for s in node_samples("C", "p:10911", plain)] == ["mq_broker_open_files",
                                                                     "mq_broker_open_files_limit"]  # no TLS
    assert node_samples("C", "a:10911", BrokerRuntime.from_table({"putTps": "1 1 1"})) == []  # Apache's
    assert {s.name for s in node_samples("C", "s:10911", mine)} <= FAMILIES.keys()


def test_a_groups_diff_per_topic_with_its_retry_topic_apart_and_offsets_per_broker() -> None:
    a0, a1 = MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)
    retry = MessageQueue("%RETRY%G", "broker-b", 0)
    progress = ConsumerProgress("G", [QueueProgress(a0, 10, 4, None), QueueProgress(a1, 5, None, None),
                                      QueueProgress(retry, 3, 3, None)])
    got = group_samples({"broker-a": "C", "broker-b": "C"}, progress, None, {("broker-a", "T"): 900})
    assert [(s.name, s.labels, s.value) for s in got] == [
        ("rocketmq_group_retrydiff", ("G", "%RETRY%G", "0", "1"), 0.0),
        ("rocketmq_group_diff", ("G", "T", "0", "1"), 11.0),
        ("rocketmq_consumer_offset", ("C", "broker-a", "T", "G"), 4.0),
        ("rocketmq_consumer_offset", ("C", "broker-b", "%RETRY%G", "G"), 3.0),
        ("rocketmq_group_get_latency_by_storetime", ("C", "broker-a", "T", "G"), 900.0)]


def test_a_group_read_without_some_broker_set_has_no_diff_only_the_offsets_it_read() -> None:
    """The diff series has no broker label: summed without broker-b it would be an undercount in silence."""
    progress = ConsumerProgress("G", [QueueProgress(MessageQueue("T", "broker-a", 0), 10, 4, None)],
                                unreachable=[Unreachable("broker-b", "s-b:10911", "timed out")])
    got = group_samples({"broker-a": "C"}, progress, None, {})
    assert [(s.name, s.labels, s.value) for s in got] == [("rocketmq_consumer_offset", ("C", "broker-a", "T", "G"), 4.0)]


def test_a_broker_set_without_a_master_or_with_a_silent_one_is_down() -> None:
    snap = ClusterSnapshot(["n:9876"], {"C": ["broker-a", "broker-b", "broker-c"]}, [
        BrokerRow("C", "broker-a", 1, "s-a:10911"),
        BrokerRow("C", "broker-b", 0, "m-b:10911"), BrokerRow("C", "broker-b", 1, "s-b:10911"),
        BrokerRow("C", "broker-c", 0, "m-c:10911")], True)
    got = master_up_samples(snap, {"m-b:10911": True, "m-c:10911": False})
    assert [(s.name, s.labels, s.value) for s in got] == [
        ("mq_broker_set_master_up", ("C", "broker-a"), 0.0),
        ("mq_broker_set_master_up", ("C", "broker-b"), 1.0),
        ("mq_broker_set_master_up", ("C", "broker-c"), 0.0)]
    assert {s.name for s in got} <= FAMILIES.keys()
    # a master not polled yet is not known to answer (until stop 106 it counted as up)
    assert [s.labels for s in master_up_samples(snap, {"m-c:10911": False})] == [("C", "broker-a"), ("C", "broker-c")]
    # every node, slaves too: one whose runtime poll failed is 0, one not polled yet has no sample (not known)
    up = broker_up_samples(snap, {"m-b:10911": True, "m-c:10911": False, "s-a:10911": False})
    assert [(s.labels, s.value) for s in up] == [
        (("C", "s-a:10911", "broker-a", "slave"), 0.0), (("C", "m-b:10911", "broker-b", "master"), 1.0),
        (("C", "m-c:10911", "broker-c", "master"), 0.0)]
    assert {s.name for s in up} == {"mq_broker_up"} <= FAMILIES.keys()


def test_each_name_server_up_or_down_its_brokers_and_its_certificate_where_a_verified_handshake_saw_it() -> None:
    from mqtools.client.admin.models.live import NamesrvStatus
    from mqtools.exporter.series import namesrv_samples

    got = namesrv_samples([
        NamesrvStatus("n1:9876", True, 1.5, frozenset({"m:10911", "s:10911"}), True,
                      certificate_not_after=1_800_000_000.0),
        NamesrvStatus("n2:9876", True, 2.0, frozenset({"m:10911"}), False),  # plain, or not verified
        NamesrvStatus("n3:9876", False, None, None, None, "connect refused")])
    assert [(s.name, s.labels, s.value) for s in got] == [
        ("mq_namesrv_up", ("n1:9876",), 1.0), ("mq_namesrv_brokers", ("n1:9876",), 2.0),
        ("mq_namesrv_tls_certificate_expiry_timestamp_seconds", ("n1:9876",), 1_800_000_000.0),
        ("mq_namesrv_up", ("n2:9876",), 1.0), ("mq_namesrv_brokers", ("n2:9876",), 1.0),
        ("mq_namesrv_up", ("n3:9876",), 0.0)]  # its brokers are not known: no sample
    assert {s.name for s in got} <= FAMILIES.keys()


def test_timer_figures_per_broker_set_and_pending_per_topic_where_a_wheel_gave_them() -> None:
    from mqtools.client.admin.models.timer import TimerBrokerStatus, TimerStatus
    from mqtools.exporter.series import timer_samples

    status = TimerStatus([
        TimerBrokerStatus("broker-a", "a:10911", "master", True, pending={"T1": 3, "T2": 0}, read_behind_s=2,
                          offset_behind=None),
        TimerBrokerStatus("broker-b", "b:10911", "slave", False),  # no timer store: nothing, never a 0
        TimerBrokerStatus("broker-c", "c:10911", "master", None)])  # RocketMQ 4: not known
    got = timer_samples({"broker-a": "C"}, status)
    assert [(s.name, s.labels, s.value) for s in got] == [
        ("mq_timer_pending", ("C", "broker-a", "T1"), 3.0), ("mq_timer_pending", ("C", "broker-a", "T2"), 0.0),
        ("mq_timer_read_behind_seconds", ("C", "broker-a"), 2.0)]
    assert {s.name for s in got} <= FAMILIES.keys()


def test_pop_in_flight_only_when_every_set_gave_it() -> None:
    from mqtools.client.admin.models.groups import PopFigures
    from mqtools.exporter.series import pop_samples

    whole = ConsumerProgress("G", pop=PopFigures(popped=True, inflight=5, revive_due=2))
    assert [(s.name, s.value) for s in pop_samples(whole)] == [("mq_group_pop_inflight", 5.0),
                                                                ("mq_group_pop_revive_due", 2.0)]
    assert pop_samples(ConsumerProgress("G", pop=PopFigures(popped=True, inflight=5, complete=False))) == []
    assert pop_samples(ConsumerProgress("G", pop=PopFigures(popped=False))) == []
    assert pop_samples(ConsumerProgress("G")) == []


def test_a_rocketmq_5_broker_gives_the_transferred_tps_under_its_new_name() -> None:
    rt = BrokerRuntime.from_table({"getTransferredTps": "3.0 2.0 1.0"})  # Apache 5.x: the 4.x key is gone
    got = {s.name: s.value for s in runtime_samples("C", "a:10911", rt)}
    assert (got["rocketmq_brokeruntime_gettransfered_tps10"], got["rocketmq_brokeruntime_gettransfered_tps600"]) == (
        3.0, 1.0)


def test_proxies_up_or_down_and_their_clients_by_kind_and_language() -> None:
    from mqtools.client.admin.models.proxies import ProxyClient, ProxyClients, ProxyRead
    from mqtools.exporter.series import proxy_samples

    mine = ProxyRead("mq:8080", [ProxyClient("mq:8080", "PUSH", "G", "c1", "a", "JAVA", "V5_0_8"),
                                 ProxyClient("mq:8080", "PRODUCER", "T1", "p1", "b", "PYTHON", "V5_1_2"),
                                 ProxyClient("mq:8080", "PRODUCER", "T2", "p1", "b", "PYTHON", "V5_1_2")], True)
    apaches = ProxyRead("apache:8080", [ProxyClient("apache:8080", "SIMPLE", "H", "c2", "c", "JAVA", "V5_5_0")], False)
    got = {(s.name, s.labels): s.value for s in proxy_samples(ProxyClients(
        [mine, apaches], ["G", "H"], ["T1", "T2"], None, [Unreachable(None, "dead:8080", "connection refused")]))}
    assert {k[1][0]: v for k, v in got.items() if k[0] == "mq_proxy_up"} == {"mq:8080": 1, "apache:8080": 1,
                                                                            "dead:8080": 0}
    assert got[("mq_proxy_clients", ("mq:8080", "PRODUCER", "PYTHON"))] == 1  # one client of two topics
    assert got[("mq_proxy_clients", ("mq:8080", "PUSH", "JAVA"))] == 1
    assert got[("mq_proxy_clients", ("mq:8080", "SIMPLE", "PYTHON"))] == 0  # known to be none
    assert not any(k[1][:2] == ("apache:8080", "PRODUCER") for k in got)  # Apache's lists no producers: unknown
    assert not any(k[1][0] == "dead:8080" and k[0] != "mq_proxy_up" for k in got)
    assert got[("mq_proxy_consumer_groups", ("apache:8080",))] == 1
    assert {name for name, _ in got} <= FAMILIES.keys()


def test_proxies_asked_about_nothing_give_no_counts() -> None:
    """The name servers down: the cluster's groups and topics could not be listed, so nothing was asked. Until stop
    106 every proxy answered mq_proxy_consumer_groups 0."""
    from mqtools.client.admin.models.proxies import ProxyClients, ProxyRead
    from mqtools.exporter.series import proxy_samples

    got = {(s.name, s.labels): s.value for s in proxy_samples(ProxyClients(
        [ProxyRead("mq:8080", [], True)], [], [], "no name server answered"))}
    assert got == {("mq_proxy_up", ("mq:8080",)): 1.0}
