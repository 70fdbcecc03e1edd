"""REGISTER_BROKER with a large new body: decoded once, off the loop (through the processor's `offload`), while
the name server keeps answering; registrations and unregistrations of one broker still apply in order."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mqtools.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import BodyError
from mqtools.remoting.headers import RegisterBrokerRequestHeader, UnRegisterBrokerRequestHeader
from mqtools.server.namesrv.config import NamesrvConfig
from mqtools.server.namesrv.kv_config import KVConfigManager
from mqtools.server.namesrv.processor import OFF_LOOP_DECODE_BYTES, NamesrvProcessor
from mqtools.server.namesrv.route_info import RouteInfoManager

ADDR = "127.0.0.1:10911"


class GatedOffload:
    """An offload that runs each call only when the test releases it: what is under way is visible."""

    def __init__(self) -> None:
        self.calls = 0
        self.gate: asyncio.Future[None] | None = None

    async def __call__(self, fn: Callable[..., Any], *args: Any) -> Any:
        self.calls += 1
        self.gate = asyncio.get_running_loop().create_future()
        await self.gate
        return fn(*args)

    def release(self) -> None:
        assert self.gate is not None and not self.gate.done()
        self.gate.set_result(None)


@pytest.fixture
def offload() -> GatedOffload:
    return GatedOffload()


@pytest.fixture
def proc(tmp_path: Path, offload: GatedOffload) -> NamesrvProcessor:
    return NamesrvProcessor(NamesrvConfig(kv_config_path=str(tmp_path / "kv.json")), RouteInfoManager(),
                            KVConfigManager(tmp_path / "kv.json"), lambda: 5_000, offload=offload)


def register(topics: list[str], body: bytes | None = None) -> RemotingCommand:
    header = RegisterBrokerRequestHeader(broker_name="b1", broker_addr=ADDR, cluster_name="C", ha_server_addr=ADDR,
                                         broker_id=0)
    if body is None:
        wrapper = TopicConfigSerializeWrapper({t: TopicConfig(t, 8, 8) for t in topics}, DataVersion(1, len(topics)))
        body = RegisterBrokerBody(wrapper).to_json()
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext(), body)


def unregister() -> RemotingCommand:
    header = UnRegisterBrokerRequestHeader(broker_name="b1", broker_addr=ADDR, cluster_name="C", broker_id=0)
    return RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header.to_ext())


def routed(proc: NamesrvProcessor, topic: str) -> bool:
    resp = proc.get_route_info_by_topic(None, RemotingCommand.request(  # type: ignore[arg-type]
        RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
    assert isinstance(resp, RemotingCommand)  # answered inline, whatever is under way
    return resp.code == ResponseCode.SUCCESS


#: Enough topics that the body crosses OFF_LOOP_DECODE_BYTES.
MANY = [f"BigTopic{i:05d}" for i in range(2_000)]


def test_the_table_is_large_enough() -> None:
    assert len(register(MANY).body or b"") >= OFF_LOOP_DECODE_BYTES > len(register(["Small"]).body or b"")


async def test_a_small_body_registers_inline(proc: NamesrvProcessor, offload: GatedOffload) -> None:
    resp = proc.register_broker(None, register(["Small"]))  # type: ignore[arg-type]
    assert isinstance(resp, RemotingCommand) and resp.code == ResponseCode.SUCCESS
    assert routed(proc, "Small") and offload.calls == 0


async def test_a_large_new_body_is_decoded_off_the_loop_once_while_routes_are_answered(
        proc: NamesrvProcessor, offload: GatedOffload) -> None:
    assert proc.register_broker(None, register(["Small"])).code == ResponseCode.SUCCESS  # type: ignore[arg-type,union-attr]
    pending = asyncio.ensure_future(proc.register_broker(None, register(MANY)))  # type: ignore[arg-type]
    await asyncio.sleep(0)
    assert offload.calls == 1 and not pending.done()
    assert routed(proc, "Small") and not routed(proc, MANY[0])  # the old table still answers meanwhile
    offload.release()
    assert (await pending).code == ResponseCode.SUCCESS
    assert routed(proc, MANY[0]) and routed(proc, MANY[-1])
    again = proc.register_broker(None, register(MANY))  # type: ignore[arg-type]
    assert isinstance(again, RemotingCommand) and again.code == ResponseCode.SUCCESS and offload.calls == 1


async def test_what_comes_from_the_same_broker_meanwhile_applies_after_it(
        proc: NamesrvProcessor, offload: GatedOffload) -> None:
    first = asyncio.ensure_future(proc.register_broker(None, register(MANY)))  # type: ignore[arg-type]
    await asyncio.sleep(0)
    later = proc.register_broker(None, register(["Later"]))  # type: ignore[arg-type]
    assert not isinstance(later, RemotingCommand)  # it waits its turn: applied now, the big one would undo it
    second = asyncio.ensure_future(later)
    gone = asyncio.ensure_future(proc.unregister_broker(None, unregister()))  # type: ignore[arg-type]
    offload.release()
    assert (await first).code == ResponseCode.SUCCESS
    while offload.gate is None or offload.gate.done():  # the second body is new too: it is decoded off the loop
        await asyncio.sleep(0)
    assert routed(proc, MANY[0]) and not routed(proc, "Later")
    offload.release()
    assert (await second).code == ResponseCode.SUCCESS and (await gone).code == ResponseCode.SUCCESS
    assert not routed(proc, "Later") and not routed(proc, MANY[0])  # the unregistration came last
    assert not proc._pending
    resp = proc.register_broker(None, register(["Small"]))  # type: ignore[arg-type]
    assert isinstance(resp, RemotingCommand) and resp.code == ResponseCode.SUCCESS


async def test_a_bad_large_body_fails_alone(proc: NamesrvProcessor, offload: GatedOffload) -> None:
    bad = asyncio.ensure_future(proc.register_broker(None, register([], b"[" * OFF_LOOP_DECODE_BYTES)))  # type: ignore[arg-type]
    await asyncio.sleep(0)
    offload.release()
    with pytest.raises(BodyError):
        await bad
    resp = proc.register_broker(None, register(["Small"]))  # type: ignore[arg-type]
    assert isinstance(resp, RemotingCommand) and routed(proc, "Small")


class Conn:
    """What the processor asks of a broker's connection here: whether it is still open."""

    def __init__(self) -> None:
        self.is_open = True
        self.peer = ADDR


async def test_a_registration_whose_connection_closed_while_decoding_is_not_applied(
        proc: NamesrvProcessor, offload: GatedOffload) -> None:
    conn = Conn()
    pending = asyncio.ensure_future(proc.register_broker(conn, register(MANY)))  # type: ignore[arg-type]
    await asyncio.sleep(0)
    conn.is_open = False  # the close hook has dropped the broker already; applying now would bring it back
    offload.release()
    assert (await pending).code == ResponseCode.SYSTEM_ERROR
    assert not routed(proc, MANY[0])
    assert not proc._bodies  # nor is its body kept: the broker is not live, nothing would ever drop it
