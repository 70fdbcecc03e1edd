"""Registration with every name server: body/CRC, independence from a dead server, unregister."""

from __future__ import annotations

import asyncio
import time

from support.ports import free_port

from mqtools.remoting.bodies import (
    DataVersion,
    KVTable,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.headers import RegisterBrokerRequestHeader, RegisterBrokerResponseHeader
from mqtools.remoting.server import RemotingServer
from mqtools.server.broker.registration import BrokerIdentity, NamesrvRegistrar, body_crc32


def dead_addr() -> str:
    """A port nothing listens on."""
    return f"127.0.0.1:{free_port()}"


async def start_fake_namesrv(seen: list) -> RemotingServer:
    server = RemotingServer("127.0.0.1", 0)

    def on_register(conn, req):
        header = RegisterBrokerRequestHeader.from_ext(req.ext_fields)
        assert header.body_crc32 == body_crc32(bytes(req.body))
        seen.append(("reg", header, RegisterBrokerBody.from_json(req.body)))
        ext = RegisterBrokerResponseHeader(master_addr="10.0.0.9:10911").to_ext()
        return req.response(ext_fields=ext, body=KVTable({"Ordered": "b1:4"}).to_json())

    def on_unregister(conn, req):
        seen.append(("unreg", req.ext_fields["brokerName"], None))
        return req.response()

    server.register(RequestCode.REGISTER_BROKER, on_register)
    server.register(RequestCode.UNREGISTER_BROKER, on_unregister)
    await server.start()
    return server


def identity() -> BrokerIdentity:
    return BrokerIdentity("C1", "b1", "127.0.0.1:10911", 0, "127.0.0.1:10912")


def wrapper() -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper({"T": TopicConfig("T", 4, 4)}, DataVersion(123, 7))


async def test_register_all_unaffected_by_dead_namesrv() -> None:
    seen: list = []
    server = await start_fake_namesrv(seen)
    client = RemotingClient([dead_addr(), f"127.0.0.1:{server.port}"], connect_timeout=5.0)
    results = []
    reg = NamesrvRegistrar(client, identity, wrapper, period_s=10, timeout_s=3, on_result=results.append)
    try:
        t0 = time.monotonic()
        out = await reg.register_all()
        assert time.monotonic() - t0 < 5.0
        ok = [r for r in out if r.ok]
        assert len(ok) == 1 and ok[0].master_addr == "10.0.0.9:10911" and ok[0].order_topics == {"Ordered"}
        assert next(r for r in out if not r.ok).error
        kind, header, body = seen[0]
        assert kind == "reg" and header.broker_name == "b1" and header.cluster_name == "C1"
        assert header.ha_server_addr == "127.0.0.1:10912"
        assert body.topic_config_serialize_wrapper.data_version.counter == 7
        assert "T" in body.topic_config_serialize_wrapper.topic_config_table
        await reg.unregister_all(timeout_s=2)
        assert seen[-1] == ("unreg", "b1", None)
    finally:
        await client.close()
        await server.shutdown()


async def test_loops_register_and_kick() -> None:
    seen: list = []
    server = await start_fake_namesrv(seen)
    client = RemotingClient([f"127.0.0.1:{server.port}"])
    reg = NamesrvRegistrar(client, identity, wrapper, period_s=60, timeout_s=3)
    try:
        reg.start()
        for _ in range(200):
            if seen:
                break
            await asyncio.sleep(0.01)
        assert len(seen) == 1
        reg.kick()
        for _ in range(200):
            if len(seen) == 2:
                break
            await asyncio.sleep(0.01)
        assert len(seen) == 2
    finally:
        await reg.shutdown()
        await client.close()
        await server.shutdown()


async def test_a_topic_change_waits_for_the_answering_name_servers_not_a_hung_one() -> None:
    """A hung name server (its port accepts, nothing answers) holds the creation of a topic (kick_and_wait) for
    REGISTRATION_WAIT_S at most after another answered, not for its registration timeout, which outlasts the admin
    client's."""
    seen: list = []
    server = await start_fake_namesrv(seen)
    hung = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    client = RemotingClient([f"127.0.0.1:{hung.sockets[0].getsockname()[1]}", f"127.0.0.1:{server.port}"])
    reg = NamesrvRegistrar(client, identity, wrapper, period_s=30, timeout_s=6)
    reg.start(registered=True)
    try:
        t0 = time.monotonic()
        results = await reg.kick_and_wait(within=0.5)
        assert 0.5 <= time.monotonic() - t0 < 5.0  # not the hung one's registration timeout (6 s)
        assert [r.ok for r in results] == [True] and [k for k, *_ in seen] == ["reg"]
    finally:
        await reg.shutdown()
        await client.close()
        await server.shutdown()
        hung.close()
        await hung.wait_closed()


async def test_a_slow_name_server_is_waited_for_when_none_has_answered() -> None:
    """The wait is cut only once a name server has answered: a lone slow one (a loaded machine) is waited for, so
    the topic is routable when its creation is answered."""
    seen: list = []
    server = await start_fake_namesrv(seen)
    real = server.processors[RequestCode.REGISTER_BROKER]

    async def slow(conn, req):
        await asyncio.sleep(0.6)
        return real(conn, req)

    server.register(RequestCode.REGISTER_BROKER, slow)
    client = RemotingClient([f"127.0.0.1:{server.port}"])
    reg = NamesrvRegistrar(client, identity, wrapper, period_s=30, timeout_s=6)
    reg.start(registered=True)
    try:
        results = await reg.kick_and_wait(within=0.1)
        assert [r.ok for r in results] == [True] and [k for k, *_ in seen] == ["reg"]
    finally:
        await reg.shutdown()
        await client.close()
        await server.shutdown()
