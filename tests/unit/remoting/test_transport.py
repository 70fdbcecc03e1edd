"""A gathered body (a pull's slices of the commitlog) reaches the peer as the same frame a joined body makes,
alone or among other answers of the same read, small and large."""

from __future__ import annotations

import asyncio
import mmap

import pytest

from mqtools.remoting.command import GatheredBody, RemotingCommand
from mqtools.remoting.server import RemotingServer
from mqtools.remoting.transport import _JOIN_LIMIT, RemotingConnection

#: A mapping, as the commitlog is: its slices are what a pull's answer is made of.
MAPPED = mmap.mmap(-1, 4 * _JOIN_LIMIT)
MAPPED.write(bytes(range(256)) * (len(MAPPED) // 256))
VIEW = memoryview(MAPPED)


def gathered(*ranges: tuple[int, int]) -> GatheredBody:
    parts = [VIEW[lo:hi] for lo, hi in ranges]
    return GatheredBody(parts, sum(len(p) for p in parts))


BODIES = {
    "small": gathered((0, 10), (300, 310)),
    "one span": gathered((0, 33_000)),
    "many spans": gathered(*((i * 1100, i * 1100 + 1024) for i in range(32))),
    "over the join limit": gathered((0, _JOIN_LIMIT), (_JOIN_LIMIT + 7, 2 * _JOIN_LIMIT)),
}


def test_encoded_as_the_joined_body() -> None:
    for body in BODIES.values():
        joined = RemotingCommand(code=0, body=bytes(body), opaque=7, flag=1)
        assert RemotingCommand(code=0, body=body, opaque=7, flag=1).encode() == joined.encode()
        assert len(body) == len(bytes(body))


@pytest.mark.parametrize("names", [[name] for name in BODIES] + [list(BODIES) * 3], ids=[*BODIES, "together"])
async def test_the_peer_reads_the_joined_bodies(names: list[str]) -> None:
    """"together": the requests go out in one write, so the server answers them in one turn, gathered and
    joined parts in the same output."""
    server = RemotingServer("127.0.0.1", 0)
    server.register(1, lambda conn, req: req.response(0, body=BODIES[req.ext_fields["body"]]))
    await server.start()
    _, client = await asyncio.get_running_loop().create_connection(RemotingConnection, "127.0.0.1", server.port)
    try:
        answers = await asyncio.gather(*(client.invoke(RemotingCommand.request(1, {"body": name}), 5)
                                         for name in names))
        assert [a.body for a in answers] == [bytes(BODIES[name]) for name in names]
    finally:
        client.close()
        await server.shutdown()
