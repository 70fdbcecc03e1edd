"""`mq exporter` scraped by a real Prometheus: PromQL through its HTTP API gives what `mq admin` says.

A 2m-2s cluster with a topic of 7 messages on broker-a and a group reset to offset 0 (lag 7, nobody online).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.adminsupport import mq
from support.mqproc import start_broker, start_namesrv
from support.ports import free_port
from support.presetcluster import PresetCluster, preset_cluster, wait_for
from support.promsupport import exporter, prometheus, scrape, until_value

import mqtools.exporter
from mqtools.client.admin import SyncMQAdmin
from mqtools.client.admin.models.groups import ResetTarget
from mqtools.exporter.catalogue import FAMILIES
from mqtools.remoting.bodies import MessageQueue, SubscriptionGroupConfig, TopicConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TOPIC, GROUP, SENT = "ExpTopic", "ExpGroup", 7


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PresetCluster]:
    with preset_cluster(tmp_path_factory.mktemp("exporter"), "2m-2s-async") as running:
        with SyncMQAdmin(running.namesrv) as admin:
            admin.topics.create_topic(TopicConfig(TOPIC, 4, 4), broker_addr=admin.master_addrs()["broker-a"])
            for i in range(SENT):
                admin.messages.send_message(TOPIC, b"x" * 100, broker_name="broker-a", queue_id=i % 4)
            admin.groups.create_subscription_group(SubscriptionGroupConfig(GROUP), cluster="DefaultCluster")
            admin.offsets.reset_offsets(GROUP, TOPIC, ResetTarget("offset", 0))
        yield running


def dashboard_queries() -> list[str]:
    board = json.loads(Path(mqtools.exporter.__file__).with_name("mq-dashboard.json").read_text())
    return [t["expr"] for p in board["panels"] for t in p.get("targets", [])]


def doc(*args: str, namesrv: str) -> dict:
    result = mq("admin", *args, "-o", "json", namesrv=namesrv)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def test_prometheus_reads_what_mq_admin_says(cluster: PresetCluster, tmp_path) -> None:
    ns = cluster.namesrv
    with exporter(ns) as addr, prometheus(tmp_path / "prom", {"mq": addr}) as prom:
        lag = doc("group", "progress", GROUP, namesrv=ns)["diffTotal"]
        assert lag == SENT
        until_value(prom, f'sum(rocketmq_group_diff{{group="{GROUP}",countOfOnlineConsumers="0",msgModel="1"}})', lag)
        assert prom.value(f'rocketmq_producer_offset{{topic="{TOPIC}",broker="broker-a"}}') == SENT
        assert prom.value(f'sum(rocketmq_consumer_offset{{group="{GROUP}"}})') == 0
        assert prom.value(f'max(rocketmq_group_get_latency_by_storetime{{group="{GROUP}"}})') > 0
        # replication as `mq admin ha status` has it, and both groups safe to stop
        slaves = [s for g in doc("ha", "status", namesrv=ns)["groups"] for s in g["slaves"]]
        assert len(slaves) == 2 and all(s["diffBytes"] is not None for s in slaves)
        until_value(prom, "count(mq_ha_diff_bytes)", 2)
        assert prom.value("sum(mq_ha_diff_bytes)") == sum(s["diffBytes"] for s in slaves)
        until_value(prom, "sum(mq_ha_ready)", 2)
        assert prom.value("sum(mq_broker_set_master_up)") == prom.value("count(mq_broker_set_master_up)") == 2
        assert prom.value("count(mq_namesrv_heartbeat_age_seconds)") == 4
        assert prom.value("count(rocketmq_brokeruntime_commitlog_maxoffset)") == 2  # masters, as rocketmq-exporter
        assert prom.value("count(rocketmq_broker_commitlog_diff)") == 2
        # a figure mq's broker does not give is absent, not 0
        assert prom.query("rocketmq_brokeruntime_put_latency_99") == []
        wait_for(prom.targets_up, 10, "the exporter's target up")
        # every query of the shipped dashboard runs, on metrics the exporter serves; those not about controller
        # mode, retries or consumption (none here) have data
        for expr in dashboard_queries():
            assert set(re.findall(r"\b(?:rocketmq|mq)_[a-z0-9_]+", expr)) <= FAMILIES.keys(), expr
            found = prom.query(expr)
            assert found or re.search(r"controller|retrydiff|consumer_tps", expr), expr
        text = scrape(addr)
    names = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}
    assert names <= FAMILIES.keys() and "rocketmq_group_diff" in names


def test_a_broker_serves_its_own_metrics_as_rocketmq_5_names_them(tmp_path) -> None:
    """metricsExporterType=PROM: Prometheus scrapes the broker itself; what it counted agrees with what was sent
    and pulled (rocketmq_messages_in_total, rocketmq_messages_out_total, the throughput counters)."""
    port = free_port()
    namesrv = start_namesrv(tmp_path)
    try:
        broker = start_broker(tmp_path, namesrv.addr, "broker-m", brokerClusterName="MetricsCluster",
                              metricsExporterType="PROM", metricsPromExporterHost="127.0.0.1",
                              metricsPromExporterPort=str(port))
        try:
            with SyncMQAdmin(namesrv.addr) as admin:
                admin.topics.create_topic(TopicConfig(TOPIC, 2, 2), broker_addr=broker.addr)
                for i in range(SENT):
                    admin.messages.send_message(TOPIC, b"y" * 50, broker_name="broker-m", queue_id=i % 2)
                pulled = sum(len(admin.messages.pull_messages(MessageQueue(TOPIC, "broker-m", q), 0, group=GROUP).messages)
                             for q in (0, 1))
            assert pulled == SENT
            with prometheus(tmp_path / "prom", {"broker": f"127.0.0.1:{port}"}) as prom:
                base = 'cluster="MetricsCluster",node_type="broker",node_id="broker-m"'
                until_value(prom, f'rocketmq_messages_in_total{{{base},topic="{TOPIC}",is_system="false"}}', SENT)
                assert prom.value(f'rocketmq_throughput_in_total{{topic="{TOPIC}"}}') >= SENT * 50
                assert prom.value(f'rocketmq_messages_out_total{{topic="{TOPIC}",consumer_group="{GROUP}",'
                                  'is_retry="false"}') == SENT
                assert prom.value(f"rocketmq_topic_number{{{base}}}") > 1
                assert prom.value("rocketmq_broker_permission") == 6
        finally:
            broker.stop()
    finally:
        namesrv.stop()


def test_a_paused_broker_drops_only_its_own_series_and_scrapes_stay_quick(cluster: PresetCluster) -> None:
    """broker-b's slave SIGSTOPped: its runtime poll times out and its series go (absent, not stale), while
    every other broker's keep coming and a scrape never waits for the stuck poll."""
    slave = cluster.addr("broker-b-s")
    with exporter(cluster.namesrv, "--timeout", "3") as addr:
        wait_for(lambda: f'mq_exporter_poll_ok{{job="runtime:{slave}"}} 1.0' in scrape(addr), 20, "a first poll")
        cluster.pause("broker-b-s")
        try:
            wait_for(lambda: f'mq_exporter_poll_ok{{job="runtime:{slave}"}} 0.0' in scrape(addr), 30, "a failed poll")
            for _ in range(3):
                began = time.monotonic()
                text = scrape(addr)
                # Read from what the polls stored: one that waited for the stuck poll would take up to its 3 s.
                assert time.monotonic() - began < 1.5
                assert f'brokerIP="{slave}"' not in text.split("# HELP rocketmq_broker_commitlog_diff")[1].split("# HELP")[0]
                others = [line for line in text.splitlines() if line.startswith("mq_exporter_poll_ok{job=\"runtime:")
                          and slave not in line]
                assert len(others) == 3 and all(line.endswith(" 1.0") for line in others), others
        finally:
            cluster.resume("broker-b-s")


def test_each_name_server_is_asked_on_its_own_and_one_that_is_down_says_so(cluster: PresetCluster) -> None:
    """A second name server in -n with nothing behind it (a killed one): mq_namesrv_up 0 for it, 1 and the four
    brokers for the live one, and everything else still polled through the live one. Before, the client's
    failover hid it: no series said a name server was down."""
    dead = f"127.0.0.1:{free_port()}"
    with exporter(f"{cluster.namesrv};{dead}", "--timeout", "1") as addr:
        wait_for(lambda: f'mq_namesrv_up{{namesrv="{dead}"}} 0.0' in scrape(addr), 20, "the dead name server probed")
        wait_for(lambda: "mq_broker_up{" in scrape(addr), 20, "the brokers polled")
        text = scrape(addr)
    assert f'mq_namesrv_up{{namesrv="{cluster.namesrv}"}} 1.0' in text
    assert f'mq_namesrv_brokers{{namesrv="{cluster.namesrv}"}} 4.0' in text
    assert f'mq_namesrv_brokers{{namesrv="{dead}"}}' not in text  # not known, not 0
