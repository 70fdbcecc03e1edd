"""The proxy's local mode: `mq broker start --enable-proxy` (Apache's `mqbroker --enable-proxy`) and
`enableProxy=true` in broker.properties serve gRPC from the broker's own process, for the broker's cluster; the
5.1.2 Python client sends and receives through it; SIGTERM stops both cleanly. `mq proxy start` refuses
proxyMode local with a line saying where local mode lives."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from rocketmq.v5.client import ClientConfiguration, Credentials
from rocketmq.v5.consumer import SimpleConsumer
from rocketmq.v5.model import FilterExpression, Message
from rocketmq.v5.producer import Producer
from support.clientsupport import Cluster, create_topic, until
from support.mqproc import MqProcess, start_mq, start_namesrv, write_broker_props

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
from mqtools.client.admin import MQAdmin
from mqtools.client.errors import MQBrokerError
from mqtools.cluster.certs import make_local_certificates
from mqtools.cluster.launcher import tls_properties
from mqtools.common.javaprops import render_properties
from mqtools.common.security import ClientSecurity, TlsClientOptions
from mqtools.remoting.bodies import TopicConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PROBE = "/apache.rocketmq.v2.MessagingService/QueryRoute"
PROXY_READY = re.compile(r"^READY proxy (\S+):(\d+) mode=local")


@pytest.fixture(scope="module")
def namesrv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MqProcess]:
    proc = start_namesrv(tmp_path_factory.mktemp("localns"))
    try:
        yield proc
    finally:
        proc.stop()


def proxy_addr(broker: MqProcess) -> str:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in list(broker.lines):
            if match := PROXY_READY.match(line):
                return f"{match.group(1)}:{match.group(2)}"
        time.sleep(0.05)
    raise AssertionError("no READY proxy line:\n" + broker.output())


def round_trip(broker: MqProcess, namesrv: MqProcess, topic: str) -> None:
    asyncio.run(create_topic(Cluster(namesrv, {"b": broker}, Path()), topic, 2))
    config = ClientConfiguration(proxy_addr(broker), Credentials(), request_timeout=10)
    producer = Producer(config, (topic,))
    producer.startup()
    consumer = SimpleConsumer(config, f"{topic}Group", {topic: FilterExpression()}, await_duration=5)
    consumer.startup()
    try:
        message = Message()
        message.topic, message.body = topic, b"inside the broker"
        sent = producer.send(message).message_id
        got = []
        deadline = time.monotonic() + 40
        while not got and time.monotonic() < deadline:
            for m in consumer.receive(16, 20):
                consumer.ack(m)
                got.append(m)
        assert [(m.message_id, m.body) for m in got] == [(sent, b"inside the broker")]
    finally:
        consumer.shutdown()
        producer.shutdown()


def test_enable_proxy_flag_serves_grpc_from_the_broker(namesrv: MqProcess, tmp_path: Path) -> None:
    conf = write_broker_props(tmp_path / "broker.properties", namesrv.addr, tmp_path / "store",
                              brokerName="broker-local", brokerClusterName="LocalIT")
    broker = start_mq(["broker", "start", "-c", str(conf), "--enable-proxy", "--grpc-port", "0"], timeout=60)
    try:
        assert broker.role == "broker"
        round_trip(broker, namesrv, "PxLocalFlag")
        broker.signal(signal.SIGTERM)
        assert broker.proc.wait(30) == 0
    finally:
        broker.stop()
    assert "Traceback" not in broker.output(), broker.output()


def test_enable_proxy_property_and_a_proxy_config_file(namesrv: MqProcess, tmp_path: Path) -> None:
    proxy_conf = tmp_path / "rmq-proxy.json"
    proxy_conf.write_text(json.dumps({"grpcServerPort": 0, "grpcBindAddress": "127.0.0.1"}))
    conf = write_broker_props(tmp_path / "broker.properties", namesrv.addr, tmp_path / "store",
                              brokerName="broker-local2", brokerClusterName="LocalIT", enableProxy="true")
    broker = start_mq(["broker", "start", "-c", str(conf), "--proxy-config", str(proxy_conf)], timeout=60)
    try:
        assert proxy_addr(broker).startswith("127.0.0.1:")
        round_trip(broker, namesrv, "PxLocalProp")
    finally:
        broker.stop()
    assert "Traceback" not in broker.output(), broker.output()


async def create_tls_topic(namesrv: str, broker: str, ca: str, topic: str) -> None:
    async with MQAdmin(namesrv, security=ClientSecurity(tls=TlsClientOptions(ca))) as admin:
        await admin.topics.create_topic(TopicConfig(topic, 2, 2), broker_addr=broker)

        async def routed() -> bool:
            try:
                return bool((await admin.topics.topic_route(topic)).queue_datas)
            except MQBrokerError:
                return False

        await until(routed, 20, f"a route of {topic}")


def test_local_proxy_serves_tls_when_the_broker_does(tmp_path: Path) -> None:
    certs = make_local_certificates(tmp_path / "tls")
    secured = tls_properties(certs)
    ns_conf = tmp_path / "namesrv.properties"
    ns_conf.write_text(render_properties(secured))
    namesrv = start_mq(["namesrv", "start", "--listen-port", "0", "--store-dir", str(tmp_path / "ns"), "-c",
                        str(ns_conf)])
    broker = None
    try:
        conf = write_broker_props(tmp_path / "broker.properties", namesrv.addr, tmp_path / "store",
                                  brokerName="broker-tls", brokerClusterName="LocalTlsIT", **secured)
        broker = start_mq(["broker", "start", "-c", str(conf), "--enable-proxy", "--grpc-port", "0"], timeout=60)
        addr = proxy_addr(broker)
        assert any(line.startswith("READY proxy") and "tls=true" in line for line in broker.lines)
        asyncio.run(create_tls_topic(namesrv.addr, broker.addr, str(certs.ca), "PxLocalTls"))
        ca = certs.ca.read_bytes()
        with grpc.secure_channel(addr, grpc.ssl_channel_credentials(ca)) as channel:
            answer = spb.QueryRouteResponse.FromString(channel.unary_unary(PROBE)(
                spb.QueryRouteRequest(topic=pb.Resource(name="PxLocalTls"), endpoints=pb.Endpoints(
                    scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=int(addr.split(":")[1]))]))
                .SerializeToString(), metadata=[("x-mq-client-id", "it")], timeout=15))
        # the route came from the TLS name server and broker through the proxy's TLS client side
        assert answer.status.code == pb.OK and answer.message_queues, answer.status
        with grpc.insecure_channel(addr) as channel, pytest.raises(grpc.RpcError) as plain:
            channel.unary_unary(PROBE)(b"", metadata=[("x-mq-client-id", "it")], timeout=5)
        assert plain.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        if broker is not None:
            broker.stop()
        namesrv.stop()
    assert broker is not None and "Traceback" not in broker.output(), broker.output()


def test_proxy_start_refuses_local_mode_in_one_line(namesrv: MqProcess, tmp_path: Path) -> None:
    conf = tmp_path / "rmq-proxy.json"
    conf.write_text(json.dumps({"proxyMode": "local", "namesrvAddr": namesrv.addr}))
    result = subprocess.run([sys.executable, "-m", "mqtools.cli.main", "proxy", "start", "-c", str(conf)],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode != 0
    assert "mq broker start -c broker.properties --enable-proxy" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
