"""Choosing a name server when one of them is down: concurrent first requests (an admin session's reads
gathered at once) all end on the live one, none fails because another caller moved the rotation on."""

from __future__ import annotations

import asyncio
import socket

from mqtools.remoting.client import RemotingClient


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_concurrent_callers_all_find_the_live_name_server() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    live = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    client = RemotingClient([f"127.0.0.1:{_closed_port()}", live])
    try:
        conns = await asyncio.gather(*(client.namesrv_connection() for _ in range(5)))
        assert {c.peer for c in conns} == {live}
    finally:
        await client.close()
        server.close()
        await server.wait_closed()
