"""The proxy's remoting answers about its gRPC clients, built from the clients' settings (no sockets)."""

from __future__ import annotations

import asyncio
from typing import Any

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.common.auth.model import Acl
from mqtools.common.mqversion import version_desc
from mqtools.common.security import SessionCredentials
from mqtools.proxy.clients import Clients
from mqtools.proxy.remoting import ProxyRemoting, connection, consumer_connection
from mqtools.remoting.acl import sign
from mqtools.remoting.auth_bodies import AclInfo, UserInfo, acl_of
from mqtools.remoting.bodies import ConsumerConnection, ProducerConnection
from mqtools.remoting.codes import PROTOCOL_VERSION, RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand


class Peer:
    peer = "10.0.0.9:4000"


def settings_consumer(group: str, kind: int, **subs: tuple[int, str]) -> pb.Settings:
    entries = [pb.SubscriptionEntry(topic=pb.Resource(name=t), expression=pb.FilterExpression(type=ft, expression=e))
               for t, (ft, e) in subs.items()]
    return pb.Settings(client_type=kind, subscription=pb.Subscription(group=pb.Resource(name=group),
                                                                      subscriptions=entries))


def clients() -> Clients:
    out = Clients(clock_ms=lambda: 1000)
    push = out.touch("push-1", language="JAVA", version="5.0.8", peer="10.0.0.1:5000")
    push.settings = settings_consumer("G", pb.PUSH_CONSUMER, Orders=(pb.TAG, "TagA || TagB"), Audit=(pb.SQL, "a > 1"))
    simple = out.touch("simple-1", language="GOLANG", version="weird", peer="10.0.0.2:5000")
    simple.settings = settings_consumer("H", pb.SIMPLE_CONSUMER, Orders=(pb.TAG, "*"))
    producer = out.touch("prod-1", language="PYTHON", version="5.1.2", peer="10.0.0.3:5000")
    producer.settings = pb.Settings(client_type=pb.PRODUCER,
                                    publishing=pb.Publishing(topics=[pb.Resource(name="Orders")]))
    return out


def test_a_group_reads_as_apaches_proxy_reports_it() -> None:
    body = consumer_connection(clients().consumers_of("G"))
    assert (body.consume_type, body.message_model, body.consume_from_where) == (
        "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET")
    (conn,) = body.connection_set
    assert (conn.client_id, conn.client_addr, conn.language) == ("push-1", "10.0.0.1:5000", "JAVA")
    assert body.subscription_table["Orders"].tags_set == {"TagA", "TagB"}
    assert (body.subscription_table["Audit"].expression_type, body.subscription_table["Audit"].sub_string) == (
        "SQL92", "a > 1")
    again = ConsumerConnection.from_json(body.to_json())
    assert again.connection_set[0].client_id == "push-1"


def test_languages_and_versions_rocketmq_has_no_name_for() -> None:
    c = clients()
    odd = connection(c.get("simple-1"))  # type: ignore[arg-type]
    assert (odd.language, odd.version) == ("OTHER", PROTOCOL_VERSION)
    assert version_desc(connection(c.get("push-1")).version) == "V5_0_8"  # type: ignore[arg-type]


def test_the_port_answers_consumers_producers_and_not_online() -> None:
    port = ProxyRemoting(clients(), "127.0.0.1", 0)

    def ask(code: int, **ext: str) -> RemotingCommand:
        return asyncio.run(port.server.processors[code](Peer(), RemotingCommand.request(code, ext)))  # type: ignore[arg-type]

    simple = ask(RequestCode.GET_CONSUMER_CONNECTION_LIST, consumerGroup="H")
    assert ConsumerConnection.from_json(simple.body).consume_type == "CONSUME_ACTIVELY"  # type: ignore[arg-type]
    gone = ask(RequestCode.GET_CONSUMER_CONNECTION_LIST, consumerGroup="Nobody")
    assert (gone.code, gone.remark) == (ResponseCode.CONSUMER_NOT_ONLINE, "the consumer group[Nobody] not online")
    produced = ask(RequestCode.GET_PRODUCER_CONNECTION_LIST, producerGroup="Orders")
    assert [c.client_id for c in ProducerConnection.from_json(produced.body).connection_set] == ["prod-1"]  # type: ignore[arg-type]
    assert ask(RequestCode.GET_PRODUCER_CONNECTION_LIST, producerGroup="Other").code == ResponseCode.SYSTEM_ERROR


class Users:
    """The Authenticator's user lookup, from a table (the brokers' AUTH_GET_USER answers)."""

    def __init__(self, **users: UserInfo) -> None:
        self.users = users

    async def user(self, name: str) -> UserInfo | None:
        return self.users.get(name)


class Acls:
    def __init__(self, authenticator: Users, acls: dict[str, Acl]) -> None:
        self.authenticator = authenticator
        self.acls = acls

    async def acl(self, subject: str) -> Acl | None:
        return self.acls.get(subject)


def signed(code: int, user: str, password: str, **ext: str) -> RemotingCommand:
    req = RemotingCommand.request(code, ext)
    sign(req, SessionCredentials(user, password))
    return req


def test_with_authentication_and_authorization_on_only_a_user_with_get_on_the_group_reads_it() -> None:
    users = Users(alice=UserInfo("alice", "pw-a", "Normal", "enable"), bob=UserInfo("bob", "pw-b", "Normal", "enable"),
                  root=UserInfo("root", "pw-r", "Super", "enable"))
    acls = {"User:alice": acl_of(AclInfo.from_json(b'{"subject":"User:alice","policies":[{"policyType":"Custom",'
                                                   b'"entries":[{"resource":"Group:G","actions":["Get"],'
                                                   b'"decision":"Allow"}]}]}'), "User:alice")}
    port = ProxyRemoting(clients(), "127.0.0.1", 0, authenticator=users, authorizer=Acls(users, acls),  # type: ignore[arg-type]
                         cluster="C")
    handler: Any = port.server.processors[RequestCode.GET_CONSUMER_CONNECTION_LIST]

    def answer(req: RemotingCommand) -> tuple[int, str | None]:
        resp = asyncio.run(handler(Peer(), req))
        return resp.code, resp.remark

    code = RequestCode.GET_CONSUMER_CONNECTION_LIST
    assert answer(signed(code, "alice", "pw-a", consumerGroup="G"))[0] == ResponseCode.SUCCESS
    assert answer(signed(code, "root", "pw-r", consumerGroup="H"))[0] == ResponseCode.SUCCESS  # a super user
    assert answer(RemotingCommand.request(code, {"consumerGroup": "G"})) == (ResponseCode.NO_PERMISSION,
                                                                              "username cannot be null.")
    assert answer(signed(code, "alice", "wrong", consumerGroup="G")) == (ResponseCode.NO_PERMISSION,
                                                                         "check signature failed.")
    refused = answer(signed(code, "bob", "pw-b", consumerGroup="G"))
    assert refused[0] == ResponseCode.NO_PERMISSION and "no matched policies" in (refused[1] or "")
    produced = asyncio.run(port.server.processors[RequestCode.GET_PRODUCER_CONNECTION_LIST](
        Peer(), signed(RequestCode.GET_PRODUCER_CONNECTION_LIST, "alice", "pw-a", producerGroup="Orders")))  # type: ignore[arg-type]
    assert produced.code == ResponseCode.NO_PERMISSION  # producers need Get on the cluster
