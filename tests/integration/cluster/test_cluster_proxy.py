"""`mq cluster up --proxy`: a gRPC proxy process in the cluster, on its name servers, shown by `mq cluster status`
(alive, port, answering gRPC), stopped and started alone, stopped by `down`; with `--tls` its gRPC port serves
TLS with the cluster's CA and the 5.x Python client sends through it to TLS brokers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import grpc
import psutil
import pytest
from support.adminsupport import mq_here
from support.grpcstub import MessagingServiceStub
from support.ports import random_base_port

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PROBE = "/apache.rocketmq.v2.MessagingService/QueryRoute"
#: Sends one message with the 5.1.2 Python client (argv: proxy address, topic, tls 0/1) and prints its id.
CLIENT = """
import asyncio, sys
asyncio.set_event_loop(asyncio.new_event_loop())
from rocketmq.v5.client import ClientConfiguration, Credentials
from rocketmq.v5.model import Message
from rocketmq.v5.producer import Producer
credentials = Credentials(*sys.argv[4].split(":", 1)) if len(sys.argv) > 4 else Credentials()
producer = Producer(ClientConfiguration(sys.argv[1], credentials, request_timeout=10), (sys.argv[2],),
                    tls_enable=sys.argv[3] == "1")
producer.startup()
message = Message()
message.topic, message.body = sys.argv[2], b"through the cluster's proxy"
try:
    print("SENT", producer.send(message).message_id)
finally:
    producer.shutdown()
"""
ROOT = ("rocketmq", "root-XYZZY-cluster")
PROVIDER = "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider"
AUTH_PROPS = {"authenticationEnabled": "true", "authenticationMetadataProvider": PROVIDER,
              "initAuthenticationUser": json.dumps({"username": ROOT[0], "password": ROOT[1]}),
              "innerClientAuthenticationCredentials": json.dumps({"accessKey": ROOT[0], "secretKey": ROOT[1]})}
AUTH_SETS = [arg for key, value in AUTH_PROPS.items() for arg in ("--set", f"{key}={value}")]
ROOT_ENV = {"MQ_ACCESS_KEY": ROOT[0], "MQ_SECRET_KEY": ROOT[1]}


def base_port() -> int:
    """A preset base whose proxy port (base - 1795) stays inside the preset bases' range, above free_port's."""
    while True:
        base = random_base_port()
        if base - 1795 >= 20000:
            return base


def rows(state: Path) -> dict[str, dict]:
    out = mq_here("cluster", "status", "--dir", str(state), "-o", "json")
    assert out.returncode == 0, out.stderr
    return {row["name"]: row for row in json.loads(out.stdout)}


def send(addr: str, topic: str, *, ca: str | None = None, user: tuple[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": ca} if ca else {})}
    creds = [":".join(user)] if user else []
    return subprocess.run([sys.executable, "-c", CLIENT, addr, topic, "1" if ca else "0", *creds], check=False,
                          capture_output=True, text=True, timeout=90, env=env)


def probe(addr: str, ca: str | None) -> grpc.RpcError | bytes:
    channel = grpc.secure_channel(addr, grpc.ssl_channel_credentials(Path(ca).read_bytes())) if ca \
        else grpc.insecure_channel(addr)
    with channel:
        try:
            return channel.unary_unary(PROBE)(b"", metadata=[("x-mq-client-id", "it")], timeout=5)
        except grpc.RpcError as exc:
            return exc


def test_proxy_in_the_cluster_is_shown_stopped_started_and_downed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    up = mq_here("cluster", "up", "--preset", "2m-noslave", "--proxy", "--dir", str(state), "--base-port", str(base_port()),
            "--set", "mappedFileSizeCommitLog=1048576", "--set", "maxMessageSize=65536")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        found = rows(state)
        proxy = found["proxy-0"]
        assert (proxy["kind"], proxy["role"], proxy["alive"]) == ("proxy", "PROXY", True), proxy
        assert psutil.pid_exists(proxy["pid"]) and proxy["rssBytes"] > 0
        assert proxy["grpc"]["answering"] is True and proxy["grpc"]["tls"] is False, proxy
        addr = f"127.0.0.1:{proxy['port']}"
        assert f"PROXY_ADDR={addr}" in up.stdout
        conf = json.loads((state / "proxy-0" / "rmq-proxy.json").read_text())
        assert conf["namesrvAddr"] == up.stdout.split("NAMESRV_ADDR=")[1].split()[0]
        assert conf["maxMessageSize"] == "65536"  # the brokers' limit is the proxy's
        table = mq_here("cluster", "status", "--dir", str(state))
        line = next(x for x in table.stdout.splitlines() if x.startswith("proxy-0"))
        assert "PROXY" in line and str(proxy["port"]) in line and "gRPC answering" in line, table.stdout

        created = mq_here("admin", "topic", "create", "PxCluster", "-c", "DefaultCluster", "-n", conf["namesrvAddr"])
        assert created.returncode == 0, created.stderr
        sent = send(addr, "PxCluster")
        assert sent.returncode == 0 and "SENT " in sent.stdout, sent.stdout + sent.stderr
        big = pb.Message(topic=pb.Resource(name="PxCluster"), body=b"x" * 65537)
        big.system_properties.message_id = "CLUSTER-BIG"
        with grpc.insecure_channel(addr) as channel:
            answer = MessagingServiceStub(channel).SendMessage(
                spb.SendMessageRequest(messages=[big]), metadata=[("x-mq-client-id", "it")], timeout=15)
        assert answer.status.code == pb.MESSAGE_BODY_TOO_LARGE, answer.status  # over the brokers' maxMessageSize

        stopped = mq_here("cluster", "stop", "proxy-0", "--dir", str(state))
        assert stopped.returncode == 0 and "proxy-0: stopped" in stopped.stdout, stopped.stdout + stopped.stderr
        after = rows(state)["proxy-0"]
        assert after["alive"] is False and after["grpc"] is None
        assert isinstance(probe(addr, None), grpc.RpcError)
        assert all(r["alive"] for n, r in rows(state).items() if n != "proxy-0")

        started = mq_here("cluster", "start", "proxy-0", "--dir", str(state))
        assert started.returncode == 0, started.stdout + started.stderr
        again = rows(state)["proxy-0"]
        assert again["alive"] and again["port"] == proxy["port"] and again["grpc"]["answering"], again
        assert isinstance(probe(addr, None), bytes)
    finally:
        down = mq_here("cluster", "down", "--dir", str(state))
    assert down.returncode == 0 and "proxy-0: stopped" in down.stdout, down.stdout + down.stderr
    assert not psutil.pid_exists(proxy["pid"]) or psutil.Process(proxy["pid"]).status() == psutil.STATUS_ZOMBIE
    assert "Traceback" not in (state / "proxy-0" / "proxy-0.log").read_text()


def test_tls_cluster_proxy_serves_tls_with_the_cluster_ca(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {"MQ_CONFIG_DIR": str(tmp_path / "config")}
    up = mq_here("cluster", "up", "--preset", "2m-noslave", "--proxy", "--tls", "--dir", str(state), "--base-port",
            str(base_port()), "--set", "mappedFileSizeCommitLog=1048576", env=env)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        proxy = rows(state)["proxy-0"]
        assert proxy["grpc"] == {"answering": True, "tls": True, "latencyMs": proxy["grpc"]["latencyMs"],
                                 "error": None}, proxy
        addr = f"127.0.0.1:{proxy['port']}"
        ca = str(state / "tls" / "ca.pem")
        assert isinstance(probe(addr, ca), bytes)
        plain = probe(addr, None)
        assert isinstance(plain, grpc.RpcError) and plain.code() == grpc.StatusCode.UNAVAILABLE
        created = mq_here("admin", "topic", "create", "PxClusterTls", "-c", "DefaultCluster", "--context", "local", env=env)
        assert created.returncode == 0, created.stderr
        sent = send(addr, "PxClusterTls", ca=ca)
        assert sent.returncode == 0 and "SENT " in sent.stdout, sent.stdout + sent.stderr
        # the context names the proxy's remoting port, which serves TLS (or plain) beside the gRPC port
        remoting = f"127.0.0.1:{proxy['remotingPort']}"
        shown = mq_here("context", "show", "--context", "local", env=env)
        assert f"proxies: {remoting}" in shown.stdout, shown.stdout
        status = mq_here("admin", "proxy", "status", "--context", "local", "-o", "json", env=env)
        assert status.returncode == 0, status.stdout + status.stderr
        assert [p["addr"] for p in json.loads(status.stdout)["proxies"]] == [remoting]
    finally:
        down = mq_here("cluster", "down", "--dir", str(state))
    assert down.returncode == 0, down.stdout + down.stderr
    assert "Traceback" not in (state / "proxy-0" / "proxy-0.log").read_text()


def test_proxy_of_an_authenticating_cluster_checks_the_brokers_users(tmp_path: Path) -> None:
    state = tmp_path / "state"
    up = mq_here("cluster", "up", "--preset", "2m-noslave", "--proxy", "--dir", str(state), "--base-port", str(base_port()),
            "--set", "mappedFileSizeCommitLog=1048576", *AUTH_SETS, env=ROOT_ENV)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        conf = json.loads((state / "proxy-0" / "rmq-proxy.json").read_text())
        assert conf["authenticationEnabled"] == "true" and ROOT[1] in conf["innerClientAuthenticationCredentials"]
        out = mq_here("cluster", "status", "--dir", str(state), "-o", "json", env=ROOT_ENV)
        row = next(r for r in json.loads(out.stdout) if r["name"] == "proxy-0")
        assert row["grpc"]["answering"], row  # a refusal in the status is still a gRPC answer
        namesrv = conf["namesrvAddr"]
        for args, stdin in ((("topic", "create", "PxClusterAuth", "-c", "DefaultCluster"), None),
                            (("user", "create", "app1", "-c", "DefaultCluster"), "app-XYZZY-secret")):
            made = subprocess.run([sys.executable, "-m", "mqtools.cli.main", "admin", *args, "-n", namesrv],
                                  input=stdin, capture_output=True, text=True, timeout=60, check=False,
                                  env={**os.environ, **ROOT_ENV})
            assert made.returncode == 0, made.stderr
        addr = f"127.0.0.1:{row['port']}"
        sent = send(addr, "PxClusterAuth", user=("app1", "app-XYZZY-secret"))
        assert sent.returncode == 0 and "SENT " in sent.stdout, sent.stdout + sent.stderr
        refused = send(addr, "PxClusterAuth", user=("app1", "wrong"))
        assert refused.returncode != 0 and "failed to fetch topic:PxClusterAuth route" in refused.stderr, refused.stderr
    finally:
        down = mq_here("cluster", "down", "--dir", str(state))
    assert down.returncode == 0, down.stdout + down.stderr
    log = (state / "proxy-0" / "proxy-0.log").read_text()
    assert "Traceback" not in log and "app-XYZZY-secret" not in log and ROOT[1] not in log
