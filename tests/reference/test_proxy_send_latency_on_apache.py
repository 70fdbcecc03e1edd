"""Apache's rocketmq-proxy 5.5.0 as the oracle for `mq proxy`'s sendLatencyEnable and startDetectorEnable: the same
sends (support/proxylatency.py) through Apache's proxy over two Apache 5.5.0 masters, one of them SIGSTOPped, give
the outcome mq's proxy over mq's masters gives (tests/integration/proxy/test_proxy_send_latency.py asserts the same
EXPECTED). Its own cluster: the session's proxy worlds have one broker each, and a hung broker would stall the other
scenarios."""

from __future__ import annotations

from pathlib import Path

import apache
import pytest
from support.proxylatency import EXPECTED, LATENCY_ON, QUEUES, TOPIC, hang_one_of_two

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.remoting.bodies import TopicConfig

pytestmark = pytest.mark.timeout(300)

CLUSTER = "LatencyRef"


def test_apaches_proxy_leaves_a_hung_master_as_mqs_does(ref_root: Path) -> None:
    root = ref_root / "send-latency"
    root.mkdir()
    cluster = apache.start_cluster(root, "apache-5", masters=("broker-la", "broker-lb"), role="ASYNC_MASTER",
                                   slaves=False, cluster=CLUSTER)
    proxy = None
    try:
        with SyncMQAdmin(cluster.addr) as admin:
            for broker in cluster.brokers.values():
                admin.topics.create_topic(TopicConfig(TOPIC, QUEUES, QUEUES, attributes={"+message.type": "NORMAL"}),
                                          broker_addr=broker.addr)
        proxy = apache.start_proxy(root, cluster.addr, cluster=CLUSTER, **LATENCY_ON)
        hung, live = cluster.brokers["broker-la"], cluster.brokers["broker-lb"]
        assert hang_one_of_two(proxy.addr, (hung.addr, hung.pid), live.addr) == EXPECTED
    finally:
        if proxy is not None:
            proxy.kill()
        cluster.kill()
