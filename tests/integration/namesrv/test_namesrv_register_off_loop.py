"""A name server on loopback keeps answering GET_ROUTEINFO_BY_TOPIC while a broker's first registration of a
large topic table is decoded in its worker thread (held there by the test until the route has been answered)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from mqtools.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import RegisterBrokerRequestHeader
from mqtools.server.namesrv.app import NamesrvController
from mqtools.server.namesrv.config import NamesrvConfig
from mqtools.server.namesrv.processor import OFF_LOOP_DECODE_BYTES

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

TOPICS = [f"BigTopic{i:05d}" for i in range(10_000)]


def register(addr: str, topics: list[str]) -> RemotingCommand:
    header = RegisterBrokerRequestHeader(broker_name=f"b-{addr}", broker_addr=addr, cluster_name="C",
                                         ha_server_addr=addr, broker_id=0)
    wrapper = TopicConfigSerializeWrapper({t: TopicConfig(t, 8, 8) for t in topics}, DataVersion(1, 1))
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext(), RegisterBrokerBody(wrapper).to_json())


def route(topic: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})


@pytest.fixture
async def namesrv(tmp_path: Path) -> AsyncIterator[NamesrvController]:
    config = NamesrvConfig(listen_port=0, bind_address="127.0.0.1", kv_config_path=str(tmp_path / "kv.json"),
                           config_store_path=str(tmp_path / "namesrv.properties"))
    controller = NamesrvController(config)
    await controller.start()
    yield controller
    await controller.shutdown()


async def test_routes_are_answered_while_a_large_registration_is_decoded(namesrv: NamesrvController) -> None:
    entered, release = threading.Event(), threading.Event()
    real = namesrv.processor.offload

    async def held(fn: Callable[..., Any], *args: Any) -> Any:
        def run() -> Any:
            entered.set()
            release.wait(30)
            return fn(*args)
        return await real(run)

    namesrv.processor.offload = held
    ns = f"127.0.0.1:{namesrv.port}"
    client = RemotingClient()
    try:
        assert (await client.invoke(ns, register("127.0.0.1:10911", ["Small"]), 10)).code == ResponseCode.SUCCESS
        big = register("127.0.0.1:10921", TOPICS)
        assert len(big.body or b"") >= OFF_LOOP_DECODE_BYTES
        registering = asyncio.ensure_future(client.invoke(ns, big, 30))
        assert await asyncio.to_thread(entered.wait, 30)  # the decode is under way in the worker thread
        answer = await client.invoke(ns, route("Small"), 10)
        not_yet = await client.invoke(ns, route(TOPICS[0]), 10)
        assert not registering.done()
        assert answer.code == ResponseCode.SUCCESS and not_yet.code == ResponseCode.TOPIC_NOT_EXIST
        release.set()
        assert (await registering).code == ResponseCode.SUCCESS
        for topic in (TOPICS[0], TOPICS[-1]):
            assert (await client.invoke(ns, route(topic), 10)).code == ResponseCode.SUCCESS
    finally:
        release.set()
        await client.close()
