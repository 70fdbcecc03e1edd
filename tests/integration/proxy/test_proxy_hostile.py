"""Hostile gRPC input to `mq proxy`, with raw grpc channels where the 5.x client cannot produce it: a client
that opens hundreds of ReceiveMessage and Telemetry streams and is SIGKILLed (three times over), a malformed
command inside a Telemetry stream, a malformed ReceiveMessage, a body the proxy passes but the broker's
smaller maxMessageSize refuses. Each gets a clear status, the proxy's memory stays bounded across the rounds,
another client is served throughout, and the proxy's output has no traceback."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator

import grpc
import psutil
import pytest
from support.clientsupport import Cluster, broker_cluster, create_topic
from support.grpcstub import MessagingServiceStub
from support.mqproc import MqProcess, start_proxy

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TOPIC = "PxHostile"
BROKER_MAX = 64 * 1024
STREAMS = 200
#: Opens STREAMS ReceiveMessage and STREAMS Telemetry streams over 4 channels, prints OPEN, then waits to be killed.
FLOOD = """
import asyncio, sys
import grpc
from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb, service_pb2 as spb
addr, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
receive = spb.ReceiveMessageRequest(group=pb.Resource(name="PxFloodGroup"), batch_size=32,
                                    message_queue=pb.MessageQueue(topic=pb.Resource(name=topic)))
receive.invisible_duration.FromSeconds(30)
receive.long_polling_timeout.FromSeconds(20)
settings = spb.TelemetryCommand(settings=pb.Settings(client_type=pb.PRODUCER,
                                publishing=pb.Publishing(topics=[pb.Resource(name=topic)])))

async def commands():
    yield settings.SerializeToString()
    await asyncio.Event().wait()

async def main():
    channels = [grpc.aio.insecure_channel(addr) for _ in range(4)]
    receives, telemetries = [], []
    for i in range(n):
        channel = channels[i % 4]
        meta = (("x-mq-client-id", f"flood-{i}"),)
        receives.append(channel.unary_stream("/apache.rocketmq.v2.MessagingService/ReceiveMessage")(
            receive.SerializeToString(), metadata=meta, timeout=120))
        telemetries.append(channel.stream_stream("/apache.rocketmq.v2.MessagingService/Telemetry")(
            commands(), metadata=meta, timeout=120))
    answered = await asyncio.gather(*(t.read() for t in telemetries))  # the proxy took every stream
    assert all(spb.TelemetryCommand.FromString(a).status.code == pb.OK for a in answered)
    await asyncio.sleep(2)
    print("OPEN", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from broker_cluster(tmp_path_factory.mktemp("proxyhostile"), ("broker-h",), brokerClusterName="HostileIT",
                              maxMessageSize=str(BROKER_MAX))


@pytest.fixture(scope="module")
def proxy(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MqProcess]:
    asyncio.run(create_topic(cluster, TOPIC, 4))
    # maxMessageSize left at Apache's 4 MiB
    proc = start_proxy(tmp_path_factory.mktemp("proxyhostileconf"), "HostileIT", cluster.namesrv.addr)
    try:
        yield proc
    finally:
        proc.stop()
        assert "Traceback" not in proc.output(), proc.output()


META = [("x-mq-client-id", "hostile-test")]


def endpoints(proxy: MqProcess) -> pb.Endpoints:
    return pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=proxy.port)])


def send(stub: MessagingServiceStub, body: bytes, message_id: str) -> spb.SendMessageResponse:
    message = pb.Message(topic=pb.Resource(name=TOPIC), body=body)
    message.system_properties.message_id = message_id
    return stub.SendMessage(spb.SendMessageRequest(messages=[message]), metadata=META, timeout=20)


def served(proxy: MqProcess, tag: str) -> None:
    """Another client: a route and a send answered OK, quickly."""
    with grpc.insecure_channel(proxy.addr) as channel:
        stub = MessagingServiceStub(channel)
        route = stub.QueryRoute(spb.QueryRouteRequest(topic=pb.Resource(name=TOPIC), endpoints=endpoints(proxy)),
                                metadata=META, timeout=10)
        assert route.status.code == pb.OK, route.status
        answer = send(stub, f"served {tag}".encode(), f"HOSTILE-{tag}")
        assert answer.status.code == pb.OK, answer.status


def rss(proxy: MqProcess) -> int:
    return psutil.Process(proxy.pid).memory_info().rss


def flood_and_vanish(proxy: MqProcess) -> None:
    flood = subprocess.Popen([sys.executable, "-c", FLOOD, proxy.addr, TOPIC, str(STREAMS)], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        assert flood.stdout is not None
        line = flood.stdout.readline()
        assert line.strip() == "OPEN", line + flood.stdout.read()
        served(proxy, f"during-{flood.pid}")  # while 2 x STREAMS streams are open
    finally:
        flood.kill()
        flood.wait(10)


def test_streams_opened_and_abandoned_leave_memory_bounded_and_others_served(proxy: MqProcess) -> None:
    served(proxy, "warm")
    before = rss(proxy)
    flood_and_vanish(proxy)  # the first round grows the interpreter's arenas; later rounds must not grow further
    time.sleep(3)
    first = rss(proxy)
    for _ in range(2):
        flood_and_vanish(proxy)
    time.sleep(3)
    last = rss(proxy)
    assert last - first < 24 * 1024 * 1024, (before, first, last)
    assert last - before < 96 * 1024 * 1024, (before, first, last)
    assert proxy.proc.poll() is None
    served(proxy, "after")
    with grpc.insecure_channel(proxy.addr) as channel:  # receive works: nothing is left holding the receive slots
        stub = MessagingServiceStub(channel)
        request = spb.ReceiveMessageRequest(group=pb.Resource(name="PxHostileReader"), batch_size=32,
                                            message_queue=pb.MessageQueue(topic=pb.Resource(name=TOPIC)))
        request.invisible_duration.FromSeconds(30)
        request.long_polling_timeout.FromSeconds(5)
        answers = list(stub.ReceiveMessage(request, metadata=META, timeout=30))
        assert answers[0].status.code in (pb.OK, pb.MESSAGE_NOT_FOUND), answers[0].status
    assert "Traceback" not in proxy.output()


def test_malformed_stream_input_and_a_body_the_broker_refuses(proxy: MqProcess) -> None:
    with grpc.insecure_channel(proxy.addr) as channel:
        telemetry = channel.stream_stream("/apache.rocketmq.v2.MessagingService/Telemetry")
        good = spb.TelemetryCommand(settings=pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing(
            topics=[pb.Resource(name=TOPIC)]))).SerializeToString()
        answers = telemetry(iter([good, b"\xff\xff\xff\xff"]), metadata=META, timeout=15)
        first = spb.TelemetryCommand.FromString(next(answers))
        assert first.status.code == pb.OK and first.HasField("settings")
        with pytest.raises(grpc.RpcError) as broken:
            next(answers)
        assert broken.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "malformed TelemetryCommand" in broken.value.details()

        receive = channel.unary_stream("/apache.rocketmq.v2.MessagingService/ReceiveMessage")
        with pytest.raises(grpc.RpcError) as bad:
            list(receive(b"\x0a\x05\x0a\x03ab", metadata=META, timeout=15))  # a length past the end
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "malformed ReceiveMessageRequest" in bad.value.details()

        stub = MessagingServiceStub(channel)
        answer = send(stub, b"x" * (BROKER_MAX + 1024), "HOSTILE-BIG")
        # under the proxy's maxMessageSize, over the broker's: the broker's MESSAGE_ILLEGAL, mapped as Apache's
        # ResponseBuilder maps a code it does not list
        assert answer.status.code == pb.INTERNAL_SERVER_ERROR, answer.status
        assert answer.entries[0].status.code == pb.INTERNAL_SERVER_ERROR
    served(proxy, "after-malformed")
