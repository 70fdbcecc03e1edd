"""Parked POPs and NOTIFICATIONs are bounded as in Apache: more than popPollingSize waiting under one topic, group
and queue id, or maxPopPollingSize in all, and the next is answered at once, a POP with POLLING_FULL, a NOTIFICATION
with pollingFull (clients that park and never come back once grew the broker without bound)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.inprocbroker import inproc_broker

from mqtools.remoting.bodies import TopicConfig
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.pop import (
    NotificationRequestHeader,
    NotificationResponseHeader,
    PopMessageRequestHeader,
)
from mqtools.server.broker.app import BrokerController

pytestmark = pytest.mark.timeout(60)

TOPIC, GROUP = "PollFull", "CG_POLL_FULL"
POLL_MS = 20_000  # longer than the test: what parks stays parked until the connection closes


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[tuple[BrokerController, RemotingClient]]:
    async with inproc_broker(tmp_path, {"popPollingSize": "1", "maxPopPollingSize": "3"}, broker_name="b1") as b:
        b[0].topics.update(TopicConfig(TOPIC, read_queue_nums=2, write_queue_nums=2))
        yield b


def pop(queue_id: int) -> RemotingCommand:
    h = PopMessageRequestHeader(GROUP, TOPIC, queue_id, 1, 60_000, POLL_MS, int(time.time() * 1000), 0)
    return RemotingCommand.request(RequestCode.POP_MESSAGE, h.to_ext())


def notification(queue_id: int) -> RemotingCommand:
    h = NotificationRequestHeader(GROUP, TOPIC, queue_id, POLL_MS, int(time.time() * 1000))
    return RemotingCommand.request(RequestCode.NOTIFICATION, h.to_ext())


async def test_parked_requests_are_bounded_per_queue_and_in_all(
        broker: tuple[BrokerController, RemotingClient]) -> None:
    controller, client = broker
    addr = controller.broker_addr
    parked: list[asyncio.Task[RemotingCommand]] = []

    async def parks(cmd: RemotingCommand) -> None:
        task = asyncio.ensure_future(client.invoke(addr, cmd, POLL_MS / 1000 + 5))
        parked.append(task)
        await asyncio.sleep(0.2)  # an answer would have come by now; a parked request has none
        assert not task.done(), task.result()

    async def answered(cmd: RemotingCommand) -> RemotingCommand:
        return await client.invoke(addr, cmd, 5)

    try:
        await parks(pop(0))
        await parks(pop(0))  # one waits under (topic, group, 0): more than popPollingSize only after this
        assert (await answered(pop(0))).code == ResponseCode.POLLING_FULL
        await parks(pop(1))  # three POPs wait in all: maxPopPollingSize
        assert (await answered(pop(-1))).code == ResponseCode.POLLING_FULL
        await parks(notification(0))  # NOTIFICATIONs are counted apart
        await parks(notification(0))
        full = await answered(notification(0))
        assert full.code == ResponseCode.SUCCESS
        assert NotificationResponseHeader.from_ext(full.ext_fields) == NotificationResponseHeader(False, True)
    finally:
        for task in parked:
            task.cancel()
        await asyncio.gather(*parked, return_exceptions=True)
