"""The scrape: the poller's latest samples as Prometheus metric families, served by prometheus-client.

`collect` runs on the HTTP server's thread and only reads what the polls stored, so a scrape never waits
for a poll. Families with no sample are left out of the scrape.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from mqtools.common.errors import ToolkitError
from mqtools.common.exitcodes import EXIT_USAGE
from mqtools.exporter.catalogue import FAMILIES

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

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


class ListenError(ToolkitError):
    """The /metrics address cannot be bound (taken, not this host's): the command did nothing."""

    exit_code = EXIT_USAGE


def serve_metrics(poller: ExporterPoller, host: str, port: int) -> tuple[WSGIServer, int]:
    """prometheus-client's HTTP server for the poller's metrics, in its thread: the server and its port."""
    from prometheus_client import start_http_server

    try:
        server, _thread = start_http_server(port, addr=host, registry=registry_for(poller))
    except OSError as exc:
        raise ListenError(f"--listen {host}:{port}: {exc.strerror or exc}") from None
    return server, server.server_port


def registry_for(poller: ExporterPoller) -> CollectorRegistry:
    """A registry holding only the cluster's metrics (no process or platform collectors: those describe the
    exporter, not the cluster, and dashboard 10477 does not use them)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PollerCollector(poller))
    return registry
