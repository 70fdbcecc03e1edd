"""The broker's REGISTER_BROKER body: encoded once per data version of the topic table (shared by every name
server and every periodic round), a large table encoded through the registrar's `offload` (a worker thread)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from mqtools.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper
from mqtools.remoting.client import RemotingClient
from mqtools.server.broker.registration import OFF_LOOP_ENCODE_TOPICS, BrokerIdentity, NamesrvRegistrar


class Table:
    """A topic table that changes as TopicConfigManager's does: a new data version per change."""

    def __init__(self, count: int) -> None:
        self.topics = {f"T{i:05d}": TopicConfig(f"T{i:05d}", 8, 8) for i in range(count)}
        self.version = DataVersion(1_700_000_000_000, 1)

    def add(self, name: str) -> None:
        self.topics[name] = TopicConfig(name, 4, 4)
        self.version = self.version.next(self.version.timestamp + 1)

    def wrapper(self) -> TopicConfigSerializeWrapper:
        return TopicConfigSerializeWrapper(dict(self.topics), self.version)


class GatedOffload:
    def __init__(self) -> None:
        self.calls = 0
        self.gate: asyncio.Future[None] | None = None
        self.fail = False

    async def __call__(self, fn: Callable[..., Any], *args: Any) -> Any:
        self.calls += 1
        self.gate = asyncio.get_running_loop().create_future()
        await self.gate
        if self.fail:
            raise OSError("no thread")
        return fn(*args)


def registrar(table: Table, offload: GatedOffload | None = None) -> NamesrvRegistrar:
    ident = BrokerIdentity("C", "b1", "127.0.0.1:10911", 0, "127.0.0.1:10912")
    return NamesrvRegistrar(RemotingClient(), lambda: ident, table.wrapper, offload=offload or GatedOffload())


async def settle() -> None:
    """Let every task that can run do so (the encode's task starts a turn after the call that made it)."""
    for _ in range(5):
        await asyncio.sleep(0)


def topics_of(body: bytes) -> set[str]:
    return set(RegisterBrokerBody.from_json(body).topic_config_serialize_wrapper.topic_config_table)


async def test_one_encode_per_data_version() -> None:
    table = Table(3)
    reg = registrar(table)
    first = await reg.body()
    assert await reg.body() is first and reg.encodes == 1  # another name server, the next periodic round
    table.add("New")
    second = await reg.body()
    assert reg.encodes == 2 and topics_of(second) == topics_of(first) | {"New"}


async def test_a_large_table_is_encoded_off_the_loop_once_for_all_name_servers() -> None:
    table, offload = Table(OFF_LOOP_ENCODE_TOPICS), GatedOffload()
    reg = registrar(table, offload)
    one, two = asyncio.ensure_future(reg.body()), asyncio.ensure_future(reg.body())
    await settle()
    assert offload.calls == 1 and not one.done() and not two.done()  # the loop runs while it is encoded
    assert offload.gate is not None
    offload.gate.set_result(None)
    assert await one is await two and reg.encodes == 1
    assert topics_of(await one) == set(table.topics)


async def test_a_failed_encode_is_tried_again_next_round() -> None:
    table, offload = Table(OFF_LOOP_ENCODE_TOPICS), GatedOffload()
    reg = registrar(table, offload)
    offload.fail = True
    failing = asyncio.ensure_future(reg.body())
    await settle()
    assert offload.gate is not None
    offload.gate.set_result(None)
    with pytest.raises(OSError):
        await failing
    offload.fail = False
    retry = asyncio.ensure_future(reg.body())
    await settle()
    assert offload.calls == 2
    offload.gate.set_result(None)
    assert topics_of(await retry) == set(table.topics)
