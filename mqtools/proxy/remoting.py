"""The proxy's remoting port (remotingListenPort, Apache's RemotingProtocolServer): what an operator's tools ask a
proxy about its gRPC clients.

The brokers never see a proxy's gRPC consumers (they POP through the proxy's own client), so a group served only
by gRPC clients is "not online" to every broker; the proxy is the one place that knows them. As Apache's proxy,
this port answers GET_CONSUMER_CONNECTION_LIST for a group from the clients' settings (consume type
CONSUME_PASSIVELY for a PushConsumer, CONSUME_ACTIVELY for a SimpleConsumer, clustering, from the last offset,
the subscriptions they reported), and CONSUMER_NOT_ONLINE for a group no client of this proxy is in.

With authenticationEnabled a request must be signed (AccessKey and Signature, as every 5.x remoting client
signs) by an enabled user of the brokers; with authorizationEnabled the user needs Get on the group (a consumer
group's connections) or on the cluster (producers), the rules of Apache's broker for these codes. A refusal is
NO_PERMISSION with Apache's text; without the checks the port tells anyone who is connected.

Beyond Apache: GET_PRODUCER_CONNECTION_LIST with the topic as the producer group (a gRPC producer's group is
its topic, as Apache's proxy registers it); Apache's proxy answers REQUEST_CODE_NOT_SUPPORTED. A client's
version is its own (`5.0.8` -> V5_0_8), where Apache's proxy reports its own version for every client whose
version string is not an enum name. Every other code is REQUEST_CODE_NOT_SUPPORTED: the proxy does not relay
remoting clients to the brokers.
"""

from __future__ import annotations

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.client.subscription import parse_subscription, subscription_version
from mqtools.common.auth.model import Action, Resource
from mqtools.common.auth.policy import AccessRequest, AuthError, authenticate, authorize
from mqtools.common.auth.signature import SignedRequest
from mqtools.common.mqversion import version_ordinal
from mqtools.common.tls_certificates import TlsCertificateManager
from mqtools.proxy.auth import Authenticator
from mqtools.proxy.authorize import Authorizer
from mqtools.proxy.clients import Clients, GrpcClient
from mqtools.proxy.errors import ProxyError
from mqtools.remoting.auth_bodies import user_of
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
        return SubscriptionData(topic=entry.topic.name, sub_string=entry.expression.expression, expression_type="SQL92",
                                sub_version=subscription_version())
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
    """The remoting port of `mq proxy start` (cluster mode); `authenticator`/`authorizer` when the proxy checks
    users (authenticationEnabled, authorizationEnabled); `cluster` names Cluster resources."""

    def __init__(self, clients: Clients, host: str, port: int, *, authenticator: Authenticator | None = None,
                 authorizer: Authorizer | None = None, cluster: str = "", tls: TlsCertificateManager | None = None) -> None:
        self.clients = clients
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.cluster = cluster
        self.server = RemotingServer(host, port, tls=tls)
        self.server.register(RequestCode.GET_CONSUMER_CONNECTION_LIST, self.get_consumer_connection_list)
        self.server.register(RequestCode.GET_PRODUCER_CONNECTION_LIST, self.get_producer_connection_list)

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self) -> None:
        await self.server.start()

    async def shutdown(self) -> None:
        await self.server.shutdown()

    async def refusal(self, conn: RemotingConnection, req: RemotingCommand, resource: Resource, action: Action
                      ) -> RemotingCommand | None:
        """NO_PERMISSION unless the request passes the checks the proxy runs; None when it does."""
        if self.authenticator is None and self.authorizer is None:
            return None
        signed = SignedRequest.of(req.ext_fields, req.body, req.version)
        try:
            info = await self.authenticator_of().user(signed.username) if signed.username else None
            user = user_of(info) if info is not None else None
            if self.authenticator is not None:
                authenticate(signed, user)
            if self.authorizer is not None:
                acl = await self.authorizer.acl(f"User:{signed.username}") if user is not None else None
                ask = AccessRequest(signed.username, resource, (action,), conn.peer.rpartition(":")[0] or None)
                authorize(ask, lambda _name: user, lambda _subject: acl)
        except AuthError as exc:
            return req.response(ResponseCode.NO_PERMISSION, str(exc))
        except ProxyError as exc:  # the users could not be read from the brokers
            return req.response(ResponseCode.SYSTEM_ERROR, exc.message)
        return None

    def authenticator_of(self) -> Authenticator:
        checker = self.authenticator or (self.authorizer.authenticator if self.authorizer else None)
        assert checker is not None
        return checker

    async def get_consumer_connection_list(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        group = req.ext_fields.get("consumerGroup", "")
        refused = await self.refusal(conn, req, Resource.group(group), Action.GET)
        if refused is not None:
            return refused
        members = self.clients.consumers_of(group)
        if not members:
            return req.response(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
        return req.response(ResponseCode.SUCCESS, body=consumer_connection(members).to_json())

    async def get_producer_connection_list(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        topic = req.ext_fields.get("producerGroup", "")
        refused = await self.refusal(conn, req, Resource.cluster(self.cluster), Action.GET)
        if refused is not None:
            return refused
        members = [c for c in self.clients.all() if topic in c.publishing_topics]
        if not members:
            return req.response(ResponseCode.SYSTEM_ERROR, f"the producer group[{topic}] not exist")
        return req.response(ResponseCode.SUCCESS,
                            body=ProducerConnection(connection_set=[connection(c) for c in members]).to_json())
