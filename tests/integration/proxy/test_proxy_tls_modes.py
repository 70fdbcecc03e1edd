"""The gRPC port's tls.server.mode, as Apache's proxy serves it: with a certificate and no mode (permissive, Apache's
default) one port takes the 5.1.2 Python client over TLS and over plaintext, and the proxy reports each client at
its own address, not at the relay's inside the proxy; enforcing refuses plaintext; a mode the proxy does not know,
or TLS without a certificate, is one line at start; a renewed certificate reaches new connections without a restart."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import psutil
import pytest
from support.clientsupport import Cluster, broker_cluster, create_topic
from support.mqproc import MqProcess, mq_command, start_mq
from support.presetcluster import wait_for
from support.tlsprobe import served_certificate

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
from mqtools.client.admin import MQAdmin
from mqtools.cluster.certs import LocalCertificates, make_local_certificates

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TOPIC = "PxTlsModes"
QUERY_ROUTE = "/apache.rocketmq.v2.MessagingService/QueryRoute"
#: Sends one message with the 5.1.2 Python client (argv: proxy address, topic, tls 0/1), prints SENT and its id,
#: and keeps its connection open until stdin closes (the test reads the proxy's sockets meanwhile).
CLIENT = """
import asyncio, sys
asyncio.set_event_loop(asyncio.new_event_loop())
from rocketmq.v5.client import ClientConfiguration, Credentials
from rocketmq.v5.model import Message
from rocketmq.v5.producer import Producer
producer = Producer(ClientConfiguration(sys.argv[1], Credentials(), request_timeout=10), (sys.argv[2],),
                    tls_enable=sys.argv[3] == "1")
producer.startup()
message = Message()
message.topic, message.body = sys.argv[2], b"tls=" + sys.argv[3].encode()
try:
    print("SENT", producer.send(message).message_id, flush=True)
    sys.stdin.read()
finally:
    producer.shutdown()
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("proxytls")
    for cluster in broker_cluster(work, ("broker-t",), brokerClusterName="TlsModesIT"):
        asyncio.run(create_topic(cluster, TOPIC, 2))
        yield cluster


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> LocalCertificates:
    return make_local_certificates(tmp_path_factory.mktemp("proxytlscerts"))


def start_proxy(cluster: Cluster, certs: LocalCertificates, work: Path, **extra: str) -> MqProcess:
    conf = work / "rmq-proxy.json"
    conf.write_text(json.dumps({"rocketMQClusterName": "TlsModesIT", "namesrvAddr": cluster.namesrv.addr,
                                "grpcServerPort": 0, "remotingListenPort": 0, "tlsCertPath": str(certs.cert),
                                "tlsKeyPath": str(certs.key), **extra}))
    return start_mq(["proxy", "start", "-c", str(conf), "--host", "127.0.0.1"], timeout=60)


def grpc_port(proxy: MqProcess) -> int:
    ready = next(line for line in proxy.lines if line.startswith("READY proxy"))
    return int(ready.split()[2].rsplit(":", 1)[1])


def remoting_port(proxy: MqProcess) -> int:
    ready = next(line for line in proxy.lines if line.startswith("READY proxy"))
    return int(ready.split("remoting=")[1].split()[0])


def channel(addr: str, ca: bytes | None) -> grpc.Channel:
    """A channel over TLS (trusting `ca`) or plaintext, with a connection of its own (grpc shares connections
    between a process's channels otherwise, so a new channel would not always mean a new handshake)."""
    own = [("grpc.use_local_subchannel_pool", 1)]
    return grpc.secure_channel(addr, grpc.ssl_channel_credentials(ca), options=own) if ca \
        else grpc.insecure_channel(addr, options=own)


def query_route(over: grpc.Channel, addr: str) -> int:
    """QueryRoute's status code over a channel to `addr`; UNAVAILABLE raises."""
    request = spb.QueryRouteRequest(topic=pb.Resource(name=TOPIC), endpoints=pb.Endpoints(
        scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=int(addr.rsplit(":", 1)[1]))]))
    raw = over.unary_unary(QUERY_ROUTE)(request.SerializeToString(), metadata=[("x-mq-client-id", "tls-it")],
                                        timeout=15)
    return spb.QueryRouteResponse.FromString(raw).status.code


def route(addr: str, ca: bytes | None) -> int:
    """QueryRoute's status code over a new connection, TLS (with the CA) or plaintext; UNAVAILABLE raises."""
    with channel(addr, ca) as over:
        return query_route(over, addr)


def client_ports(proxy: MqProcess, port: int) -> set[int]:
    """The remote ports of the connections the proxy accepted on its public gRPC port."""
    return {c.raddr.port for c in psutil.Process(proxy.pid).net_connections("tcp")
            if c.laddr.port == port and c.raddr and c.status == psutil.CONN_ESTABLISHED}


async def producer_ports(namesrv: str, proxy: MqProcess) -> set[int]:
    """The ports of the producers of TOPIC the proxy reports on its remoting port (GET_PRODUCER_CONNECTION_LIST)."""
    async with MQAdmin(namesrv) as admin:
        clients = await admin.proxies.producers(f"127.0.0.1:{remoting_port(proxy)}", TOPIC)
    return {int(c.client_addr.rsplit(":", 1)[1]) for c in clients or []}


def test_permissive_port_takes_tls_and_plaintext_and_keeps_the_clients_address(
        cluster: Cluster, certs: LocalCertificates, tmp_path: Path) -> None:
    proxy = start_proxy(cluster, certs, tmp_path)
    try:
        assert any("tls=true tls.server.mode=permissive" in line for line in proxy.lines), proxy.output()
        port = grpc_port(proxy)
        addr = f"127.0.0.1:{port}"
        assert route(addr, certs.ca.read_bytes()) == pb.OK
        assert route(addr, None) == pb.OK
        for tls in ("1", "0"):
            # the 5.x client trusts the system's CAs: grpc's roots file points it at the test's
            client = subprocess.Popen([sys.executable, "-c", CLIENT, addr, TOPIC, tls], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      env={**os.environ, "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(certs.ca)})
            try:
                assert client.stdout is not None
                line = client.stdout.readline()
                assert line.startswith("SENT "), line + client.communicate(timeout=30)[1]
                # grpc sees the relay's loopback end; the proxy must report the client's end of its connection
                assert asyncio.run(producer_ports(cluster.namesrv.addr, proxy)) == client_ports(proxy, port)
            finally:
                out, err = client.communicate(timeout=30)
            assert client.returncode == 0, out + err
    finally:
        proxy.stop()
    assert "Traceback" not in proxy.output(), proxy.output()


def test_enforcing_port_refuses_plaintext(cluster: Cluster, certs: LocalCertificates, tmp_path: Path) -> None:
    proxy = start_proxy(cluster, certs, tmp_path, **{"tls.server.mode": "enforcing"})
    try:
        addr = f"127.0.0.1:{grpc_port(proxy)}"
        assert route(addr, certs.ca.read_bytes()) == pb.OK
        with pytest.raises(grpc.RpcError) as plain:
            route(addr, None)
        assert plain.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        proxy.stop()
    assert "Traceback" not in proxy.output(), proxy.output()


@pytest.mark.parametrize(("extra", "said"), [
    ({"tls.server.mode": "lenient"}, "tls.server.mode='lenient': expected one of disabled, permissive, enforcing"),
    ({"tlsCertPath": "", "tlsKeyPath": "", "tls.server.mode": "enforcing"},
     "tls.server.mode=enforcing needs tlsCertPath and tlsKeyPath"),
])
def test_a_mode_the_proxy_cannot_serve_is_one_line(cluster: Cluster, certs: LocalCertificates, tmp_path: Path,
                                                    extra: dict[str, str], said: str) -> None:
    conf = tmp_path / "rmq-proxy.json"
    conf.write_text(json.dumps({"namesrvAddr": cluster.namesrv.addr, "grpcServerPort": 0, "remotingListenPort": 0,
                                "tlsCertPath": str(certs.cert), "tlsKeyPath": str(certs.key), **extra}))
    done = subprocess.run([*mq_command(), "proxy", "start", "-c", str(conf)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode != 0
    assert said in done.stderr and "Traceback" not in done.stderr + done.stdout, done.stderr


def route_over(addr: str, ca: bytes) -> bool:
    """Whether QueryRoute answers OK over a new TLS connection trusting `ca` (False: the handshake failed)."""
    try:
        return route(addr, ca) == pb.OK
    except grpc.RpcError as exc:
        if exc.code() is grpc.StatusCode.UNAVAILABLE:
            return False
        raise


def test_a_renewed_certificate_reaches_new_grpc_and_remoting_connections(
        cluster: Cluster, certs: LocalCertificates, tmp_path: Path) -> None:
    """tlsCertPath and tlsKeyPath replaced on disk: new gRPC connections (through the permissive port's relay) and
    new remoting connections get the new certificate, a gRPC connection opened before keeps working."""
    served = LocalCertificates(tmp_path / "ca.pem", tmp_path / "server.pem", tmp_path / "server.key")
    for name in ("ca", "cert", "key"):
        shutil.copyfile(getattr(certs, name), getattr(served, name))
    renewed = make_local_certificates(tmp_path / "renewed")
    proxy = start_proxy(cluster, served, tmp_path, tlsCertWatchIntervalMs="500")  # Apache's default: an hour
    addr = f"127.0.0.1:{grpc_port(proxy)}"
    held = channel(addr, certs.ca.read_bytes())
    try:
        assert query_route(held, addr) == pb.OK
        assert route_over(addr, certs.ca.read_bytes())
        for name in ("key", "cert"):
            shutil.copyfile(getattr(renewed, name), getattr(served, name))
        wait_for(lambda: route_over(addr, renewed.ca.read_bytes()), 20, "the renewed certificate on the gRPC port")
        assert not route_over(addr, certs.ca.read_bytes())
        assert served_certificate(remoting_port(proxy)) == ssl.PEM_cert_to_DER_cert(renewed.cert.read_text())
        assert query_route(held, addr) == pb.OK  # the connection opened before the renewal
    finally:
        held.close()
        proxy.stop()
    assert "Traceback" not in proxy.output(), proxy.output()
