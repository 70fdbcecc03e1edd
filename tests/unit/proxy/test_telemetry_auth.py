"""Every command of a Telemetry stream passes the proxy's gate, as each of Apache's does
(GrpcMessagingApplication.telemetry runs its request pipeline in onNext): a later settings command publishing or
subscribing to what the user may not is answered UNAUTHORIZED on the stream, which goes on, and nothing of it is
registered (a producer of a topic is sent its half messages to check). The handlers are driven directly, with a
fake servicer context and users and rules from dicts; no server is started."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import SimpleNamespace

import grpc
from support.proxyauth import FakeAuthenticator, headers

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
from mqtools.client.instance import ClientInstance
from mqtools.client.route import TopicRoute
from mqtools.common.auth.model import Acl
from mqtools.proxy.authorize import Authorizer
from mqtools.proxy.config import ProxyConfig
from mqtools.proxy.errors import Code
from mqtools.proxy.server import SERVICE, Gate, handlers
from mqtools.proxy.service import MessagingService
from mqtools.remoting.auth_bodies import AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo, acl_of

CLIENT = "client-1"
PEER_IP = "10.0.0.7"


class Offline(ClientInstance):
    """The proxy's link to a cluster that knows no route; its heartbeats (producer registrations) are counted."""

    def __init__(self) -> None:
        super().__init__(["127.0.0.1:9876"])
        self.heartbeats = 0

    async def route(self, topic: str, *, refresh: bool = False) -> TopicRoute | None:
        return None

    async def heartbeat(self) -> None:
        self.heartbeats += 1


class RulesFromDict(Authorizer):
    """app1 may publish Topic:allowed and subscribe Group:G and Topic:allowed; nothing else."""

    def __init__(self) -> None:
        clock = [0.0]
        super().__init__(FakeAuthenticator({"app1": UserInfo("app1", "pw", "Normal", "enable")}, clock),
                         clock=lambda: clock[0])

    async def _load(self, subject: str) -> Acl | None:
        entries = [PolicyEntryInfo("Topic:allowed", ["Pub", "Sub"], None, "Allow"),
                   PolicyEntryInfo("Group:G", ["Sub"], None, "Allow")]
        return acl_of(AclInfo(subject, [PolicyInfo("Custom", entries)]), subject)


class Context:
    """What the handlers read of a grpc.aio.ServicerContext."""

    def __init__(self, metadata: dict[str, str]) -> None:
        self.metadata = metadata

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return tuple(self.metadata.items())

    def time_remaining(self) -> float | None:
        return None

    def peer(self) -> str:
        return f"ipv4:{PEER_IP}:5555"

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise AssertionError(f"aborted {code}: {details}")


def setup() -> tuple[MessagingService, grpc.GenericRpcHandler, Context]:
    service = MessagingService(ProxyConfig(), Offline(), port=0)
    authorizer = RulesFromDict()
    gate = Gate(authorizer.authenticator, authorizer)
    return service, handlers(service, gate), Context({**headers("app1", "pw"), "x-mq-client-id": CLIENT})


def method(table: grpc.GenericRpcHandler, name: str) -> grpc.RpcMethodHandler:
    found = table.service(SimpleNamespace(method=f"/{SERVICE}/{name}"))  # type: ignore[arg-type]
    assert found is not None
    return found


def publishing(*topics: str) -> spb.TelemetryCommand:
    return spb.TelemetryCommand(settings=pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing(
        topics=[pb.Resource(name=t) for t in topics])))


def subscription(group: str, topic: str) -> spb.TelemetryCommand:
    return spb.TelemetryCommand(settings=pb.Settings(client_type=pb.SIMPLE_CONSUMER, subscription=pb.Subscription(
        group=pb.Resource(name=group), subscriptions=[pb.SubscriptionEntry(topic=pb.Resource(name=topic))])))


class Stream:
    """One Telemetry call, held open until `close` (a producer is sent its checks only while its stream is open)."""

    def __init__(self, table: grpc.GenericRpcHandler, context: Context, commands: list[spb.TelemetryCommand]) -> None:
        self.release = asyncio.Event()

        async def sent() -> AsyncIterator[bytes]:
            for command in commands:
                yield command.SerializeToString()
            await self.release.wait()

        self.answers = method(table, "Telemetry").stream_stream(sent(), context)

    async def next(self) -> spb.TelemetryCommand:
        return spb.TelemetryCommand.FromString(await asyncio.wait_for(anext(self.answers), 5))

    async def close(self) -> list[bytes]:
        """The client closes its side; what the proxy still sent."""
        self.release.set()
        return [raw async for raw in self.answers]


def refused(resource: str) -> tuple[int, str]:
    return Code.UNAUTHORIZED, f"User:app1 has no permission to access {resource} from {PEER_IP}, no matched policies."


async def test_a_later_settings_command_publishing_a_topic_the_user_may_not_is_refused_and_not_registered() -> None:
    service, table, context = setup()
    stream = Stream(table, context, [publishing("allowed"), publishing("allowed", "secret")])
    first, second = await stream.next(), await stream.next()
    assert first.status.code == Code.OK and [t.name for t in first.settings.publishing.topics] == ["allowed"]
    assert (second.status.code, second.status.message) == refused("Topic:secret")
    assert not second.HasField("settings")
    client = service.clients.get(CLIENT)
    assert client is not None and client.publishing_topics == {"allowed"}
    assert service.clients.producers_of("allowed") == [client]
    assert service.clients.producers_of("secret") == []  # a broker's check of a half message of secret: not sent here
    assert service.instance.producer_groups == {"allowed"} and set(service.instance.transaction_checkers) == {"allowed"}
    assert await stream.close() == []


async def test_a_later_subscription_to_a_group_or_topic_the_user_may_not_is_refused() -> None:
    service, table, context = setup()
    commands = [subscription("G", "allowed"), subscription("G2", "allowed"), subscription("G", "secret"),
                subscription("G", "allowed")]
    stream = Stream(table, context, commands)
    got = [await stream.next() for _ in commands]
    assert [a.status.code for a in got] == [Code.OK, Code.UNAUTHORIZED, Code.UNAUTHORIZED, Code.OK]
    assert [(a.status.code, a.status.message) for a in got[1:3]] == [refused("Group:G2"), refused("Topic:secret")]
    assert service.clients.consumers_of("G2") == []
    client = service.clients.get(CLIENT)
    assert client is not None and client.settings is not None
    assert [e.topic.name for e in client.settings.subscription.subscriptions] == ["allowed"]
    assert await stream.close() == []


async def test_a_refused_first_command_opens_no_stream_and_an_unsigned_stream_is_refused_each_time() -> None:
    service, table, _ = setup()
    unsigned = Context({"x-mq-client-id": CLIENT})
    stream = Stream(table, unsigned, [publishing("allowed"), publishing("allowed")])
    got = [await stream.next(), await stream.next()]
    assert [(a.status.code, a.status.message) for a in got] == [(Code.UNAUTHORIZED, "username cannot be null.")] * 2
    assert service.clients.get(CLIENT) is None and not service.instance.producer_groups
    assert await stream.close() == []


async def test_receive_message_is_admitted_on_its_one_request() -> None:
    """ReceiveMessage streams answers to one request, which passes the gate before the service sees it."""
    service, table, context = setup()
    request = spb.ReceiveMessageRequest(group=pb.Resource(name="G"), message_queue=pb.MessageQueue(
        topic=pb.Resource(name="secret")))
    out = [spb.ReceiveMessageResponse.FromString(raw)
           async for raw in method(table, "ReceiveMessage").unary_stream(request.SerializeToString(), context)]
    assert [(r.status.code, r.status.message) for r in out] == [refused("Topic:secret")]
    assert service.clients.get(CLIENT) is None
