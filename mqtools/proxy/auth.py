"""ACL 2.0 authentication of gRPC calls, as Apache's proxy does it (AuthenticationPipeline in cluster mode).

A 5.x client signs every call: `x-mq-date-time` is the content, `authorization` is
`MQv2-HMAC-SHA1 Credential=<user>[/...], SignedHeaders=x-mq-date-time, Signature=<hex HMAC-SHA1>`, keyed with
the user's password. The user is read from one broker of the proxy's cluster (AUTH_GET_USER, as Apache's
ClusterMetadataService does) and cached, so a flood of calls costs one broker request per user and TTL. Every
refusal is a `ProxyError(UNAUTHORIZED, <Apache's message>)`: ResponseBuilder answers an AuthenticationException
with Code.UNAUTHORIZED and the exception's text.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from mqtools.client.errors import MQClientError
from mqtools.client.instance import ClientInstance
from mqtools.proxy.errors import Code, ProxyError
from mqtools.remoting.auth_bodies import UserInfo
from mqtools.remoting.bodies import BrokerData, ClusterInfo
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand

AUTHORIZATION = "authorization"
DATE_TIME = "x-mq-date-time"
V = TypeVar("V")


class AuthenticationRefused(ProxyError):
    """An AuthenticationException of Apache's: the client sees UNAUTHORIZED with this text."""

    def __init__(self, message: str) -> None:
        super().__init__(Code.UNAUTHORIZED, message)


@dataclass(frozen=True, slots=True)
class SignedCall:
    """What DefaultAuthenticationContextBuilder reads from a call's headers."""

    username: str | None
    signature: str | None
    """base64 of the client's HMAC (Apache turns the hex into base64 before comparing)."""
    content: bytes


def signed_call(headers: Mapping[str, str]) -> SignedCall:
    """Parse the headers; a call without `authorization` has no user (refused later: username cannot be null)."""
    authorization = headers.get(AUTHORIZATION, "")
    if not authorization:
        return SignedCall(None, None, b"")
    date_time = headers.get(DATE_TIME, "")
    if not date_time:
        raise AuthenticationRefused("datetime is null.")
    parts = authorization.split(" ", 1)
    if len(parts) != 2:
        raise AuthenticationRefused("authentication header is incorrect.")
    username = signature = None
    for item in parts[1].split(","):
        kv = item.strip().split("=", 1)
        if len(kv) != 2:
            raise AuthenticationRefused(f"authentication keyValues length is incorrect, actual length={len(kv)}.")
        if kv[0] == "Credential":
            username = kv[1].split("/")[0]
        elif kv[0] == "Signature":
            try:
                signature = base64.b64encode(bytes.fromhex(kv[1])).decode()
            except ValueError:
                raise AuthenticationRefused("create authentication context error.") from None
    return SignedCall(username, signature, date_time.encode())


def signature_of(content: bytes, password: str) -> str:
    """AclSigner.calSignature: base64(HmacSHA1(password, content))."""
    return base64.b64encode(hmac.new(password.encode(), content, hashlib.sha1).digest()).decode()


def check(call: SignedCall, user: UserInfo | None) -> None:
    """DefaultAuthenticationHandler.doAuthenticate, for a user already looked up."""
    if user is None:
        raise AuthenticationRefused(f"User:{call.username} is not found.")
    if (user.user_status or "").lower() == "disable":
        raise AuthenticationRefused(f"User:{call.username} is disabled.")
    expected = signature_of(call.content, user.password or "")
    if call.signature is None or not hmac.compare_digest(expected.encode(), call.signature.encode()):
        raise AuthenticationRefused("check signature failed.")


class TtlCache(Generic[V]):
    """Answers by key, each kept `ttl` seconds (a None answer too, so a flood of unknown names costs one load
    each per ttl), at most `max_size` of them, the least recently used dropped first. A reload that fails (a
    ProxyError: no name server or broker answered) leaves the cached answer in use and is tried again at the next
    call, as Apache's loader returns the old value on an error; only a key never loaded fails the call."""

    def __init__(self, load: Callable[[str], Awaitable[V | None]], ttl: float, max_size: int,
                 clock: Callable[[], float]) -> None:
        self.load = load
        self.ttl = ttl
        self.max_size = max(1, max_size)
        self._clock = clock
        self.entries: OrderedDict[str, tuple[float, V | None]] = OrderedDict()

    async def get(self, key: str) -> V | None:
        hit = self.entries.get(key)
        if hit is not None and self._clock() - hit[0] < self.ttl:
            self.entries.move_to_end(key)
            return hit[1]
        try:
            found = await self.load(key)
        except ProxyError:
            if hit is None:
                raise
            self.entries.move_to_end(key)
            return hit[1]
        self.entries[key] = (self._clock(), found)
        self.entries.move_to_end(key)
        while len(self.entries) > self.max_size:
            self.entries.popitem(last=False)
        return found


class Authenticator:
    """The proxy's authentication: users read from the brokers of its cluster, kept `ttl` seconds."""

    def __init__(self, instance: ClientInstance, cluster: str, *, whitelist: frozenset[str] = frozenset(),
                 ttl: float = 60.0, max_users: int = 1000, clock: Callable[[], float] = time.monotonic) -> None:
        self.instance = instance
        self.cluster = cluster
        self.whitelist = whitelist
        self._users: TtlCache[UserInfo] = TtlCache(self._load, ttl, max_users, clock)

    async def authenticate(self, headers: Mapping[str, str], rpc: str) -> None:
        """Raise AuthenticationRefused unless the call is signed by an enabled user with its password.

        `rpc` is the request's full protobuf name, what authenticationWhitelist lists."""
        if rpc in self.whitelist:
            return
        call = signed_call(headers)
        if not call.username:
            raise AuthenticationRefused("username cannot be null.")
        check(call, await self.user(call.username))

    async def user(self, username: str) -> UserInfo | None:
        return await self._users.get(username)

    async def _load(self, username: str) -> UserInfo | None:
        """ClusterUserCacheLoader: AUTH_GET_USER to one broker of the cluster (its master when it has one)."""
        try:
            addr = await self.one_broker()
            if addr is None:
                return None
            resp = await self.instance.invoke(addr, RemotingCommand.request(RequestCode.AUTH_GET_USER,
                                                                            {"username": username}))
            return UserInfo.from_json(resp.body) if resp.body else None
        except (MQClientError, ValueError, binascii.Error) as exc:
            raise ProxyError(Code.INTERNAL_SERVER_ERROR, f"load user {username} failed: {exc}") from None

    async def one_broker(self) -> str | None:
        """A broker of the cluster (its master when it has one): from the routes the proxy has cached, as Apache's
        findOneBroker reads its route cache, so the name servers being down fails no call; else from the name
        servers (GET_BROKER_CLUSTER_INFO)."""
        cached = [bd for route in self.instance.routes.values() for bd in route.data.broker_datas
                  if bd.cluster == self.cluster]
        if cached:
            return _node_of(cached)
        resp = await self.instance.invoke(None, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
        info = ClusterInfo.from_json(resp.body or b"{}")
        return _node_of([info.broker_addr_table[name] for name in info.cluster_addr_table.get(self.cluster, ())
                         if name in info.broker_addr_table])


def _node_of(brokers: list[BrokerData]) -> str | None:
    """The master of the first broker by name that has a node, else that broker's first node."""
    for data in sorted(brokers, key=lambda bd: bd.broker_name):
        if data.broker_addrs:
            return data.broker_addrs.get(0) or next(iter(data.broker_addrs.values()))
    return None
