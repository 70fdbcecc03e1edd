"""What the proxy's caches answer while the cluster is partly down, as Apache's (refreshAfterWrite, a failed reload
keeping the old value): a group's policy and a topic's type whose reload fails or hangs stay the last ones read, not
the defaults; a user whose reload fails stays cached; and users are read from a broker of a cached route, so calls
go on with every name server down. The cluster is faked at ClientInstance.invoke."""

from __future__ import annotations

import asyncio

import pytest
from support.proxyauth import headers

from mqtools.client.errors import ConnectFailedError, RequestTimeoutError
from mqtools.client.instance import ClientInstance
from mqtools.client.route import TopicRoute
from mqtools.proxy.auth import Authenticator
from mqtools.proxy.errors import Code, ProxyError
from mqtools.proxy.metadata import Metadata
from mqtools.proxy.route import MIXED
from mqtools.proxy.settings import GroupPolicy
from mqtools.remoting.auth_bodies import UserInfo
from mqtools.remoting.bodies import BrokerData, QueueData, SubscriptionGroupConfig, TopicRouteData
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand

BROKER = "10.0.0.1:10911"
FIFO_TOPIC = b'{"topicName":"T","attributes":{"message.type":"FIFO"}}'
RPC = "apache.rocketmq.v2.SendMessageRequest"


class _Brokers(ClientInstance):
    """Brokers answering with `bodies[request code]`, or, by `mode`, timing out ("down") or never answering ("hung");
    the name servers refuse connections."""

    def __init__(self, bodies: dict[int, bytes]) -> None:
        super().__init__(["127.0.0.1:9876"])
        self.bodies = bodies
        self.mode = "up"
        self.asked: list[tuple[str | None, int]] = []

    async def invoke(self, addr, cmd, timeout=None, *, ok=(0,)):  # type: ignore[no-untyped-def]
        self.asked.append((addr, int(cmd.code)))
        if addr is None:
            raise ConnectFailedError("connect to 127.0.0.1:9876 failed: [Errno 111] Connection refused")
        if self.mode == "down":
            raise RequestTimeoutError(f"no answer from {addr} in 3s")
        if self.mode == "hung":
            await asyncio.Event().wait()
        resp = RemotingCommand.request(0, body=self.bodies[int(cmd.code)])
        resp.code = 0
        return resp


def _group(orderly: bool, retries: int) -> bytes:
    return SubscriptionGroupConfig("G", consume_message_orderly=orderly, retry_max_times=retries).to_json()


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


@pytest.mark.parametrize("mode", ["down", "hung"])
async def test_a_group_policy_whose_reload_fails_is_the_last_one_read_and_read_again_later(mode: str) -> None:
    """An orderly group stays orderly past the cache's time while its broker is down or hung, and the call does not
    wait for the reload; once the broker answers again, its new config is read."""
    clock = [0.0]
    brokers = _Brokers({RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: _group(True, 2)})
    metadata = Metadata(brokers, clock=lambda: clock[0])
    assert await metadata.group_policy("G", [BROKER]) == GroupPolicy(True, 2)
    clock[0] = 21.0
    brokers.mode = mode
    for _ in range(3):
        assert await asyncio.wait_for(metadata.group_policy("G", [BROKER]), 0.5) == GroupPolicy(True, 2)
        await _settle()
    brokers.mode = "up"
    brokers.bodies[RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG] = _group(False, 5)
    if mode == "down":  # a failed reload is tried again at the next call (a hung one is still in flight)
        assert await metadata.group_policy("G", [BROKER]) == GroupPolicy(True, 2)
        await _settle()
        assert await metadata.group_policy("G", [BROKER]) == GroupPolicy(False, 5)


async def test_a_topic_type_whose_reload_fails_is_the_last_one_read() -> None:
    clock = [0.0]
    brokers = _Brokers({RequestCode.GET_TOPIC_CONFIG: FIFO_TOPIC})
    metadata = Metadata(brokers, clock=lambda: clock[0])
    assert await metadata.topic_message_type("T", [BROKER]) == "FIFO"
    clock[0] = 21.0
    brokers.mode = "down"
    assert await metadata.topic_message_type("T", [BROKER]) == "FIFO"
    await _settle()
    assert await metadata.topic_message_type("T", [BROKER]) == "FIFO"


async def test_defaults_only_while_nothing_was_ever_read_and_not_kept_once_the_broker_answers() -> None:
    brokers = _Brokers({RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: _group(True, 2),
                        RequestCode.GET_TOPIC_CONFIG: FIFO_TOPIC})
    metadata = Metadata(brokers, clock=lambda: 0.0)
    brokers.mode = "down"
    assert await metadata.group_policy("G", [BROKER]) == GroupPolicy()
    assert await metadata.topic_message_type("T", [BROKER]) == MIXED
    brokers.mode = "up"
    assert await metadata.group_policy("G", [BROKER]) == GroupPolicy(True, 2)
    assert await metadata.topic_message_type("T", [BROKER]) == "FIFO"


class _Users(Authenticator):
    """Users loaded once, then every reload fails (the name servers or the brokers unreachable)."""

    def __init__(self, clock: list[float]) -> None:
        super().__init__(None, "C", ttl=60.0, clock=lambda: clock[0])  # type: ignore[arg-type]
        self.loads = 0

    async def _load(self, username: str) -> UserInfo | None:
        self.loads += 1
        if self.loads > 1:
            raise ProxyError(Code.INTERNAL_SERVER_ERROR, f"load user {username} failed: connect failed")
        return UserInfo(username, "pw", "Normal", "enable")


async def test_a_user_whose_reload_fails_is_still_the_cached_one_and_reloaded_at_each_call() -> None:
    clock = [0.0]
    users = _Users(clock)
    await users.authenticate(headers("app1", "pw"), RPC)
    clock[0] = 61.0
    await users.authenticate(headers("app1", "pw"), RPC)
    await users.authenticate(headers("app1", "pw"), RPC)
    assert users.loads == 3
    with pytest.raises(ProxyError, match="load user app2 failed"):  # nothing cached to fall back on
        await users.authenticate(headers("app2", "pw"), RPC)


async def test_users_are_read_from_a_broker_of_a_cached_route_with_every_name_server_down() -> None:
    """ClusterMetadataService.findOneBroker finds the broker in the topic route service's cache; only a proxy with
    no route of its cluster cached asks a name server (GET_BROKER_CLUSTER_INFO)."""
    brokers = _Brokers({RequestCode.AUTH_GET_USER: UserInfo("app1", "pw", "Normal", "enable").to_json()})
    brokers.routes["OtherClusterTopic"] = TopicRoute.build("OtherClusterTopic", TopicRouteData(
        [QueueData("broker-x", 4, 4, 6)], [BrokerData("X", "broker-x", {0: "10.0.0.9:10911"})]))
    brokers.routes["T"] = TopicRoute.build("T", TopicRouteData(
        [QueueData("broker-a", 4, 4, 6)], [BrokerData("C", "broker-a", {1: "10.0.0.2:10911", 0: BROKER})]))
    users = Authenticator(brokers, "C")
    await users.authenticate(headers("app1", "pw"), RPC)
    assert brokers.asked == [(BROKER, RequestCode.AUTH_GET_USER)]


async def test_close_ends_the_reloads_in_flight() -> None:
    """A reload of a hung broker was left pending at the proxy's shutdown, cancelled only with its loop."""
    clock = [0.0]
    brokers = _Brokers({RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: _group(True, 2)})
    metadata = Metadata(brokers, clock=lambda: clock[0])
    await metadata.group_policy("G", [BROKER])
    clock[0] = 21.0
    brokers.mode = "hung"
    await metadata.group_policy("G", [BROKER])
    (reload,) = metadata._refreshing.values()
    await asyncio.wait_for(metadata.close(), 1.0)
    assert reload.done() and not metadata._refreshing
