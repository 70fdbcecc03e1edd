"""The scrape: the poller's latest samples as Prometheus metric families, served by prometheus-client.

`collect` runs on the HTTP server's thread and only reads what the polls stored, so a scrape never waits
for a poll. Families with no sample are left out of the scrape.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from mqtools.exporter.catalogue import FAMILIES

if TYPE_CHECKING:
    from mqtools.exporter.poller import ExporterPoller


class PollerCollector(Collector):
    def __init__(self, poller: ExporterPoller) -> None:
        self.poller = poller

    def collect(self) -> Iterator[GaugeMetricFamily]:
        by_name: dict[str, GaugeMetricFamily] = {}
        for sample in self.poller.samples():
            family = by_name.get(sample.name)
            if family is None:
                spec = FAMILIES[sample.name]
                family = by_name[sample.name] = GaugeMetricFamily(sample.name, spec.help, labels=list(spec.labels))
            family.add_metric(list(sample.labels), sample.value)
        yield from by_name.values()


def registry_for(poller: ExporterPoller) -> CollectorRegistry:
    """A registry holding only the cluster's metrics (no process or platform collectors: those describe the
    exporter, not the cluster, and dashboard 10477 does not use them)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PollerCollector(poller))
    return registry
