"""The proxy's ACL 2.0 authorization without a cluster: what each gRPC request asks (Apache's
DefaultAuthorizationContextBuilder), the decision over the signed user's rules with Apache's refusals, the ACL
cache, and the keys of rmq-proxy.json."""

from __future__ import annotations

import asyncio

import pytest
from support.proxyauth import FakeAuthenticator, headers

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
from mqtools.common.auth.model import Acl, Action, ResourceType
from mqtools.proxy.auth import AuthenticationRefused
from mqtools.proxy.authorize import Authorizer, access_requests
from mqtools.proxy.config import ProxyConfig
from mqtools.proxy.errors import Code
from mqtools.remoting.auth_bodies import AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo, acl_of


def send(topic: str) -> spb.SendMessageRequest:
    return spb.SendMessageRequest(messages=[pb.Message(topic=pb.Resource(name=topic))])


def receive(group: str, topic: str) -> spb.ReceiveMessageRequest:
    return spb.ReceiveMessageRequest(group=pb.Resource(name=group),
                                     message_queue=pb.MessageQueue(topic=pb.Resource(name=topic)))


def asked(request: object) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(a.resource.type.label, a.resource.name or "", tuple(x.label for x in a.actions))
            for a in access_requests(request, "u", "10.0.0.1")]  # type: ignore[arg-type]


def test_what_each_request_asks() -> None:
    assert asked(send("T")) == [("Topic", "T", ("Pub",))]
    assert asked(spb.EndTransactionRequest(topic=pb.Resource(name="T"))) == [("Topic", "T", ("Pub",))]
    assert asked(receive("G", "T")) == [("Group", "G", ("Sub",)), ("Topic", "T", ("Sub",))]
    assert asked(spb.AckMessageRequest(group=pb.Resource(name="G"), topic=pb.Resource(name="T"))) == [
        ("Group", "G", ("Sub",)), ("Topic", "T", ("Sub",))]
    assert asked(spb.ChangeInvisibleDurationRequest(group=pb.Resource(name="G"))) == [("Group", "G", ("Sub",))]
    assert asked(spb.QueryRouteRequest(topic=pb.Resource(name="T"))) == [("Topic", "T", ("Pub", "Sub"))]
    assert asked(spb.HeartbeatRequest(group=pb.Resource(name="G"), client_type=pb.PRODUCER)) == []
    assert asked(spb.HeartbeatRequest(group=pb.Resource(name="G"), client_type=pb.SIMPLE_CONSUMER)) == [
        ("Group", "G", ("Sub",))]
    assert asked(spb.NotifyClientTerminationRequest()) == []
    publishing = spb.TelemetryCommand(settings=pb.Settings(publishing=pb.Publishing(
        topics=[pb.Resource(name="A"), pb.Resource(name="B")])))
    assert asked(publishing) == [("Topic", "A", ("Pub",)), ("Topic", "B", ("Pub",))]
    subscribing = spb.TelemetryCommand(settings=pb.Settings(subscription=pb.Subscription(
        group=pb.Resource(name="G"), subscriptions=[pb.SubscriptionEntry(topic=pb.Resource(name="T"))])))
    assert asked(subscribing) == [("Group", "G", ("Sub",)), ("Topic", "T", ("Sub",))]
    for bad, message in ((spb.SendMessageRequest(), "message is null."),
                         (spb.ReceiveMessageRequest(group=pb.Resource(name="G")), "messageQueue is null."),
                         (spb.QueryRouteRequest(), "topic is null.")):
        with pytest.raises(AuthenticationRefused, match=f"^{message}$"):
            access_requests(bad, "u", None)
    assert all(a.resource.type in (ResourceType.TOPIC, ResourceType.GROUP) for a in access_requests(
        receive("G", "T"), "u", None))


class FakeAuthorizer(Authorizer):
    def __init__(self, acls: dict[str, Acl], clock: list[float], **kw: object) -> None:
        users = {"app1": UserInfo("app1", "pw", "Normal", "enable"), "root": UserInfo("root", "pw", "Super", "enable"),
                 "bare": UserInfo("bare", "pw", "Normal", "enable")}
        super().__init__(FakeAuthenticator(users, clock), clock=lambda: clock[0], **kw)  # type: ignore[arg-type]
        self.acls = acls
        self.loads: list[str] = []

    async def _load(self, subject: str) -> Acl | None:
        self.loads.append(subject)
        return self.acls.get(subject)


def rule(resource: str, actions: list[str], decision: str) -> Acl:
    return acl_of(AclInfo("User:app1", [PolicyInfo("Custom", [PolicyEntryInfo(resource, actions, None, decision)])]),
                  "User:app1")


def test_decisions_with_apaches_refusals_and_the_acl_cache() -> None:
    clock = [0.0]
    acl = rule("Topic:ord*", ["Pub"], "Allow")
    acl.policies[0].entries.append(acl_of(AclInfo("User:app1", [PolicyInfo("Custom", [
        PolicyEntryInfo("Topic:orders_secret", ["Pub"], None, "Deny")])]), "User:app1").policies[0].entries[0])
    auth = FakeAuthorizer({"User:app1": acl}, clock, ttl=60.0,
                          whitelist=frozenset({"apache.rocketmq.v2.QueryRouteRequest"}))

    async def run() -> None:
        await auth.authorize(headers("app1", "pw"), send("orders"), "10.0.0.1")
        await auth.authorize(headers("root", "pw"), send("anything"), "10.0.0.1")  # Super
        for who, request, message in (
                ("app1", send("orders_secret"),
                 "User:app1 has no permission to access Topic:orders_secret from 10.0.0.1, the decision is deny."),
                ("app1", send("audit"),
                 "User:app1 has no permission to access Topic:audit from 10.0.0.1, no matched policies."),
                ("app1", receive("G", "orders"),
                 "User:app1 has no permission to access Group:G from 10.0.0.1, no matched policies."),
                ("bare", send("orders"),
                 "User:bare has no permission to access Topic:orders from 10.0.0.1, no matched policies.")):
            with pytest.raises(AuthenticationRefused) as refused:
                await auth.authorize(headers(who, "pw"), request, "10.0.0.1")
            assert (refused.value.code, refused.value.message) == (Code.UNAUTHORIZED, message)
        await auth.authorize({}, spb.QueryRouteRequest(topic=pb.Resource(name="T")), None)  # whitelisted
        assert auth.loads.count("User:app1") == 1  # cached
        clock[0] = 61.0
        await auth.authorize(headers("app1", "pw"), send("orders"), "10.0.0.1")
        assert auth.loads.count("User:app1") == 2

    asyncio.run(run())
    assert Action.PUB.label == "Pub"


def test_authorization_keys_of_the_config_file() -> None:
    config = ProxyConfig(namesrv_addr="127.0.0.1:9876")
    config.apply({"authorizationEnabled": "true", "aclCacheRefreshSecond": 5,
                  "authorizationWhitelist": "apache.rocketmq.v2.QueryRouteRequest"})
    assert config.authorization_enabled and config.acl_cache_refresh_second == 5
    assert config.authorization_whitelist == "apache.rocketmq.v2.QueryRouteRequest"
