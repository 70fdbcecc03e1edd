"""`mq proxy` with authenticationEnabled in front of an mq broker with ACL 2.0: the 5.x Python client's signature
(`authorization: MQv2-HMAC-SHA1 Credential=..., SignedHeaders=x-mq-date-time, Signature=<hex>`) is checked
against the broker's users (read with AUTH_GET_USER, as Apache's proxy does in cluster mode). The right secret
sends and receives; a wrong secret, an unknown user, a disabled user, an unsigned call and a garbled signature
get Code.UNAUTHORIZED with Apache's messages in the response status, on unary calls and on both streams. With
authorizationEnabled the proxy enforces the signed user's ACL 2.0 rules itself (the broker sees the proxy's own
user): a topic or group the rules do not grant is UNAUTHORIZED with Apache's message and nothing is stored. The
proxy logs no traceback and no password."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import grpc
import pytest
from rocketmq.v5.client import ClientConfiguration, Credentials
from rocketmq.v5.consumer import SimpleConsumer
from rocketmq.v5.model import FilterExpression, Message
from rocketmq.v5.producer import Producer
from rocketmq.v5.util.signature import Signature
from support.adminsupport import mq_here
from support.clientsupport import Cluster, broker_cluster
from support.grpcstub import MessagingServiceStub
from support.mqproc import MqProcess, start_mq

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

ROOT = ("rocketmq", "root-XYZZY-proxy-1")
APP = ("app1", "app-XYZZY-proxy-2")
OFF = ("app-off", "off-XYZZY-proxy-3")
PASSWORDS = (ROOT[1], APP[1], OFF[1], "not-the-secret")
TOPIC, OTHER = "PxAuth", "PxAuthOther"
ROOT_ENV = {"MQ_ACCESS_KEY": ROOT[0], "MQ_SECRET_KEY": ROOT[1]}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    inner = json.dumps({"accessKey": ROOT[0], "secretKey": ROOT[1]})
    yield from broker_cluster(
        tmp_path_factory.mktemp("proxyauth"), ("broker-pa",), brokerClusterName="ProxyAuthIT",
        authenticationEnabled="true",
        authenticationMetadataProvider="org.apache.rocketmq.auth.authentication.provider."
                                       "LocalAuthenticationMetadataProvider",
        initAuthenticationUser=json.dumps({"username": ROOT[0], "password": ROOT[1]}),
        innerClientAuthenticationCredentials=inner)


def admin(cluster: Cluster, *args: str, stdin: str | None = None) -> None:
    result = mq_here("admin", *args, "-n", cluster.namesrv.addr, stdin=stdin, env=ROOT_ENV)
    assert result.returncode == 0, (result.stdout, result.stderr)


@pytest.fixture(scope="module")
def proxy(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MqProcess]:
    broker = cluster.broker.addr
    for topic in (TOPIC, OTHER):
        admin(cluster, "topic", "create", topic, "-b", broker)
    for name, secret in (APP, OFF):
        admin(cluster, "user", "create", name, "-b", broker, stdin=secret)
    admin(cluster, "user", "update", OFF[0], "--status", "disable", "-b", broker)
    admin(cluster, "acl2", "create", APP[0], "-r", f"Topic:{TOPIC},Group:PxAuthGroup", "-a", "Pub,Sub", "-d", "Allow",
          "-b", broker)
    conf = tmp_path_factory.mktemp("proxyauthconf") / "rmq-proxy.json"
    conf.write_text(json.dumps({
        "rocketMQClusterName": "ProxyAuthIT", "namesrvAddr": cluster.namesrv.addr, "grpcServerPort": 0, "remotingListenPort": 0,
        "authenticationEnabled": True, "authorizationEnabled": True,
        "innerClientAuthenticationCredentials": json.dumps({"accessKey": ROOT[0], "secretKey": ROOT[1]})}))
    proc = start_mq(["proxy", "start", "-c", str(conf), "--host", "127.0.0.1"], timeout=60)
    try:
        yield proc
    finally:
        proc.stop()
        output = proc.output()
        assert "Traceback" not in output, output
        assert not any(p in output for p in PASSWORDS), "a password reached the proxy's output"


def signed(user: str, secret: str, *, date_time: str | None = None) -> list[tuple[str, str]]:
    """The headers the 5.1.2 client sends, signed with `secret` by the client's own code."""
    stamp = date_time or time.strftime("%Y%m%dT%H%M%SZ")
    return [("x-mq-client-id", "auth-test"), ("x-mq-date-time", stamp), ("x-mq-language", "PYTHON"),
            ("authorization", (f"MQv2-HMAC-SHA1 Credential={user}, SignedHeaders=x-mq-date-time, "
                               f"Signature={Signature.sign(secret, stamp)}"))]


def query_route(proxy: MqProcess, metadata: list[tuple[str, str]], topic: str = TOPIC) -> pb.Status:
    with grpc.insecure_channel(proxy.addr) as channel:
        stub = MessagingServiceStub(channel)
        answer = stub.QueryRoute(spb.QueryRouteRequest(topic=pb.Resource(name=topic), endpoints=pb.Endpoints(
            scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=proxy.port)])), metadata=metadata, timeout=15)
        return answer.status


def test_the_right_secret_sends_and_receives(proxy: MqProcess) -> None:
    config = ClientConfiguration(proxy.addr, Credentials(*APP), request_timeout=10)
    producer = Producer(config, (TOPIC,))
    producer.startup()
    consumer = SimpleConsumer(config, "PxAuthGroup", {TOPIC: FilterExpression()}, await_duration=5)
    consumer.startup()
    try:
        message = Message()
        message.topic, message.body = TOPIC, b"signed body"
        sent = producer.send(message).message_id
        got = []
        deadline = time.monotonic() + 40
        while not got and time.monotonic() < deadline:
            for m in consumer.receive(16, 20):
                consumer.ack(m)
                got.append(m)
        assert [(m.message_id, m.body) for m in got] == [(sent, b"signed body")]
    finally:
        consumer.shutdown()
        producer.shutdown()
    assert query_route(proxy, signed(*ROOT)).code == pb.OK


def test_refusals_are_unauthorized_with_apaches_messages(proxy: MqProcess) -> None:
    cases = {
        "check signature failed.": signed(APP[0], "not-the-secret"),
        "User:nobody is not found.": signed("nobody", APP[1]),
        f"User:{OFF[0]} is disabled.": signed(*OFF),
        "username cannot be null.": [("x-mq-client-id", "auth-test")],
        "datetime is null.": [h for h in signed(*APP) if h[0] != "x-mq-date-time"],
        "create authentication context error.": [*signed(*APP)[:3], (
            "authorization", f"MQv2-HMAC-SHA1 Credential={APP[0]}, SignedHeaders=x-mq-date-time, Signature=zz")],
    }
    for message, metadata in cases.items():
        status = query_route(proxy, metadata)
        assert (status.code, status.message) == (pb.UNAUTHORIZED, message), metadata
    # an old date signed right is accepted: Apache's proxy checks the signature, not the clock
    assert query_route(proxy, signed(*APP, date_time="20200101T000000Z")).code == pb.OK

    wrong = signed(APP[0], "not-the-secret")
    with grpc.insecure_channel(proxy.addr) as channel:
        stub = MessagingServiceStub(channel)
        received = list(stub.ReceiveMessage(spb.ReceiveMessageRequest(
            group=pb.Resource(name="PxAuthGroup"), message_queue=pb.MessageQueue(topic=pb.Resource(name=TOPIC))),
            metadata=wrong, timeout=15))
        assert [(r.status.code, r.status.message) for r in received] == [(pb.UNAUTHORIZED, "check signature failed.")]
        settings = spb.TelemetryCommand(settings=pb.Settings(publishing=pb.Publishing(topics=[pb.Resource(
            name=TOPIC)])))
        answers = list(stub.Telemetry(iter([settings, settings]), metadata=wrong, timeout=15))
        assert [(a.status.code, a.status.message) for a in answers] == [(pb.UNAUTHORIZED, "check signature failed.")] * 2
        sent = stub.SendMessage(spb.SendMessageRequest(messages=[pb.Message(topic=pb.Resource(name=TOPIC), body=b"x")]),
                                metadata=wrong, timeout=15)
        assert (sent.status.code, sent.status.message) == (pb.UNAUTHORIZED, "check signature failed.")


def test_the_python_client_with_a_wrong_secret_cannot_send(proxy: MqProcess) -> None:
    producer = Producer(ClientConfiguration(proxy.addr, Credentials(APP[0], "not-the-secret"), request_timeout=5),
                        (TOPIC,))
    producer.startup()  # the 5.1.2 client logs a failed route at startup and goes on
    try:
        message = Message()
        message.topic, message.body = TOPIC, b"never stored"
        with pytest.raises(Exception) as failed:  # the 5.1.2 client raises a bare Exception
            producer.send(message)
        assert f"failed to fetch topic:{TOPIC} route" in str(failed.value)
    finally:
        producer.shutdown()
    assert query_route(proxy, signed(*APP)).code == pb.OK  # and the proxy goes on serving the right ones


def test_the_users_rules_are_enforced_by_the_proxy(proxy: MqProcess, cluster: Cluster) -> None:
    def refusal(resource: str) -> tuple[int, str]:
        return pb.UNAUTHORIZED, f"User:{APP[0]} has no permission to access {resource} from 127.0.0.1, no matched policies."

    status = query_route(proxy, signed(*APP), OTHER)
    assert (status.code, status.message) == refusal(f"Topic:{OTHER}")
    assert query_route(proxy, signed(*ROOT), OTHER).code == pb.OK  # a Super user may do anything
    with grpc.insecure_channel(proxy.addr) as channel:
        stub = MessagingServiceStub(channel)
        sent = stub.SendMessage(spb.SendMessageRequest(messages=[pb.Message(
            topic=pb.Resource(name=OTHER), body=b"x", system_properties=pb.SystemProperties(message_id="01AUTHZ"))]),
            metadata=signed(*APP), timeout=15)
        assert (sent.status.code, sent.status.message) == refusal(f"Topic:{OTHER}")
        received = list(stub.ReceiveMessage(spb.ReceiveMessageRequest(
            group=pb.Resource(name="PxAuthOtherGroup"), message_queue=pb.MessageQueue(topic=pb.Resource(name=TOPIC))),
            metadata=signed(*APP), timeout=15))
        assert [(r.status.code, r.status.message) for r in received] == [refusal("Group:PxAuthOtherGroup")]
    status_doc = mq_here("admin", "topic", "status", OTHER, "-o", "json", "-n", cluster.namesrv.addr, env=ROOT_ENV)
    assert json.loads(status_doc.stdout)["messages"] == 0, status_doc.stdout + status_doc.stderr


def test_the_remoting_port_tells_about_clients_only_a_user_allowed_to_know(proxy: MqProcess, cluster: Cluster) -> None:
    """mq admin proxy asks the proxy's remoting port, which checks users as the gRPC port does: unsigned, or signed
    by a user without Get on the group, the proxy is refused (partial, exit 4, the reason given); root reads it."""
    remoting = f"127.0.0.1:{proxy.extra['remoting']}"
    args = ("admin", "proxy", "clients", "-p", remoting, "-g", "PxAuthGroup", "-o", "json", "-n", cluster.namesrv.addr)
    for env in ({}, {"MQ_ACCESS_KEY": APP[0], "MQ_SECRET_KEY": APP[1]}):
        refused = mq_here(*args, env=env)
        assert refused.returncode == 4, refused.stdout + refused.stderr
        # the proxy named; and this user may not list the cluster's groups either, which the document says too
        missed = json.loads(refused.stdout)["unreachable"]
        (why,) = [u for u in missed if u["addr"] == remoting]
        assert why["reason"].startswith("refused: "), why
    allowed = mq_here(*args, env=ROOT_ENV)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert json.loads(allowed.stdout)["unreachable"] == []
