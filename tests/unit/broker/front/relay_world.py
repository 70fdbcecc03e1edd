"""Shared scaffolding for the front link tests: a real RemotingServer (no socket of its own) behind the store's end
of a link (WorkerLink) on one end of a socket pair, and the test playing the worker on the other end, writing link
messages and reading what comes back."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from mqtools.remoting.codes import ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.frame import FrameDecoder
from mqtools.remoting.server import RemotingServer
from mqtools.remoting.transport import RemotingConnection
from mqtools.server.broker.front import link as L
from mqtools.server.broker.front.relay import WorkerLink

#: The request code the server answers with its connection's facts (echo).
CODE = 77


@dataclass
class Worker:
    """The worker's end: raw link messages in and out."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    link: WorkerLink
    server: RemotingServer
    seen: list[RemotingConnection] = field(default_factory=list)
    decoder: L.LinkDecoder = field(default_factory=L.LinkDecoder)
    pending: list[tuple[int, int, bytes]] = field(default_factory=list)

    def send(self, kind: int, conn_id: int, payload: bytes = b"") -> None:
        out = L.Outbox()
        out.add(kind, conn_id, payload)
        self.writer.write(b"".join(out.take()))

    async def next(self) -> tuple[int, int, bytes]:
        while not self.pending:
            data = await asyncio.wait_for(self.reader.read(1 << 20), 5)
            assert data, "the link closed"
            self.pending += self.decoder.feed(data)
        return self.pending.pop(0)

    async def answers(self, conn_id: int, count: int) -> list[RemotingCommand]:
        frames, got = FrameDecoder(), []
        while len(got) < count:
            kind, cid, payload = await self.next()
            assert (kind, cid) == (L.DATA, conn_id)
            got += frames.feed(payload)
        return got


@contextlib.asynccontextmanager
async def linked_worker() -> AsyncIterator[Worker]:
    """A server with the echo at CODE, its link said HELLO on."""
    server = RemotingServer()
    seen: list[RemotingConnection] = []

    def echo(conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        seen.append(conn)
        return req.response(ResponseCode.SUCCESS, f"{conn.peer} tls={conn.is_tls} body={req.body!r}")

    server.register(CODE, echo)
    mine, theirs = socket.socketpair()
    hello = asyncio.get_running_loop().create_future()
    _, link = await asyncio.get_running_loop().create_unix_connection(
        lambda: WorkerLink(server, lambda: hello.done() or hello.set_result(None)), sock=mine)
    reader, writer = await asyncio.open_unix_connection(sock=theirs, limit=1 << 20)
    w = Worker(reader, writer, link, server, seen)
    w.send(L.HELLO, 0)
    await asyncio.wait_for(hello, 5)
    try:
        yield w
    finally:
        writer.close()
        link.close()


def request(opaque: int, body: bytes, code: int = CODE) -> bytes:
    cmd = RemotingCommand.request(code, None)
    cmd.opaque, cmd.body = opaque, body
    return cmd.encode()
