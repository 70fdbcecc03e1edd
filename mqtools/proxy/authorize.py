"""ACL 2.0 authorization of gRPC calls, as Apache's proxy does it (AuthorizationPipeline in cluster mode).

The brokers see the proxy's own (inner) user, so the client's rules are the proxy's to enforce: without this
step any authenticated user could publish to or consume from any topic through the proxy. What each call asks
is Apache's DefaultAuthorizationContextBuilder for gRPC (`access_requests`, sans-IO): a send, an end of
transaction: Pub on the topic; a receive, an ack, a dead-letter forward, an assignment query: Sub on the group
and on the topic; a consumer's heartbeat, a change of invisible duration, a termination: Sub on the group; a
route query: Pub or Sub on the topic; the telemetry settings: Pub on each topic published, Sub on the group and
each topic subscribed. The decision is mqtools.common.auth.policy's, over the user and its ACL read from one
broker of the cluster (AUTH_GET_USER, AUTH_GET_ACL) and cached. A refusal is UNAUTHORIZED with Apache's text
(ResponseBuilder answers an AuthorizationException like an AuthenticationException).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from google.protobuf.message import Message

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
from mqtools.client.errors import MQClientError
from mqtools.common.auth.model import Acl, Action, Resource
from mqtools.common.auth.policy import AccessRequest, AuthError, authorize
from mqtools.proxy.auth import AuthenticationRefused, Authenticator, TtlCache, signed_call
from mqtools.proxy.errors import Code, ProxyError
from mqtools.remoting.auth_bodies import AclInfo, acl_of, user_of
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand

CONSUMERS = (pb.PUSH_CONSUMER, pb.SIMPLE_CONSUMER, pb.PULL_CONSUMER)


def access_requests(request: Message, username: str | None, source_ip: str | None) -> list[AccessRequest]:
    """What `request` asks, one AccessRequest per resource; [] for a call that needs no authorization.
    AuthenticationRefused (Apache's AuthorizationException) for a call missing what it must name."""
    def ask(resource: Resource, *actions: Action) -> AccessRequest:
        return AccessRequest(username, resource, actions, source_ip)

    def sub(group: str, topic: str | None = None) -> list[AccessRequest]:
        out = [ask(Resource.group(group), Action.SUB)]
        return out + ([ask(Resource.topic(topic), Action.SUB)] if topic is not None else [])

    if isinstance(request, spb.SendMessageRequest):
        if not request.messages:
            raise AuthenticationRefused("message is null.")
        return [ask(Resource.topic(request.messages[0].topic.name), Action.PUB)]
    if isinstance(request, spb.EndTransactionRequest):
        return [ask(Resource.topic(request.topic.name), Action.PUB)]
    if isinstance(request, spb.HeartbeatRequest):
        return sub(request.group.name) if request.client_type in CONSUMERS else []
    if isinstance(request, spb.ReceiveMessageRequest):
        if not request.HasField("message_queue"):
            raise AuthenticationRefused("messageQueue is null.")
        return sub(request.group.name, request.message_queue.topic.name)
    if isinstance(request, (spb.AckMessageRequest, spb.ForwardMessageToDeadLetterQueueRequest,
                            spb.QueryAssignmentRequest)):
        return sub(request.group.name, request.topic.name)
    if isinstance(request, spb.NotifyClientTerminationRequest):
        return sub(request.group.name) if request.group.name.strip() else []
    if isinstance(request, spb.ChangeInvisibleDurationRequest):
        return sub(request.group.name)
    if isinstance(request, spb.QueryRouteRequest):
        if not request.topic.name.strip():
            raise AuthenticationRefused("topic is null.")
        return [ask(Resource.topic(request.topic.name), Action.PUB, Action.SUB)]
    if isinstance(request, spb.TelemetryCommand) and request.HasField("settings"):
        settings = request.settings
        if settings.HasField("publishing"):
            return [ask(Resource.topic(t.name), Action.PUB) for t in settings.publishing.topics]
        if settings.HasField("subscription"):
            return sub(settings.subscription.group.name) + [
                ask(Resource.topic(e.topic.name), Action.SUB) for e in settings.subscription.subscriptions]
    return []


class Authorizer:
    """The proxy's authorization: users (through the Authenticator's cache) and ACLs read from the brokers of
    its cluster, each ACL kept `ttl` seconds."""

    def __init__(self, authenticator: Authenticator, *, whitelist: frozenset[str] = frozenset(),
                 ttl: float = 60.0, max_acls: int = 1000, clock: Callable[[], float] = time.monotonic) -> None:
        self.authenticator = authenticator
        self.whitelist = whitelist
        self._acls: TtlCache[Acl] = TtlCache(self._load, ttl, max_acls, clock)

    async def authorize(self, headers: Mapping[str, str], request: Message, source_ip: str | None) -> None:
        """Raise AuthenticationRefused unless the signed user may do what `request` asks."""
        if request.DESCRIPTOR.full_name in self.whitelist:
            return
        username = signed_call(headers).username
        asks = access_requests(request, username, source_ip)
        if not asks:
            return
        info = await self.authenticator.user(username) if username else None
        user = user_of(info) if info is not None else None
        acl = await self.acl(f"User:{username}") if user is not None else None
        for ask in asks:
            try:
                authorize(ask, lambda _name: user, lambda _subject: acl)
            except AuthError as exc:
                raise AuthenticationRefused(str(exc)) from None

    async def acl(self, subject: str) -> Acl | None:
        return await self._acls.get(subject)

    async def _load(self, subject: str) -> Acl | None:
        """AUTH_GET_ACL to one broker of the cluster (its master when it has one), as for the users."""
        auth = self.authenticator
        try:
            addr = await auth.one_broker()
            if addr is None:
                return None
            resp = await auth.instance.invoke(addr, RemotingCommand.request(RequestCode.AUTH_GET_ACL,
                                                                            {"subject": subject}))
            return acl_of(AclInfo.from_json(resp.body), subject) if resp.body else None
        except (MQClientError, ValueError) as exc:
            raise ProxyError(Code.INTERNAL_SERVER_ERROR, f"load acl of {subject} failed: {exc}") from None
