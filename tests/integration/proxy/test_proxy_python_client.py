"""`mq proxy start` as a real process in front of mq's name server and broker, driven by the official RocketMQ 5
Python client (rocketmq-python-client 5.1.2, gRPC): sync, async, FIFO, timer and transactional sends (a
transaction left open is resolved through the proxy's relay of the broker's check), SimpleConsumer receive, ack
and change of invisible duration on the broker's POP; bad gRPC input gets clear status codes and the proxy goes
on serving; SIGTERM stops it cleanly."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families
from rocketmq.grpc_protocol import TransactionResolution
from rocketmq.v5.client import ClientConfiguration, Credentials
from rocketmq.v5.consumer import ConsumeResult, MessageListener, PushConsumer, SimpleConsumer
from rocketmq.v5.model import FilterExpression, Message
from rocketmq.v5.producer import Producer, TransactionChecker
from support.adminsupport import json_of, mq, mq_here
from support.clientsupport import Cluster, broker_cluster, create_topic
from support.grpcstub import MessagingServiceStub
from support.mqproc import MqProcess, start_mq
from support.presetcluster import wait_for
from support.promsupport import exporter, scrape
from support.proxyclient import new_message, now_ms

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.remoting.bodies import TopicConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

#: Each topic with the message type its sends are (a 5.x proxy takes only that type; NORMAL without one).
TOPICS = {"PxNormal": "NORMAL", "PxFifo": "FIFO", "PxTimer": "DELAY", "PxTx": "TRANSACTION", "PxInvisible": "NORMAL",
          "PxPush": "NORMAL"}
MAX_BODY = 64 * 1024
MAX_INBOUND = 512 * 1024



@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # half messages older than 1 s are checked every second, so an open transaction is asked about soon
    yield from broker_cluster(tmp_path_factory.mktemp("proxy"), ("broker-p",), brokerClusterName="ProxyIT",
                              transactionTimeOut="1000", transactionCheckInterval="1000")


@pytest.fixture(scope="module")
def proxy(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MqProcess]:
    for topic, kind in TOPICS.items():
        asyncio.run(create_topic(cluster, topic, 4, message_type=kind))
    conf = tmp_path_factory.mktemp("proxyconf") / "rmq-proxy.json"
    conf.write_text(json.dumps({"rocketMQClusterName": "ProxyIT", "namesrvAddr": cluster.namesrv.addr,
                                "proxyMode": "cluster", "grpcServerPort": 0, "remotingListenPort": 0,
                                "maxMessageSize": MAX_BODY, "grpcMaxInboundMessageSize": MAX_INBOUND}))
    proc = start_mq(["proxy", "start", "-c", str(conf), "--host", "127.0.0.1"], timeout=60)
    try:
        yield proc
    finally:
        proc.stop()


def config(proxy: MqProcess) -> ClientConfiguration:
    return ClientConfiguration(proxy.addr, Credentials(), request_timeout=10)


class Checker(TransactionChecker):
    """Answers a broker's check (relayed by the proxy) with COMMIT, and records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[bytes] = []
        self.event = threading.Event()

    def check(self, message: Message) -> TransactionResolution:
        self.asked.append(message.body)
        self.event.set()
        return TransactionResolution.COMMIT


@pytest.fixture(scope="module")
def producer(proxy: MqProcess) -> Iterator[tuple[Producer, Checker]]:
    checker = Checker()
    p = Producer(config(proxy), tuple(TOPICS), checker)
    p.startup()
    try:
        yield p, checker
    finally:
        p.shutdown()


def consumer(proxy: MqProcess, group: str, topic: str, expression: FilterExpression | None = None) -> SimpleConsumer:
    c = SimpleConsumer(config(proxy), group, {topic: expression or FilterExpression()}, await_duration=5)
    c.startup()
    return c


def drain(c: SimpleConsumer, want: int, timeout: float, *, ack: bool = True, invisible: int = 20) -> list:
    """Receive until `want` messages came (acking each) or `timeout` seconds passed."""
    got: list = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        for m in c.receive(32, invisible):
            got.append((m, now_ms()))
            if ack:
                c.ack(m)
    return got


def queue_of(message: Message) -> int:
    """The queue id inside a receipt handle (`start time invisible revive type broker queueId offset ...`)."""
    return int(message.receipt_handle.split(" ")[6])



def test_sync_and_async_sends_are_received_with_their_properties(proxy: MqProcess, producer) -> None:
    p, _ = producer
    sent = {}
    for i in range(3):
        m = new_message("PxNormal", f"sync-{i}".encode(), tag="TagA", keys="key-" + str(i))
        m.add_property("color", "red")
        sent[p.send(m).message_id] = f"sync-{i}".encode()
    futures = [p.send_async(new_message("PxNormal", f"async-{i}".encode(), tag="TagA")) for i in range(3)]
    for i, f in enumerate(futures):
        sent[f.result(30).message_id] = f"async-{i}".encode()
    c = consumer(proxy, "PxGroupNormal", "PxNormal")
    try:
        got = drain(c, len(sent), 60)
    finally:
        c.shutdown()
    assert {m.message_id: m.body for m, _ in got} == sent
    sync = [m for m, _ in got if m.body.startswith(b"sync")]
    assert all(m.tag == "TagA" and m.properties.get("color") == "red" for m in sync)
    assert sorted(k for m in sync for k in m.keys) == ["key-0", "key-1", "key-2"]
    assert all(m.delivery_attempt == 1 and m.topic == "PxNormal" for m, _ in got)


def test_fifo_messages_of_a_group_share_a_queue_in_order(proxy: MqProcess, producer) -> None:
    p, _ = producer
    for i in range(12):
        group = f"order-{i % 3}"
        p.send(new_message("PxFifo", f"{group}:{i}".encode(), message_group=group))
    c = consumer(proxy, "PxGroupFifo", "PxFifo")
    try:
        got = drain(c, 12, 60)
    finally:
        c.shutdown()
    assert len(got) == 12
    by_group: dict[str, list] = {}
    for m, _ in got:
        assert m.message_group == m.body.decode().split(":")[0]
        by_group.setdefault(m.message_group, []).append(m)
    for group, msgs in by_group.items():
        assert len({queue_of(m) for m in msgs}) == 1, f"{group} spread over queues"
        offsets = [int(m.receipt_handle.split(" ")[7]) for m in msgs]
        bodies = [int(m.body.decode().split(":")[1]) for m in sorted(msgs, key=lambda m: int(
            m.receipt_handle.split(" ")[7]))]
        assert bodies == sorted(bodies), f"{group}: queue order {bodies} (offsets {offsets})"


def test_timer_message_is_delivered_not_before_its_time(proxy: MqProcess, producer) -> None:
    p, _ = producer
    deliver_at = now_ms() + 3_000
    receipt = p.send(new_message("PxTimer", b"later", delivery_timestamp=deliver_at))
    c = consumer(proxy, "PxGroupTimer", "PxTimer")
    try:
        got = drain(c, 1, 60)
    finally:
        c.shutdown()
    assert [m.message_id for m, _ in got] == [receipt.message_id]
    message, received_at = got[0]
    assert received_at >= deliver_at, f"received {deliver_at - received_at} ms early"
    assert message.delivery_timestamp == deliver_at


def test_transactions_commit_roll_back_and_open_ones_are_checked(proxy: MqProcess, producer) -> None:
    p, checker = producer
    committed = p.begin_transaction()
    p.send(new_message("PxTx", b"commit"), committed)
    committed.commit()
    rolled = p.begin_transaction()
    p.send(new_message("PxTx", b"rollback"), rolled)
    rolled.rollback()
    p.send(new_message("PxTx", b"open"), p.begin_transaction())  # neither: the broker asks, the checker commits
    assert checker.event.wait(60), "no transaction check reached the producer through the proxy"
    assert b"open" in checker.asked
    c = consumer(proxy, "PxGroupTx", "PxTx")
    try:
        got = drain(c, 2, 60)
        later = drain(c, 1, 6)  # a rolled-back message never shows up
    finally:
        c.shutdown()
    assert sorted(m.body for m, _ in got) == [b"commit", b"open"]
    assert later == []


def test_unacked_message_comes_back_and_invisible_duration_can_change(proxy: MqProcess, producer) -> None:
    p, _ = producer
    p.send(new_message("PxInvisible", b"again"))
    c = consumer(proxy, "PxGroupInvisible", "PxInvisible")
    try:
        first = drain(c, 1, 60, ack=False, invisible=20)
        assert len(first) == 1
        c.change_invisible_duration(first[0][0], 2)  # visible again in 2 s instead of 20
        again = drain(c, 1, 45, ack=True, invisible=20)
    finally:
        c.shutdown()
    assert [m.body for m, _ in again] == [b"again"]
    assert again[0][0].delivery_attempt == 2
    assert again[0][1] - first[0][1] < 20_000


class Listener(MessageListener):
    """Fails each message's first delivery (so it comes back), takes the second."""

    def __init__(self) -> None:
        self.seen: list[tuple[bytes, int]] = []
        self.lock = threading.Lock()

    def consume(self, message: Message) -> ConsumeResult:
        with self.lock:
            self.seen.append((message.body, message.delivery_attempt))
        return ConsumeResult.SUCCESS if message.delivery_attempt > 1 else ConsumeResult.FAILURE

    def done(self, bodies: set[bytes]) -> bool:
        with self.lock:
            return {b for b, attempt in self.seen if attempt > 1} >= bodies


def test_push_consumer_consumes_and_a_failure_is_redelivered(proxy: MqProcess, producer) -> None:
    p, _ = producer
    bodies = {f"push-{i}".encode() for i in range(3)}
    for body in sorted(bodies):
        p.send(new_message("PxPush", body))
    listener = Listener()
    c = PushConsumer(config(proxy), "PxGroupPush", listener, {"PxPush": FilterExpression()})
    c.startup()
    try:
        deadline = time.monotonic() + 90
        while not listener.done(bodies) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        c.shutdown()
    assert listener.done(bodies), listener.seen
    firsts = sorted(b for b, attempt in listener.seen if attempt == 1)
    assert firsts == sorted(bodies)


def raw(proxy: MqProcess, method: str, body: bytes, stream: bool = False) -> grpc.RpcError | bytes:
    with grpc.insecure_channel(proxy.addr) as channel:
        path = f"/apache.rocketmq.v2.MessagingService/{method}"
        call = channel.unary_stream(path) if stream else channel.unary_unary(path)
        try:
            out = call(body, metadata=[("x-mq-client-id", "raw-test")], timeout=15)
            return b"".join(out) if stream else out
        except grpc.RpcError as exc:
            return exc


def test_the_toolkit_reads_the_proxys_grpc_clients_where_the_brokers_see_none(proxy: MqProcess, cluster: Cluster,
                                                                               producer) -> None:
    """The brokers never see gRPC consumers; `mq admin proxy` asks the proxy's remoting port. A dead proxy makes the
    document partial; without a name server only the groups given are asked, and the document says so."""
    c = consumer(proxy, "PxGroupSeen", "PxNormal", FilterExpression("TagA"))
    try:
        producer[0].send(new_message("PxNormal", b"seen", tag="TagA"))
        assert drain(c, 1, 30)  # the group has consumed: the brokers hold its offsets (diagnose reads them)
        remoting = f"127.0.0.1:{proxy.extra['remoting']}"
        doc = json_of(mq_here("admin", "proxy", "clients", "-p", remoting, "-o", "json", namesrv=cluster.namesrv.addr),
                      "ProxyClients")
        seen = [x for x in doc["clients"] if x["group"] == "PxGroupSeen"]
        assert [(x["kind"], x["language"], x["version"], x["proxy"]) for x in seen] == \
            [("SIMPLE", "PYTHON", "V5_1_2", remoting)]
        published = {x["group"] for x in doc["clients"] if x["kind"] == "PRODUCER"}
        assert published == set(TOPICS) and doc["listingError"] is None
        assert json_of(mq_here("admin", "group", "connections", "PxGroupSeen", "-o", "json", namesrv=cluster.namesrv.addr),
                       "GroupConnections")["clients"] == []
        # given the proxy, group connections lists the gRPC consumer beside the brokers' (none), and a dead proxy
        # makes it partial
        through = json_of(mq_here("admin", "group", "connections", "PxGroupSeen", "-p", remoting, "-p", "127.0.0.1:1",
                             "-o", "json", namesrv=cluster.namesrv.addr), "GroupConnections", exit_code=4)
        assert through["clients"] == [] and through["proxyClients"] == seen and through["partial"]
        assert [u["addr"] for u in through["unreachable"]] == ["127.0.0.1:1"]
        table = mq_here("admin", "group", "connections", "PxGroupSeen", "-p", remoting, namesrv=cluster.namesrv.addr)
        assert "(SIMPLE)" in table.stdout and "1 through the proxies asked" in table.stdout, table.stdout + table.stderr
        producers = json_of(mq_here("admin", "producer", "connections", "PxNormal", "PxNormal", "-p", remoting, "-o", "json",
                               namesrv=cluster.namesrv.addr), "ProducerConnections")
        grpc_producers = [x for x in doc["clients"] if x["kind"] == "PRODUCER" and x["group"] == "PxNormal"]
        assert grpc_producers and producers["proxyClients"] == grpc_producers, producers
        assert producers["proxiesAsked"] == [remoting] and producers["proxiesNotListing"] == []

        dead = "127.0.0.1:1"
        status = json_of(mq_here("admin", "proxy", "status", "-p", remoting, "-p", dead, "-o", "json",
                            namesrv=cluster.namesrv.addr), "ProxyStatus", exit_code=4)
        assert status["partial"] and [u["addr"] for u in status["unreachable"]] == [dead]
        (mine,) = status["proxies"]
        assert mine["addr"] == remoting and mine["consumers"] >= 1 and mine["producers"] >= 1
        assert mine["languages"]["PYTHON"] >= 2

        # no name server: only the group given is asked, and the answer says it is partial (exit 4)
        blind = json_of(mq_here("admin", "proxy", "clients", "-p", remoting, "-g", "PxGroupSeen", "-o", "json",
                           namesrv=dead), "ProxyClients", exit_code=4)
        assert blind["listingError"] and blind["groupsAsked"] == 1 and blind["partial"]
        assert [x["group"] for x in blind["clients"]] == ["PxGroupSeen"]
        table = mq_here("admin", "proxy", "status", "-p", remoting, "-g", "PxGroupSeen", namesrv=dead)
        assert table.returncode == 4 and "could not be listed" in table.stdout, table.stdout + table.stderr

        judged = mq("admin", "diagnose", "group", "PxGroupSeen", "--proxy", remoting, "-o", "json",
                    namesrv=cluster.namesrv.addr, timeout=90)
        verdict = json.loads(judged.stdout)
        assert verdict["verdict"] != "offline" and [m["clientId"] for m in verdict["members"]] == [seen[0]["clientId"]]

        with exporter(cluster.namesrv.addr, "--proxy", remoting, "--proxy", dead) as addr:
            def polled() -> str | None:
                text = scrape(addr)
                return text if 'mq_exporter_poll_ok{job="proxies"} 1.0' in text else None

            text = wait_for(polled, 30, "the exporter's proxy poll")
        figures = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for f in text_string_to_metric_families(text) for s in f.samples if s.name.startswith("mq_proxy")}
        assert figures[("mq_proxy_up", (("proxy", remoting),))] == 1
        assert figures[("mq_proxy_up", (("proxy", dead),))] == 0
        assert figures[("mq_proxy_clients", (("kind", "SIMPLE"), ("language", "PYTHON"), ("proxy", remoting)))] >= 1
    finally:
        c.shutdown()


def test_a_producer_that_leaves_is_unregistered_at_the_brokers(proxy: MqProcess, cluster: Cluster) -> None:
    """The proxy heartbeats a producer's topic to the brokers as a producer group; once the producer leaves, the
    group is unregistered there at once. Left to expire, it would make a broker close the proxy's connection
    120 s later with whatever was in flight on it (CI: 'connection to ... closed' under a waiting POP)."""
    topic = "PxLeaving"  # published by no other producer of the module
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        admin.topics.create_topic(TopicConfig(topic, 4, 4), cluster="ProxyIT")
        p = Producer(config(proxy), (topic,))
        p.startup()
        try:
            p.send(new_message(topic, b"registered"))
            assert wait_for(lambda: admin.groups.producer_connections(topic, topic).clients, 30, "the proxy registered")
        finally:
            p.shutdown()
        wait_for(lambda: admin.groups.producer_connections(topic, topic).clients == [], 30, "the proxy unregistered")


def test_bad_input_gets_clear_status_codes_and_the_proxy_goes_on(proxy: MqProcess, producer) -> None:
    malformed = raw(proxy, "SendMessage", b"\xff\xff\xff\xff")
    assert isinstance(malformed, grpc.RpcError) and malformed.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "malformed SendMessageRequest" in malformed.details()
    unknown = raw(proxy, "NoSuchMethod", b"")
    assert isinstance(unknown, grpc.RpcError) and unknown.code() == grpc.StatusCode.UNIMPLEMENTED
    pull = raw(proxy, "PullMessage", b"", stream=True)
    assert isinstance(pull, grpc.RpcError) and pull.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "PullMessage is not implemented by mq proxy" in pull.details()
    huge = raw(proxy, "SendMessage", b"\x0a" + b"\xff" * (MAX_INBOUND + 10))
    assert isinstance(huge, grpc.RpcError) and huge.code() == grpc.StatusCode.RESOURCE_EXHAUSTED

    with grpc.insecure_channel(proxy.addr) as channel:
        stub = MessagingServiceStub(channel)
        meta = [("x-mq-client-id", "raw-test")]
        big = pb.Message(body=b"x" * (MAX_BODY + 1))
        big.topic.name = "PxNormal"
        big.system_properties.message_id = "RAW-BIG"
        answer = stub.SendMessage(spb.SendMessageRequest(messages=[big]), metadata=meta, timeout=15)
        assert answer.status.code == pb.MESSAGE_BODY_TOO_LARGE
        route = stub.QueryRoute(spb.QueryRouteRequest(topic=pb.Resource(name="NoSuchTopicHere"), endpoints=pb.Endpoints(
            scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=proxy.port)])), metadata=meta, timeout=15)
        assert route.status.code == pb.TOPIC_NOT_FOUND
        lost = pb.Message(body=b"x")
        lost.topic.name = "NoSuchTopicHere"
        lost.system_properties.message_id = "RAW-LOST"
        answer = stub.SendMessage(spb.SendMessageRequest(messages=[lost]), metadata=meta, timeout=15)
        assert answer.status.code == pb.TOPIC_NOT_FOUND and answer.entries[0].status.code == pb.TOPIC_NOT_FOUND
        assignment = stub.QueryAssignment(spb.QueryAssignmentRequest(
            topic=pb.Resource(name="PxNormal"), group=pb.Resource(name="PxGroupNormal"), endpoints=pb.Endpoints(
                scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=proxy.port)])), metadata=meta, timeout=15)
        assert assignment.status.code == pb.OK
        assert [(a.message_queue.broker.name, a.message_queue.id) for a in assignment.assignments] == [("broker-p", -1)]
        assert assignment.assignments[0].message_queue.broker.endpoints.addresses[0].port == proxy.port
        empty_settings = stub.Telemetry(iter([spb.TelemetryCommand(settings=pb.Settings())]), metadata=meta,
                                        timeout=15)
        with pytest.raises(grpc.RpcError) as refused:
            list(empty_settings)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "no publishing or subscription" in refused.value.details()
        no_id = raw(proxy, "QueryRoute", b"")
        assert isinstance(no_id, bytes)  # a request without fields parses; its answer carries the status
        assert spb.QueryRouteResponse.FromString(no_id).status.code == pb.ILLEGAL_TOPIC

    p, _ = producer
    assert p.send(new_message("PxNormal", b"still serving")).message_id
    assert proxy.proc.poll() is None


def test_sigterm_stops_the_proxy_cleanly(cluster: Cluster, tmp_path: Path) -> None:
    proc = start_mq(["proxy", "start", "-n", cluster.namesrv.addr, "--grpc-port", "0", "--remoting-port", "0", "--host", "127.0.0.1"],
                    timeout=60)
    try:
        proc.signal(signal.SIGTERM)
        assert proc.proc.wait(30) == 0
    finally:
        proc.stop()
    assert "Traceback" not in proc.output()
