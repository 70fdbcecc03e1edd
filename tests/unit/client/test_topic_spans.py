"""MessageAdmin.topic_spans (what `msg print` and `msg consume` read) over a stand-in transport: a set whose master
does not answer is read from its slave, a set no replica answers for is named."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from mqtools.client.admin.client import MQAdmin
from mqtools.client.admin.models.messages import QueueSpan
from mqtools.client.errors import RequestTimeoutError
from mqtools.client.route import TopicRoute
from mqtools.remoting.bodies import BrokerData, MessageQueue, QueueData, TopicRouteData
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand

ROUTE = TopicRoute.build("T", TopicRouteData(
    queue_datas=[QueueData("broker-a", 1, 1), QueueData("broker-b", 1, 1)],
    broker_datas=[BrokerData("C", "broker-a", {0: "a:1", 1: "a-s:1"}), BrokerData("C", "broker-b", {0: "b:1"})]))


class Instance:
    """Queue offsets 2 to 9 from any node not in `hung`, which never answers."""

    def __init__(self, hung: set[str]) -> None:
        self.hung = hung
        self.namesrv_addrs = ["127.0.0.1:9"]

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float | None = None, *,
                     ok: Any = None) -> RemotingCommand:
        if addr in self.hung:
            raise RequestTimeoutError(f"request to {addr} timed out")
        offset = 2 if cmd.code == RequestCode.GET_MIN_OFFSET else 9
        return RemotingCommand(ResponseCode.SUCCESS, ext_fields={"offset": str(offset)})


def over(instance: Instance, read: Callable[[MQAdmin], Awaitable[Any]]) -> Any:
    """`read` of a real admin session whose requests go to `instance`, every topic routed as ROUTE."""
    async def run() -> Any:
        admin = MQAdmin("127.0.0.1:9")

        async def route(topic: str) -> TopicRoute:
            return ROUTE

        admin._route = route  # type: ignore[method-assign]
        admin.instance = instance  # type: ignore[assignment]
        return await read(admin)

    return asyncio.run(run())


def spans(*hung: str) -> Any:
    return over(Instance(set(hung)), lambda admin: admin.messages.topic_spans("T"))


def test_a_hung_master_is_read_from_its_slave_and_pulled_there() -> None:
    got = spans("a:1")
    assert got.spans == [QueueSpan(MessageQueue("T", "broker-a", 0), 2, 9, 1),
                         QueueSpan(MessageQueue("T", "broker-b", 0), 2, 9, 0)]
    assert got.unreachable == []


def test_a_set_no_replica_answers_for_is_named_and_left_out() -> None:
    got = spans("a:1", "a-s:1")
    assert got.spans == [QueueSpan(MessageQueue("T", "broker-b", 0), 2, 9, 0)]
    assert [(u.broker_name, u.addr, u.reason) for u in got.unreachable] == [
        ("broker-a", "a:1", "timed out; slave a-s:1: timed out")]


def test_a_dlq_over_a_hung_master_is_listed_from_its_slave_or_named() -> None:
    """`dlq list` read the DLQ's offsets of the master alone: a hung master failed it (exit 3). Here the slave answers
    an empty queue (offsets 2 to 2), so nothing is pulled; with no replica answering the set is named."""

    class Empty(Instance):
        async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float | None = None, *,
                         ok: Any = None) -> RemotingCommand:
            if addr in self.hung:
                raise RequestTimeoutError(f"request to {addr} timed out")
            return RemotingCommand(ResponseCode.SUCCESS, ext_fields={"offset": "2"})

    def dead(*hung: str) -> Any:
        return over(Empty(set(hung)), lambda admin: admin.dlq.dead_messages("g"))

    assert (dead("a:1").messages, dead("a:1").unreachable) == ([], [])
    assert [u.broker_name for u in dead("a:1", "a-s:1").unreachable] == ["broker-a"]
