"""Flow control through front workers (found in review: a client that pipelined pulls and never read its answers
grew its worker to 2 GB, as a broker without workers does not: it stops reading such a client). The worker stops
reading a client whose answers back up and says PAUSE, the store's connection is told pause_writing until RESUME,
and the link itself backing up pauses every connection on it, so what waits for a client stays bounded."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
from support.clientsupport import until
from support.readstate import ReadStateTransport
from unit.broker.front.relay_world import CODE, Worker, linked_worker, request

from mqtools.remoting.codes import ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.frame import FrameDecoder
from mqtools.remoting.server import RemotingServer
from mqtools.remoting.transport import RemotingConnection
from mqtools.server.broker.front import link as L
from mqtools.server.broker.front import relay
from mqtools.server.broker.front.worker import BrokerLink, ClientConnection

BIG = CODE + 1


@pytest.fixture
async def worker() -> AsyncIterator[Worker]:
    async with linked_worker() as w:
        yield w


def answer_big(server: RemotingServer, size: int) -> list[int]:
    """BIG answers `size` bytes; the opaques it handled, in order."""
    handled: list[int] = []
    body = b"b" * size

    def big(conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        handled.append(req.opaque)
        return req.response(ResponseCode.SUCCESS, body=body)

    server.register(BIG, big)
    return handled


async def test_a_client_its_worker_paused_is_served_again_once_resumed(worker: Worker) -> None:
    worker.send(L.OPEN, 20, L.Opened(("192.0.2.20", 1), False).encode())
    worker.send(L.OPEN, 21, L.Opened(("192.0.2.20", 2), False).encode())
    worker.send(L.PAUSE, 20)
    worker.send(L.DATA, 20, request(1, b"held"))
    worker.send(L.DATA, 21, request(2, b"other"))
    assert [a.opaque for a in await worker.answers(21, 1)] == [2]  # conn 20's request was read before: held
    assert worker.pending == [] and len(worker.seen) == 1
    worker.send(L.RESUME, 20)
    assert [a.opaque for a in await worker.answers(20, 1)] == [1]


async def test_the_link_backing_up_pauses_its_clients_until_it_drains(worker: Worker) -> None:
    """The worker (the test) does not read the link: the store stops handling a flood of requests at about
    relay.LINK_HIGH_WATER of answers, instead of answering all of them into the link's buffer; all come once read."""
    count, size = 64, 256 * 1024
    handled = answer_big(worker.server, size)
    worker.send(L.OPEN, 22, L.Opened(("192.0.2.22", 1), False).encode())
    worker.send(L.DATA, 22, b"".join(request(i, b"", BIG) for i in range(1, count + 1)))
    await until(lambda: handled, 10, "the requests read")
    for _ in range(50):  # loop turns for what a link that drains would let through (none here)
        await asyncio.sleep(0)
    assert len(handled) < count * 3 // 4
    assert worker.link.write_buffer_size() < 2 * relay.LINK_HIGH_WATER + size
    answers = await worker.answers(22, count)
    assert [a.opaque for a in answers] == list(range(1, count + 1)) == handled


class ClientTransport(ReadStateTransport):
    """A client's socket as a worker's ClientConnection sees it: whether it is read."""

    def __init__(self) -> None:
        super().__init__({"peername": ("192.0.2.30", 1)})


async def test_a_worker_stops_reading_a_client_whose_answers_back_up_and_says_so() -> None:
    broker = BrokerLink(None, "C")
    said: list[tuple[int, int]] = []
    broker.emit = lambda kind, conn_id, payload=b"": said.append((kind, conn_id))  # type: ignore[method-assign]
    client, transport = ClientConnection(broker), ClientTransport()
    client.connection_made(transport)
    assert said == [(L.OPEN, client.conn_id)]
    client.pause_writing()
    assert not transport.reading and said[-1] == (L.PAUSE, client.conn_id)
    broker.pause_writing()
    broker.resume_writing()  # the link drained; the client's answers did not
    assert not transport.reading
    client.resume_writing()
    assert transport.reading and said[-1] == (L.RESUME, client.conn_id)
    broker.pause_writing()
    client.pause_writing()
    client.resume_writing()  # the client's answers drained; the link did not
    assert not transport.reading
    broker.resume_writing()
    assert transport.reading


async def _worker_and_store(server: RemotingServer) -> tuple[BrokerLink, Any, tuple[str, int]]:
    """A worker's BrokerLink and the store's WorkerLink in this process, the worker serving a port of its own."""
    loop = asyncio.get_running_loop()
    mine, theirs = socket.socketpair()
    broker = BrokerLink(None, "C")
    await loop.create_unix_connection(lambda: broker, sock=theirs)
    await loop.create_unix_connection(lambda: relay.WorkerLink(server, lambda: None), sock=mine)
    listener = await loop.create_server(lambda: ClientConnection(broker), "127.0.0.1", 0)
    return broker, listener, listener.sockets[0].getsockname()


async def test_a_client_that_does_not_read_its_answers_is_not_read_and_costs_bounded_memory() -> None:
    """A worker and the store in this process: the client pipelines requests answered with 128 KiB each and reads
    nothing; the worker stops reading it, the store stops serving it, little waits anywhere; then it reads all."""
    server = RemotingServer()
    count, size = 400, 128 * 1024
    handled = answer_big(server, size)
    broker, listener, addr = await _worker_and_store(server)
    loop = asyncio.get_running_loop()
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.setblocking(False)
    try:
        await loop.sock_connect(client, addr)
        await loop.sock_sendall(client, b"".join(request(i, b"", BIG) for i in range(1, count + 1)))
        await until(lambda: broker.clients and handled, 10, "the requests relayed")
        (conn,) = broker.clients.values()
        transport = conn._transport
        assert transport is not None
        with contextlib.suppress(AssertionError):  # the assertions below say what did not happen
            await until(lambda: not transport.is_reading(), 10, "the worker to stop reading the client")
        for _ in range(50):  # loop turns for what would go on if nothing paused
            await asyncio.sleep(0)
        waiting = transport.get_write_buffer_size()
        assert not transport.is_reading() and len(handled) < count // 2, (len(handled), waiting)
        assert waiting < 2 * relay.LINK_HIGH_WATER
        frames, got = FrameDecoder(), []
        while len(got) < count:
            data = await asyncio.wait_for(loop.sock_recv(client, 1 << 20), 10)
            assert data, "the worker closed the client"
            got += frames.feed(data)
        assert [a.opaque for a in got] == list(range(1, count + 1))
    finally:
        client.close()
        listener.close()
        broker.close()
