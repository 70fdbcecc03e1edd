"""`mq admin cluster list` in both dialects, and the exit codes every command shares."""

from __future__ import annotations

import pytest
from support.adminsupport import json_of, mq_here, one_line_error
from support.clientsupport import Cluster

pytestmark = pytest.mark.integration


def test_cluster_list_json_has_every_broker_with_a_fresh_heartbeat(cluster: Cluster) -> None:
    doc = json_of(mq_here("admin", "cluster", "list", "-o", "json", namesrv=cluster.namesrv.addr), "ClusterList")
    brokers = {b["brokerName"]: b for b in doc["brokers"]}
    assert set(brokers) == {"broker-a", "broker-b"}
    for name, proc in cluster.brokers.items():
        row = brokers[name]
        assert row["addr"] == proc.addr and row["role"] == "MASTER" and row["brokerId"] == 0
        assert 0 <= row["heartbeatAgeMs"] < 60_000 and row["heartbeats"][cluster.namesrv.addr]["timeoutMs"] == 120_000
        assert row["commitLogMaxOffset"] is not None and row["error"] is None


def test_cluster_list_table_and_mqadmin_layout(cluster: Cluster) -> None:
    table = mq_here("admin", "cluster", "list", namesrv=cluster.namesrv.addr)
    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["CLUSTER", "BROKER", "BID"]
    assert sorted(line.split()[1] for line in lines[1:]) == ["broker-a", "broker-b"]
    classic = mq_here("admin", "CLUSTERLIST", namesrv=cluster.namesrv.addr)
    assert classic.returncode == 0, classic.stderr
    head, *rows = classic.stdout.splitlines()
    assert head.startswith("#Cluster Name" + " " * 11 + "#Broker Name" + " " * 12 + "#BID  #Addr" + " " * 18 + "#Version")
    assert sorted(r[24:46].strip() for r in rows) == ["broker-a", "broker-b"]


def test_no_name_server_unreachable_and_unknown_cluster() -> None:
    one_line_error(mq_here("admin", "cluster", "list"), 2, "no name server", "mq context add")
    one_line_error(mq_here("admin", "cluster", "list", namesrv="127.0.0.1:1"), 3, "127.0.0.1:1")


def test_unknown_cluster_is_a_usage_error(cluster: Cluster) -> None:
    one_line_error(mq_here("admin", "cluster", "list", "-c", "Nope", namesrv=cluster.namesrv.addr), 2, "Nope")


def test_bad_output_format(cluster: Cluster) -> None:
    one_line_error(mq_here("admin", "cluster", "list", "-o", "yaml", namesrv=cluster.namesrv.addr), 2, "yaml")


def test_cluster_rt_sends_to_every_master(cluster: Cluster) -> None:
    doc = json_of(mq_here("admin", "cluster", "rt", "-a", "3", "-o", "json", namesrv=cluster.namesrv.addr), "ClusterRT")
    assert {(b["brokerName"], b["addr"], b["ok"], b["failed"]) for b in doc["brokers"]} == {
        (name, proc.addr, 3, 0) for name, proc in cluster.brokers.items()}
    assert all(b["avgRtMs"] > 0 for b in doc["brokers"])
