"""A name-server request works to one deadline: each name server tried gets a share of the time left, so a hung
first one (SIGSTOPped: its port still accepts) cannot take the whole timeout while a second one is up, and a call
never lasts a timeout per name server. Before, each got the whole timeout: a producer's first send with a 1 s
budget took 3 s (the instance's timeout) with one of two name servers hung."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from mqtools.remoting.client import RemotingClient
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingConnectError, RemotingTimeoutError
from mqtools.remoting.server import RemotingServer
from mqtools.remoting.transport import RemotingConnection

ECHO = 1


@pytest.fixture
async def live() -> AsyncIterator[str]:
    """The address of a name server that answers ECHO."""
    server = RemotingServer("127.0.0.1", 0)
    server.register(ECHO, lambda _conn, req: req.response(body=req.body))
    await server.start()
    yield f"127.0.0.1:{server.port}"
    await server.shutdown()


@pytest.fixture
async def hung() -> AsyncIterator[list[str]]:
    """Addresses of two name servers that accept connections and never answer."""
    servers = [await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0) for _ in range(2)]
    yield [f"127.0.0.1:{s.sockets[0].getsockname()[1]}" for s in servers]
    for s in servers:
        s.close()
        await s.wait_closed()


async def test_a_hung_first_name_server_takes_only_its_share_of_the_timeout(live: str, hung: list[str]) -> None:
    client = RemotingClient([hung[0], live])
    client._namesrv_index = 0  # the search starts at a random name server; this one starts at the hung one
    loop = asyncio.get_running_loop()
    try:
        began = loop.time()
        resp = await client.invoke_namesrv(RemotingCommand.request(ECHO, body=b"1"), 2.0)
        took = loop.time() - began
        assert resp.body == b"1"
        assert 1.0 <= took < 2.0, "the hung one waited half the timeout, the live one answered in the rest"
        began = loop.time()
        assert (await client.invoke_namesrv(RemotingCommand.request(ECHO), 2.0)).code == 0
        assert loop.time() - began < 1.0, "the live one is kept after"
    finally:
        await client.close()


async def test_every_name_server_hung_costs_one_timeout_in_all(hung: list[str]) -> None:
    client = RemotingClient(hung)
    loop = asyncio.get_running_loop()
    try:
        began = loop.time()
        with pytest.raises(RemotingTimeoutError):
            await client.invoke_namesrv(RemotingCommand.request(ECHO), 1.0)
        assert 1.0 <= loop.time() - began < 1.5  # a whole timeout each took 2 s
    finally:
        await client.close()


async def test_a_name_server_whose_connect_hangs_takes_only_its_share(live: str) -> None:
    """A host that drops packets holds a connect for connect_timeout (3 s), whatever the request's timeout."""
    black_hole = "192.0.2.1:9876"
    client = RemotingClient([black_hole, live])
    client._namesrv_index = 0
    released = asyncio.Event()
    real_connect = client._connect

    async def connect(addr: str) -> RemotingConnection:
        if addr == black_hole:
            await released.wait()
            raise RemotingConnectError(addr, "connect timed out")
        return await real_connect(addr)

    client._connect = connect  # type: ignore[method-assign]
    loop = asyncio.get_running_loop()
    try:
        began = loop.time()
        resp = await asyncio.wait_for(client.invoke_namesrv(RemotingCommand.request(ECHO, body=b"1"), 2.0), 10)
        assert resp.body == b"1" and loop.time() - began < 2.0
    finally:
        released.set()
        await asyncio.sleep(0)
        await client.close()


async def test_a_budget_nearly_spent_does_not_close_a_healthy_name_servers_connection() -> None:
    """A send's last milliseconds timing out on a name server that answers slower than that is no fault of the name
    server: its connection, which other requests share, stays open and chosen (it was closed, failing them)."""
    release = asyncio.Event()

    async def slow(conn: RemotingConnection, req: RemotingCommand) -> None:
        await release.wait()
        conn.send(req.response())

    server = RemotingServer("127.0.0.1", 0)
    server.register(ECHO, lambda conn, req: asyncio.ensure_future(slow(conn, req)) and None)
    await server.start()
    addr = f"127.0.0.1:{server.port}"
    client = RemotingClient([addr])
    try:
        await client.namesrv_connection()
        other = asyncio.ensure_future(client.invoke_namesrv(RemotingCommand.request(ECHO), 5.0))
        await asyncio.sleep(0.05)
        with pytest.raises(RemotingTimeoutError):
            await client.invoke_namesrv(RemotingCommand.request(ECHO), 0.03)
        release.set()
        assert (await asyncio.wait_for(other, 5.0)).code == 0
        assert client._namesrv_chosen == addr
    finally:
        await client.close()
        await server.shutdown()
