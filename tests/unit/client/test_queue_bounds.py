"""QueueOffsetAdmin.queue_bounds against a stand-in admin: a broker no node of which answers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mqtools.client.admin.client import MQAdmin
from mqtools.client.admin.queue_offsets import QueueOffsetAdmin
from mqtools.client.errors import RequestTimeoutError, UnreachableError
from mqtools.client.route import TopicRoute
from mqtools.remoting.bodies import BrokerData, MessageQueue, QueueData, TopicRouteData
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand

ROUTE = TopicRoute.build("T", TopicRouteData(
    queue_datas=[QueueData("broker-a", 1, 1), QueueData("broker-b", 1, 1)],
    broker_datas=[BrokerData("C", "broker-a", {0: "a:10911"}), BrokerData("C", "broker-b", {0: "b:10911"})]))
HUNG_MASTER = TopicRoute.build("T", TopicRouteData(
    queue_datas=[QueueData("broker-a", 2, 2)],
    broker_datas=[BrokerData("C", "broker-a", {0: "a:10911", 1: "a-s:10911"})]))


class Instance:
    """Answers GET_MIN_OFFSET 0 and GET_MAX_OFFSET 5, but a node in `hung` never answers; counts the asks."""

    def __init__(self, hung: set[str]) -> None:
        self.hung = hung
        self.asked: list[str] = []
        self.namesrv_addrs = ["127.0.0.1:9"]

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float | None = None, *,
                     ok: Any = None) -> RemotingCommand:
        self.asked.append(addr)
        if addr in self.hung:
            raise RequestTimeoutError(f"request to {addr} timed out")
        offset = 0 if cmd.code == RequestCode.GET_MIN_OFFSET else 5
        return RemotingCommand(ResponseCode.SUCCESS, ext_fields={"offset": str(offset)})


def bounds(route: TopicRoute = ROUTE, hung: frozenset[str] = frozenset({"b:10911"}),
           **options: Any) -> tuple[dict[MessageQueue, tuple[int, int]], list[str]]:
    """queue_bounds through a real admin session whose requests go to a stand-in Instance."""
    instance = Instance(set(hung))

    async def run() -> dict[MessageQueue, tuple[int, int]]:
        admin = MQAdmin("127.0.0.1:9")

        async def topic_route(topic: str) -> TopicRoute:
            return route

        admin._route = topic_route  # type: ignore[method-assign]
        admin.instance = instance  # type: ignore[assignment]
        return await QueueOffsetAdmin(admin).queue_bounds("T", **options)

    return asyncio.run(run()), instance.asked


def test_a_broker_that_does_not_answer_fails_the_read() -> None:
    with pytest.raises(UnreachableError, match="no node of broker broker-b answered"):
        bounds()


def test_readable_only_leaves_its_queues_out() -> None:
    assert bounds(readable_only=True)[0] == {MessageQueue("T", "broker-a", 0): (0, 5)}


def test_a_hung_master_is_asked_once_then_its_slave() -> None:
    """Each queue's minimum and maximum of a set whose master does not answer come from its slave, and the
    session asks the master once, not once per request (every ask waited out a timeout: a plan over a hung
    master took two timeouts, where the session's other reads take one)."""
    found, asked = bounds(HUNG_MASTER, frozenset({"a:10911"}))
    assert found == {MessageQueue("T", "broker-a", 0): (0, 5), MessageQueue("T", "broker-a", 1): (0, 5)}
    assert asked.count("a:10911") <= 2  # the first ask of each queue may be in flight at once
    assert asked.count("a-s:10911") == 4
