"""The remoting server tells a peer's bad input from our bugs (in-process server, real loopback sockets):
BadRequestError is answered with its reason and logged in one rate-limited line without a traceback;
any other processor failure keeps its traceback; malformed frames close their connection and are
logged through the same limiter."""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import AsyncIterator

import pytest

from mqtools.common.log_limiter import LIMIT
from mqtools.remoting.bodies import HeartbeatData
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import TopicRequestHeader
from mqtools.remoting.server import RemotingServer
from mqtools.remoting.transport import RemotingConnection

HEADER, BODY, BUG = 1, 2, 3
LOGGER = "mqtools.remoting.server"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def server() -> AsyncIterator[tuple[RemotingServer, FakeClock]]:
    clock = FakeClock()
    srv = RemotingServer("127.0.0.1", 0, clock=clock)

    def header(conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        TopicRequestHeader.from_ext(req.ext_fields)
        return req.response()

    async def body(conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        HeartbeatData.from_json(req.body or b"")
        return req.response()

    def bug(conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        return req.response(remark=str(1 // 0))

    for code, fn in ((HEADER, header), (BODY, body), (BUG, bug)):
        srv.register(code, fn)
    await srv.start()
    yield srv, clock
    await srv.shutdown()


async def test_bad_requests_answered_with_the_reason_and_logged_without_traceback(
        server: tuple[RemotingServer, FakeClock], caplog: pytest.LogCaptureFixture) -> None:
    srv, clock = server
    addr = f"127.0.0.1:{srv.port}"
    client = RemotingClient()
    with caplog.at_level(logging.WARNING, LOGGER):
        for _ in range(50):
            resp = await client.invoke(addr, RemotingCommand.request(HEADER, {}), 5)
            assert resp.code == ResponseCode.SYSTEM_ERROR and resp.remark == "the custom field <topic> is null"
            resp = await client.invoke(addr, RemotingCommand.request(BODY, {}, b"\xff{"), 5)
            assert resp.code == ResponseCode.SYSTEM_ERROR and "bad HeartbeatData body" in (resp.remark or "")
        clock.now += 60
        await client.invoke(addr, RemotingCommand.request(HEADER, {}), 5)
        resp = await client.invoke(addr, RemotingCommand.request(BUG, {}), 5)
        assert resp.code == ResponseCode.SYSTEM_ERROR and "ZeroDivisionError" in (resp.remark or "")
    await client.close()
    records = [r for r in caplog.records if r.name == LOGGER]
    bad = [r for r in records if r.levelno == logging.WARNING]
    assert len(bad) == 2 * LIMIT + 1 and not any(r.exc_info for r in bad)  # LIMIT per kind, then the next window's
    assert bad[-1].getMessage().endswith(f"(suppressed {50 - LIMIT} similar)")
    bugs = [r for r in records if r.levelno == logging.ERROR]
    assert len(bugs) == 1 and bugs[0].exc_info is not None  # our bug keeps its traceback


async def test_malformed_frames_close_their_connection_and_are_logged_rate_limited(
        server: tuple[RemotingServer, FakeClock], caplog: pytest.LogCaptureFixture) -> None:
    srv, _clock = server
    with caplog.at_level(logging.WARNING, LOGGER):
        for _ in range(30):
            reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
            writer.write(struct.pack(">ii", 8, 400) + b"zzzz" + struct.pack(">i", -1) * 4)
            await writer.drain()
            assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the server
            writer.close()
    closing = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(closing) == LIMIT and all("header length 400 exceeds the frame" in line for line in closing)
