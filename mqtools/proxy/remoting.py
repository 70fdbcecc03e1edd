"""The proxy's remoting port (remotingListenPort, Apache's RemotingProtocolServer): what an operator's tools ask a
proxy about its gRPC clients.

The brokers never see a proxy's gRPC consumers (they POP through the proxy's own client), so a group served only
by gRPC clients is "not online" to every broker; the proxy is the one place that knows them. As Apache's proxy,
this port answers GET_CONSUMER_CONNECTION_LIST for a group from the clients' settings (consume type
CONSUME_PASSIVELY for a PushConsumer, CONSUME_ACTIVELY for a SimpleConsumer, clustering, from the last offset,
the subscriptions they reported), and CONSUMER_NOT_ONLINE for a group no client of this proxy is in.

Beyond Apache: GET_PRODUCER_CONNECTION_LIST with the topic as the producer group (a gRPC producer's group is
its topic, as Apache's proxy registers it); Apache's proxy answers REQUEST_CODE_NOT_SUPPORTED. A client's
version is its own (`5.0.8` -> V5_0_8), where Apache's proxy reports its own version for every client whose
version string is not an enum name. Every other code is REQUEST_CODE_NOT_SUPPORTED: the proxy does not relay
remoting clients to the brokers.
"""

from __future__ import annotations

from mqtools.client.subscription import parse_subscription
from mqtools.common.mqversion import version_ordinal
from mqtools.proxy.clients import Clients, GrpcClient
from mqtools.proxy.protos.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.remoting.bodies import Connection, ConsumerConnection, ProducerConnection, SubscriptionData
from mqtools.remoting.codes import PROTOCOL_VERSION, LanguageCode, RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.server import RemotingServer
from mqtools.remoting.transport import RemotingConnection

#: ConsumeType by the gRPC client type (Apache's ClientActivity.buildConsumeType).
CONSUME_TYPES = {pb.PUSH_CONSUMER: "CONSUME_PASSIVELY", pb.SIMPLE_CONSUMER: "CONSUME_ACTIVELY"}
_LANGUAGES = {code.name for code in LanguageCode}


def connection(client: GrpcClient) -> Connection:
    """The client as a remoting Connection: the language named in its x-mq-language header (OTHER when
    RocketMQ's LanguageCode has no such name), its version's MQVersion ordinal."""
    language = client.language.upper() if client.language.upper() in _LANGUAGES else LanguageCode.OTHER.name
    version = version_ordinal(client.version)
    return Connection(client_id=client.client_id, client_addr=client.peer, language=language,
                      version=PROTOCOL_VERSION if version is None else version)


def subscription(entry: pb.SubscriptionEntry) -> SubscriptionData:
    if entry.expression.type == pb.SQL:
        return SubscriptionData(topic=entry.topic.name, sub_string=entry.expression.expression, expression_type="SQL92")
    return parse_subscription(entry.topic.name, entry.expression.expression or "*")


def consumer_connection(clients: list[GrpcClient]) -> ConsumerConnection:
    """A group's members on this proxy as GET_CONSUMER_CONNECTION_LIST's body."""
    table: dict[str, SubscriptionData] = {}
    consume_type = None
    for client in clients:
        assert client.settings is not None
        consume_type = consume_type or CONSUME_TYPES.get(client.settings.client_type)
        for entry in client.settings.subscription.subscriptions:
            table[entry.topic.name] = subscription(entry)
    return ConsumerConnection(connection_set=[connection(c) for c in clients], subscription_table=table,
                              consume_type=consume_type, message_model="CLUSTERING",
                              consume_from_where="CONSUME_FROM_LAST_OFFSET")


class ProxyRemoting:
    """The remoting port of `mq proxy start` (cluster mode)."""

    def __init__(self, clients: Clients, host: str, port: int) -> None:
        self.clients = clients
        self.server = RemotingServer(host, port)
        self.server.register(RequestCode.GET_CONSUMER_CONNECTION_LIST, self.get_consumer_connection_list)
        self.server.register(RequestCode.GET_PRODUCER_CONNECTION_LIST, self.get_producer_connection_list)

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self) -> None:
        await self.server.start()

    async def shutdown(self) -> None:
        await self.server.shutdown()

    def get_consumer_connection_list(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        group = req.ext_fields.get("consumerGroup", "")
        members = self.clients.consumers_of(group)
        if not members:
            return req.response(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
        return req.response(ResponseCode.SUCCESS, body=consumer_connection(members).to_json())

    def get_producer_connection_list(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        topic = req.ext_fields.get("producerGroup", "")
        members = [c for c in self.clients.all() if topic in c.publishing_topics]
        if not members:
            return req.response(ResponseCode.SYSTEM_ERROR, f"the producer group[{topic}] not exist")
        return req.response(ResponseCode.SUCCESS,
                            body=ProducerConnection(connection_set=[connection(c) for c in members]).to_json())
