"""The rocketmq data source and spark-load's producing tasks over TLS: a name server and broker in TLS
enforcing mode, the CA handed to the executors through the source's tls options."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.mqproc import MqProcess, start_broker, start_mq
from support.presetcluster import wait_for

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.client.errors import MQClientError
from mqtools.client.tls import TlsOptionError
from mqtools.cluster.certs import LocalCertificates, make_local_certificates
from mqtools.common.security import ClientSecurity, TlsClientOptions
from mqtools.remoting.bodies import TopicConfig
from mqtools.spark.load import ProducePlan, run_produce
from mqtools.spark.security import security_from_options

TOPIC = "SparkTls"


def _routed(admin: SyncMQAdmin) -> bool:
    try:
        return len(admin.queue_offsets.topic_queues(TOPIC)) == 2
    except MQClientError:
        return False


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MqProcess, LocalCertificates]]:
    work = tmp_path_factory.mktemp("spark-tls")
    certs = make_local_certificates(work / "tls")
    server = {"tls.server.mode": "enforcing", "tls.server.certPath": str(certs.cert),
              "tls.server.keyPath": str(certs.key)}
    conf = work / "namesrv.properties"
    conf.write_text("".join(f"{k}={v}\n" for k, v in server.items()))
    namesrv = start_mq(["namesrv", "start", "-c", str(conf), "--listen-port", "0", "--store-dir", str(work)])
    broker = start_broker(work, namesrv.addr, **server, **{"tls.enable": "true", "tls.client.authServer": "true",
                                                          "tls.client.trustCertPath": str(certs.ca)})
    try:
        with SyncMQAdmin(namesrv.addr, security=ClientSecurity(tls=TlsClientOptions(str(certs.ca)))) as admin:
            admin.topics.create_topic(TopicConfig(TOPIC, 2, 2), broker_addr=broker.addr)
            wait_for(lambda: _routed(admin), 15, f"{TOPIC} in the route")
        yield namesrv, certs
    finally:
        broker.stop()
        namesrv.stop()


def test_spark_load_tasks_and_the_data_source_read_over_tls(spark: Any, secured: tuple[MqProcess, LocalCertificates]
                                                            ) -> None:
    namesrv, certs = secured
    security = ClientSecurity(tls=TlsClientOptions(str(certs.ca)))
    stats = run_produce(spark, namesrv.addr, ProducePlan(TOPIC, 30, None, None, 16, 2, "sync", 1, False, 0), security)
    assert sum(s.messages for s in stats) == 30 and not any(s.failed for s in stats)
    read = (spark.read.format("rocketmq").option("namesrv", namesrv.addr).option("topic", TOPIC)
            .option("tls.caFile", str(certs.ca)).load())
    assert read.count() == 30
    plain = spark.read.format("rocketmq").option("namesrv", namesrv.addr).option("topic", TOPIC).load()
    with pytest.raises(Exception, match="closed|unreachable|Unreachable"):
        plain.count()


def test_tls_options_are_checked_on_the_driver(tmp_path: Path) -> None:
    assert security_from_options({"namesrv": "h:1"}) is None
    assert security_from_options({"tls": "true"}) == ClientSecurity(tls=TlsClientOptions())
    with pytest.raises(TlsOptionError, match="missing.pem"):
        security_from_options({"tls.cafile": str(tmp_path / "missing.pem")})
