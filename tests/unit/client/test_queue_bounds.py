"""QueueOffsetAdmin.queue_bounds against a stand-in admin: a broker no node of which answers."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from mqtools.client.admin.queue_offsets import QueueOffsetAdmin
from mqtools.client.errors import RequestTimeoutError, UnreachableError
from mqtools.client.route import TopicRoute
from mqtools.remoting.bodies import BrokerData, MessageQueue, QueueData, TopicRouteData
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand

ROUTE = TopicRoute.build("T", TopicRouteData(
    queue_datas=[QueueData("broker-a", 1, 1), QueueData("broker-b", 1, 1)],
    broker_datas=[BrokerData("C", "broker-a", {0: "a:10911"}), BrokerData("C", "broker-b", {0: "b:10911"})]))


class Instance:
    """Answers GET_MIN_OFFSET 0 and GET_MAX_OFFSET 5 from a:10911; b:10911 never answers."""

    async def invoke(self, addr: str, cmd: RemotingCommand) -> RemotingCommand:
        if addr == "b:10911":
            raise RequestTimeoutError(f"request to {addr} timed out")
        offset = 0 if cmd.code == RequestCode.GET_MIN_OFFSET else 5
        return RemotingCommand(ResponseCode.SUCCESS, ext_fields={"offset": str(offset)})


def bounds(**options: Any) -> dict[MessageQueue, tuple[int, int]]:
    async def route(topic: str) -> TopicRoute:
        return ROUTE

    admin = SimpleNamespace(_route=route, instance=Instance())
    return asyncio.run(QueueOffsetAdmin(admin).queue_bounds("T", **options))  # type: ignore[arg-type]


def test_a_broker_that_does_not_answer_fails_the_read() -> None:
    with pytest.raises(UnreachableError, match="no node of broker broker-b answered"):
        bounds()


def test_readable_only_leaves_its_queues_out() -> None:
    assert bounds(readable_only=True) == {MessageQueue("T", "broker-a", 0): (0, 5)}
