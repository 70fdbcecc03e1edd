"""`mq proxy` with Apache 5's send fault tolerance on (sendLatencyEnable, startDetectorEnable) and one of two
masters hung (SIGSTOP): after the one send that meets the hung broker, the proxy sends elsewhere; once the broker
runs again, the detector finds it and sends reach it again. Off (Apache's default) the proxy keeps taking the
hung broker's queues in turn. Apache's proxy does the same in both cases
(tests/reference/test_proxy_send_latency_on_apache.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from support.clientsupport import Cluster, broker_cluster, create_topic
from support.mqproc import MqProcess, start_proxy
from support.proxylatency import EXPECTED, LATENCY_ON, QUEUES, TOPIC, hang_one_of_two

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from broker_cluster(tmp_path_factory.mktemp("pxlatency"), ("broker-la", "broker-lb"),
                              brokerClusterName="LatencyIT")


@pytest.fixture(scope="module")
def proxy(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MqProcess]:
    asyncio.run(create_topic(cluster, TOPIC, QUEUES))
    proc = start_proxy(tmp_path_factory.mktemp("pxlatencyconf"), "LatencyIT", cluster.namesrv.addr, **LATENCY_ON)
    try:
        yield proc
    finally:
        proc.stop()
        assert "Traceback" not in proc.output(), proc.output()


def test_sends_leave_a_hung_master_and_come_back_once_the_detector_hears_from_it(
        cluster: Cluster, proxy: MqProcess) -> None:
    hung, live = cluster.brokers["broker-la"], cluster.brokers["broker-lb"]
    assert hang_one_of_two(proxy.addr, (hung.addr, hung.pid), live.addr) == EXPECTED
