"""TLS end to end: `mq cluster up --tls` (enforcing on every port), our clients and `mq admin` over it,
plain clients refused there and accepted by a permissive name server, `openssl s_client` seeing the
certificate the properties name, the SYNC_MASTER kill drill passing over TLS (HA included), and a renewed
certificate reaching new connections on every port of a running broker.
"""

from __future__ import annotations

import datetime
import json
import shutil
import ssl
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from integration.ha.hasupport import pull_all, ready_for_drill, send, start_group
from support.adminsupport import mq, mq_here, one_line_error
from support.clientsupport import until
from support.mqproc import start_mq
from support.ports import random_base_port
from support.presetcluster import wait_for
from support.promsupport import exporter, scrape
from support.tlsprobe import served_certificate

from mqtools.client.producer import Producer
from mqtools.client.pull_consumer import PullConsumer
from mqtools.client.types import PullStatus, SendStatus
from mqtools.cluster.certs import make_local_certificates
from mqtools.common.javaprops import parse_properties
from mqtools.common.message import Message
from mqtools.common.security import ClientSecurity, TlsClientOptions
from mqtools.common.tls_certificates import certificate_not_after
from mqtools.remoting.bodies import KVTable
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingConnectError, RemotingConnectionClosed

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"


@dataclass
class TlsCluster:
    state: Path
    namesrv: str
    ca: str
    config_dir: Path
    broker_props: dict[str, str]

    @property
    def security(self) -> ClientSecurity:
        return ClientSecurity(tls=TlsClientOptions(self.ca))

    def mq(self, *args: str) -> subprocess.CompletedProcess[str]:
        return mq_here(*args, env={"MQ_CONFIG_DIR": str(self.config_dir)})


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsCluster]:
    root = tmp_path_factory.mktemp("tls")
    state, config_dir = root / "cluster", root / "config"
    env = {"MQ_CONFIG_DIR": str(config_dir)}
    try:
        up = mq("cluster", "up", "--tls", "--preset", "2m-noslave", "--dir", str(state), "--base-port",
                str(random_base_port()), "--context", "secure", env=env, timeout=120)
        assert up.returncode == 0, up.stdout + up.stderr
        namesrv = next(line.split("=", 1)[1] for line in up.stdout.splitlines() if line.startswith("NAMESRV_ADDR="))
        ca = json.loads((state / "cluster.json").read_text())["tls_ca"]
        props = parse_properties((state / "broker-a" / "broker.properties").read_text())
        yield TlsCluster(state, namesrv, ca, config_dir, props)
    finally:
        mq("cluster", "down", "--dir", str(state), "--grace", "10", env=env, timeout=60)


async def test_producer_and_consumer_over_tls(cluster: TlsCluster) -> None:
    created = cluster.mq("admin", "topic", "create", "TlsTopic", "-c", "DefaultCluster", "--context", "secure")
    assert created.returncode == 0, created.stderr
    async with Producer("PG_TLS", namesrv=cluster.namesrv, security=cluster.security) as producer:
        results = [await producer.send(Message("TlsTopic", f"secret-{i}".encode())) for i in range(12)]
    assert all(r.status is SendStatus.SEND_OK for r in results)
    bodies = set()
    async with PullConsumer("CG_TLS", namesrv=cluster.namesrv, security=cluster.security) as consumer:
        for queue in await consumer.fetch_queues("TlsTopic"):
            result = await consumer.pull(queue, "*", 0)
            if result.status is PullStatus.FOUND:
                bodies.update(m.body.decode() for m in result.messages)
    assert bodies == {f"secret-{i}" for i in range(12)}


def test_mq_admin_over_tls_by_context_and_by_flags(cluster: TlsCluster) -> None:
    by_context = cluster.mq("admin", "cluster", "list", "--context", "secure", "-o", "json")
    assert by_context.returncode == 0, by_context.stderr
    assert {"broker-a", "broker-b"} <= set(by_context.stdout.replace('"', " ").split())
    by_flags = mq_here("admin", "--tls-ca", cluster.ca, "topic", "list", "-n", cluster.namesrv)
    assert by_flags.returncode == 0, by_flags.stderr
    # the TLS flags after the noun, as -n is, in both dialects
    after = mq_here("admin", "topic", "list", "-n", cluster.namesrv, "--tls-ca", cluster.ca)
    assert (after.returncode, after.stdout) == (0, by_flags.stdout), after.stderr
    mqadmin = mq_here("admin", "topicList", "-n", cluster.namesrv, "--tls-ca", cluster.ca)
    before = mq_here("admin", "--tls-ca", cluster.ca, "topicList", "-n", cluster.namesrv)
    assert (mqadmin.returncode, before.returncode) == (0, 0), mqadmin.stderr + before.stderr
    assert mqadmin.stdout.strip() and sorted(mqadmin.stdout.split()) == sorted(before.stdout.split())
    by_context = cluster.mq("admin", "topicList", "--context", "secure")  # the context's name servers and CA
    assert (by_context.returncode, sorted(by_context.stdout.split())) == (0, sorted(before.stdout.split()))
    plain = mq_here("admin", "topic", "list", "-n", cluster.namesrv, "--timeout", "2")
    assert plain.returncode != 0  # the flags above were what made it work: this cluster is TLS only
    # the name server's certificate, as the verified handshake showed it (a year, `mq cluster up --tls`)
    judged = mq_here("admin", "diagnose", "cluster", "--window", "10", "-o", "json", "-n", cluster.namesrv,
                     "--tls-ca", cluster.ca)
    assert judged.returncode in (0, 1, 3), judged.stderr  # the verdict is the brokers' and groups' too
    (ns,) = [i for i in json.loads(judged.stdout)["items"] if i["kind"] == "namesrv"]
    assert ns["verdict"] == "healthy" and 364 < ns["detail"]["certificateDaysLeft"] <= 365, ns
    assert ns["summary"].endswith(f"its TLS certificate has {ns['detail']['certificateDaysLeft']:g} days left")
    shown = cluster.mq("context", "show", "--context", "secure")
    assert f"tls:     CA {cluster.ca}" in shown.stdout
    assert f"tls={cluster.ca}" in cluster.mq("context", "list").stdout


async def test_mcp_and_top_take_the_tls_flags_as_every_cluster_command_does(cluster: TlsCluster) -> None:
    """`mq mcp` gained the TLS flags from the cluster-command frame: its tools reach a TLS-only cluster."""
    import sys

    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    args = ["-m", "mqtools.cli.main", "mcp", "-n", cluster.namesrv, "--tls-ca", cluster.ca]
    async with stdio_client(StdioServerParameters(command=sys.executable, args=args)) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("cluster_list", {}, read_timeout_seconds=60)
    assert not result.is_error, result.content
    assert {b["brokerName"] for b in result.structured_content["brokers"]} == {"broker-a", "broker-b"}
    top = mq_here("top", "--once", "-o", "json", "-n", cluster.namesrv, "--tls-ca", cluster.ca)
    assert top.returncode == 0, top.stderr


def test_the_exporter_serves_the_name_servers_certificate_expiry(cluster: TlsCluster) -> None:
    """From its own verified handshake (a name server reports nothing of its own): a year, `mq cluster up --tls`."""
    family = "mq_namesrv_tls_certificate_expiry_timestamp_seconds"
    with exporter(cluster.namesrv, "--tls-ca", cluster.ca) as addr:
        line = wait_for(lambda: next((x for x in scrape(addr).splitlines() if x.startswith(family + "{")), None), 30,
                        f"{family} in the scrape")
    assert line.startswith(f'{family}{{namesrv="{cluster.namesrv}"}} '), line
    assert 364 * 86_400 < float(line.split()[-1]) - time.time() <= 365 * 86_400, line


def test_untrusted_and_plain_clients_are_refused_in_enforcing_mode(cluster: TlsCluster) -> None:
    untrusted = mq_here("admin", "--tls", "topic", "list", "-n", cluster.namesrv)  # system CAs do not know ours
    one_line_error(untrusted, 3, "CERTIFICATE_VERIFY_FAILED")
    plain = mq_here("admin", "topic", "list", "-n", cluster.namesrv)
    one_line_error(plain, 3, "closed before answering anything: a server in TLS enforcing mode closes plain connections")
    log = (cluster.state / "namesrv-0" / "namesrv-0.log").read_text()
    assert "plain connection while this server is in TLS enforcing mode" in log
    one_line_error(mq_here("admin", "--tls-ca", str(cluster.state / "nope.pem"), "topic", "list", "-n", cluster.namesrv),
                   2, "nope.pem")
    one_line_error(mq_here("admin", "--tls-cert", cluster.ca, "topic", "list", "-n", cluster.namesrv), 2, "--tls-key")


async def test_plain_remoting_client_is_closed_by_enforcing_broker(cluster: TlsCluster) -> None:
    broker = f"127.0.0.1:{cluster.broker_props['listenPort']}"
    plain = RemotingClient()
    try:
        with pytest.raises(RemotingConnectionClosed):
            await plain.invoke(broker, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 5.0)
    finally:
        await plain.close()
    secure = RemotingClient(security=cluster.security)
    try:
        answer = await secure.invoke(broker, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 5.0)
        assert answer.code == 0
    finally:
        await secure.close()


def _fingerprint(pem: str) -> str:
    out = subprocess.run([OPENSSL, "x509", "-noout", "-fingerprint", "-sha256", "-subject"], input=pem,
                         capture_output=True, text=True, timeout=10, check=True)
    return out.stdout


@pytest.mark.skipif(not Path(OPENSSL).exists(), reason="openssl is not installed")
@pytest.mark.parametrize("port_key", ["listenPort", "haListenPort"])
def test_openssl_sees_the_certificate_the_properties_name(cluster: TlsCluster, port_key: str) -> None:
    port = cluster.broker_props[port_key]
    shown = subprocess.run([OPENSSL, "s_client", "-connect", f"127.0.0.1:{port}", "-CAfile", cluster.ca,
                            "-verify_return_error"], input="", capture_output=True, text=True, timeout=20,
                           check=False)
    assert "Verify return code: 0 (ok)" in shown.stdout, shown.stdout + shown.stderr
    served = shown.stdout[shown.stdout.index("-----BEGIN CERTIFICATE-----"):
                          shown.stdout.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----")]
    named = Path(cluster.broker_props["tls.server.certPath"]).read_text()
    assert _fingerprint(served) == _fingerprint(named)


async def test_permissive_serves_plain_and_tls_on_one_port(tmp_path: Path) -> None:
    certs = make_local_certificates(tmp_path / "certs")
    conf = tmp_path / "namesrv.properties"
    conf.write_text(f"tls.server.mode=permissive\ntls.server.certPath={certs.cert}\ntls.server.keyPath={certs.key}\n")
    namesrv = start_mq(["namesrv", "start", "-c", str(conf), "--listen-port", "0", "--store-dir", str(tmp_path)])
    try:
        secure = ClientSecurity(tls=TlsClientOptions(str(certs.ca)))
        wrong_ca = make_local_certificates(tmp_path / "other")
        for security in (None, secure):
            client = RemotingClient(security=security)
            try:
                answer = await client.invoke(namesrv.addr, RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG), 5.0)
                assert answer.code == 0
            finally:
                await client.close()
        stranger = RemotingClient(security=ClientSecurity(tls=TlsClientOptions(str(wrong_ca.ca))))
        try:
            with pytest.raises(RemotingConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await stranger.invoke(namesrv.addr, RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG), 5.0)
        finally:
            await stranger.close()
        assert namesrv.proc.poll() is None
    finally:
        namesrv.stop()


def test_enforcing_without_a_certificate_is_a_one_line_start_error(tmp_path: Path) -> None:
    conf = tmp_path / "namesrv.properties"
    conf.write_text("tls.server.mode=enforcing\n")
    result = mq("namesrv", "start", "-c", str(conf), "--listen-port", "0", "--store-dir", str(tmp_path))
    assert result.returncode != 0 and "tls.server.certPath" in result.stderr, result.stdout + result.stderr


def test_kill_master_drill_passes_over_tls(tmp_path: Path) -> None:
    """SYNC_MASTER keeps its guarantee with TLS on the remoting and HA ports: no acknowledged message lost."""
    result = mq("admin", "drill", "run", "kill-master", "--preset", "2m-2s-sync", "--tls", "--base-port",
                str(random_base_port()), "--duration", "5", "--rate", "100", "--poll-interval", "1",
                "--set", "mappedFileSizeCommitLog=4194304", "-o", "json", env={"TMPDIR": str(tmp_path)}, timeout=120)
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["verdict"] == "PASS", [r["text"] for r in report["reasons"]]
    assert report["integrity"]["lost"]["count"] == 0
    assert report["integrity"]["acked"] > 300
    assert report["preflight"]["verdict"] == "safe"
    wait_for(lambda: not any(tmp_path.glob("mq-drill-*")), 10, "the drill's cluster dir removed")


async def test_required_client_certificate(tmp_path: Path) -> None:
    certs = make_local_certificates(tmp_path / "certs")
    conf = tmp_path / "namesrv.properties"
    conf.write_text(f"tls.server.mode=enforcing\ntls.server.certPath={certs.cert}\ntls.server.keyPath={certs.key}\n"
                    f"tls.server.need.client.auth=require\ntls.server.trustCertPath={certs.ca}\n")
    namesrv = start_mq(["namesrv", "start", "-c", str(conf), "--listen-port", "0", "--store-dir", str(tmp_path)])
    request = RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG)
    try:
        anonymous = RemotingClient(security=ClientSecurity(tls=TlsClientOptions(str(certs.ca))))
        try:
            with pytest.raises((RemotingConnectError, RemotingConnectionClosed)):
                await anonymous.invoke(namesrv.addr, request, 5.0)
        finally:
            await anonymous.close()
        known = RemotingClient(security=ClientSecurity(tls=TlsClientOptions(str(certs.ca), str(certs.cert),
                                                                            str(certs.key))))
        try:
            assert (await known.invoke(namesrv.addr, request, 5.0)).code == 0
        finally:
            await known.close()
    finally:
        namesrv.stop()


async def test_permissive_master_replicates_to_a_plain_slave(tmp_path: Path) -> None:
    """The HA port follows the broker's mode: permissive takes a slave without tls.enable (plain)."""
    certs = make_local_certificates(tmp_path / "certs")
    group = start_group(tmp_path, role="SYNC_MASTER", **{"tls.server.mode": "permissive",
                                                         "tls.server.certPath": str(certs.cert),
                                                         "tls.server.keyPath": str(certs.key)})
    assert group.slave is not None
    client = RemotingClient()
    try:
        await ready_for_drill(client, group, "TlsHa")
        sent = await send(client, group.master.addr, "TlsHa", b"replicated-in-plain")
        assert sent.code == ResponseCode.SUCCESS  # SYNC_MASTER: the slave acked it
        assert b"replicated-in-plain" in await pull_all(client, group.slave.addr, "TlsHa", sent.queue_id)
    finally:
        await client.close()
        group.stop()


async def test_a_renewed_certificate_reaches_new_connections_on_every_port(tmp_path: Path) -> None:
    """Apache's FileWatchService role: the broker's certificate and key replaced on disk are served to new
    connections on the remoting, VIP and HA ports without a restart; a connection opened before keeps working."""
    certs = make_local_certificates(tmp_path / "served")
    renewed = make_local_certificates(tmp_path / "renewed", datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=1))
    base = random_base_port()
    group = start_group(tmp_path, role="ASYNC_MASTER", with_slave=False, listenPort=str(base),
                        haListenPort=str(base + 1), **{"tls.server.mode": "enforcing",
                                                       "tls.server.certPath": str(certs.cert),
                                                       "tls.server.keyPath": str(certs.key)})
    ports = {"remoting": base, "VIP": base - 2, "HA": base + 1}
    request = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)
    before = RemotingClient(security=ClientSecurity(tls=TlsClientOptions(str(certs.ca))))

    async def not_after() -> int:
        """The expiry the broker reports for the certificate it serves (epoch ms), over the connection opened
        before the renewal."""
        answer = await before.invoke(group.master.addr, request, 10.0)
        assert answer.code == ResponseCode.SUCCESS
        return int(KVTable.from_json(answer.body).table["tlsCertificateNotAfter"])

    try:
        assert await not_after() == int(certificate_not_after(certs.cert.read_bytes()) * 1000)
        old = ssl.PEM_cert_to_DER_cert(certs.cert.read_text())
        assert {name: served_certificate(port) for name, port in ports.items()} == dict.fromkeys(ports, old)
        for name in ("server.key", "server.pem"):  # the key first: for a moment the pair does not match
            shutil.copyfile(renewed.cert.parent / name, certs.cert.parent / name)
        new = ssl.PEM_cert_to_DER_cert(renewed.cert.read_text())
        await until(lambda: served_certificate(base) == new, 20, "the renewed certificate on the remoting port")
        assert {name: served_certificate(port) for name, port in ports.items()} == dict.fromkeys(ports, new)
        assert await not_after() == int(certificate_not_after(renewed.cert.read_bytes()) * 1000)
        for ca, works in ((renewed.ca, True), (certs.ca, False)):
            fresh = RemotingClient(security=ClientSecurity(tls=TlsClientOptions(str(ca))))
            try:
                if works:
                    assert (await fresh.invoke(group.master.addr, request, 10.0)).code == ResponseCode.SUCCESS
                else:
                    with pytest.raises(RemotingConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                        await fresh.invoke(group.master.addr, request, 10.0)
            finally:
                await fresh.close()
    finally:
        await before.close()
        group.stop()
    log = group.master.proc.output() if group.master.proc is not None else ""
    assert "new connections get the certificate valid until" in log, log
