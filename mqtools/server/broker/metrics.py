"""BrokerMetricsManager: the broker's own metrics for Prometheus (metricsExporterType=PROM), as RocketMQ 5
names them.

RocketMQ 5 counts on the send and pull paths through OpenTelemetry and serves the counters on
metricsPromExporterHost:metricsPromExporterPort. mq's broker already counts what its runtime info and
VIEW_BROKER_STATS_DATA report (BrokerStats: messages and bytes per topic, per topic and group); a scrape reads
those counters on the HTTP server's thread, so enabling the exporter adds no work to the send path, only the
scrapes themselves (bench/metrics_cost.py measures both). Labels as RocketMQ 5 sets them: cluster,
node_type=broker, node_id=brokerName on every series; topic, is_system, and consumer_group, is_retry where
they apply. Not served: rocketmq_rpc_latency and the other histograms (mq keeps no per-request timings).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from mqtools.common.topics import is_retry_topic, is_system_group, is_system_topic
from mqtools.server.lifecycle import StartError

if TYPE_CHECKING:
    from http.server import ThreadingHTTPServer

    from mqtools.server.broker.config import BrokerConfig
    from mqtools.server.broker.stats import BrokerStats
    from mqtools.server.broker.subscription import SubscriptionGroupManager
    from mqtools.server.broker.topic_config import TopicConfigManager

log = logging.getLogger(__name__)
PROM, DISABLE = "PROM", "DISABLE"
BASE = ("cluster", "node_type", "node_id")


class BrokerMetricsCollector(Collector):
    def __init__(self, config: BrokerConfig, stats: BrokerStats, topics: TopicConfigManager,
                 groups: SubscriptionGroupManager) -> None:
        self.config, self.stats, self.topics, self.groups = config, stats, topics, groups

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        base = [self.config.broker_cluster_name, "broker", self.config.broker_name]
        msgs_in = CounterMetricFamily("rocketmq_messages_in", "messages put", labels=[*BASE, "topic", "is_system"])
        bytes_in = CounterMetricFamily("rocketmq_throughput_in", "message bytes put",
                                       labels=[*BASE, "topic", "is_system"])
        for topic, counter in list(self.stats.topic_put.items()):
            labels = [*base, topic, _bool(is_system_topic(topic))]
            msgs_in.add_metric(labels, counter.total)
            bytes_in.add_metric(labels, self.stats.topic_put_bytes.get(topic, 0))
        out_labels = [*BASE, "topic", "consumer_group", "is_retry", "is_system"]
        msgs_out = CounterMetricFamily("rocketmq_messages_out", "messages pulled", labels=out_labels)
        bytes_out = CounterMetricFamily("rocketmq_throughput_out", "message bytes pulled", labels=out_labels)
        for (topic, group), counter in list(self.stats.group_get.items()):
            labels = [*base, topic, group, _bool(is_retry_topic(topic)),
                      _bool(is_system_topic(topic) or is_system_group(group))]
            msgs_out.add_metric(labels, counter.total)
            bytes_out.add_metric(labels, self.stats.group_get_bytes.get((topic, group), 0))
        yield from (msgs_in, bytes_in, msgs_out, bytes_out)
        for name, help_text, value in (
                ("rocketmq_topic_number", "topics on this broker", len(self.topics.table)),
                ("rocketmq_consumer_group_number", "subscription groups on this broker", len(self.groups.table)),
                ("rocketmq_broker_permission", "the broker's permission (brokerPermission)",
                 self.config.broker_permission)):
            gauge = GaugeMetricFamily(name, help_text, labels=list(BASE))
            gauge.add_metric(base, value)
            yield gauge


def _bool(value: bool) -> str:
    return "true" if value else "false"


class BrokerMetricsManager:
    """Serves the collector while the broker runs, when metricsExporterType is PROM."""

    def __init__(self, config: BrokerConfig, stats: BrokerStats, topics: TopicConfigManager,
                 groups: SubscriptionGroupManager) -> None:
        self.config = config
        self.collector = BrokerMetricsCollector(config, stats, topics, groups)
        self._server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int | None:
        return None if self._server is None else self._server.server_port

    async def start(self) -> None:
        kind = self.config.metrics_exporter_type.upper()
        if kind != PROM:
            if kind != DISABLE:
                log.warning("metricsExporterType=%s is not supported by mq (PROM is): no metrics are served", kind)
            return
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self.collector)
        host = self.config.metrics_prom_exporter_host or "0.0.0.0"
        try:
            self._server, _thread = start_http_server(self.config.metrics_prom_exporter_port, addr=host,
                                                      registry=registry)
        except OSError as exc:
            raise StartError(f"cannot serve metrics on {host}:{self.config.metrics_prom_exporter_port}: "
                             f"{exc.strerror or exc}") from None
        log.info("metrics (Prometheus) on %s:%d", host, self.port)

    def shutdown(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
