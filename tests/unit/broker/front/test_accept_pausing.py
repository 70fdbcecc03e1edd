"""A front worker stops accepting while the store's process says ACCEPT_PAUSE and accepts again on ACCEPT_RESUME
(front/accept_gate.py decides; link.py carries it; worker.py and TlsAcceptor's gate obey): on its plain port and on
a TLS one, with no connection taken after the pause reached it (an accept already waiting would take one more);
and the store's end of a link reports its count of connections as they open and close."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from unit.broker.front.relay_world import request

from mqtools.cluster.certs import make_local_certificates
from mqtools.common.tls import TlsMode, TlsServerSettings
from mqtools.common.tls_acceptor import TlsAcceptor
from mqtools.common.tls_certificates import TlsCertificateManager
from mqtools.remoting.server import RemotingServer
from mqtools.server.broker.front import link as L
from mqtools.server.broker.front.relay import WorkerLink
from mqtools.server.broker.front.worker import BrokerLink, accept_clients

#: Long enough for a loop to have accepted a connection already waiting in the listener's backlog.
SETTLE_S = 0.2


def test_the_accept_messages_are_read_back() -> None:
    out = L.Outbox()
    out.add(L.ACCEPT_PAUSE, 0)
    out.add(L.ACCEPT_RESUME, 0)
    assert L.LinkDecoder().feed(b"".join(out.take())) == [(L.ACCEPT_PAUSE, 0, b""), (L.ACCEPT_RESUME, 0, b"")]


async def test_the_workers_link_end_opens_and_closes_its_gate() -> None:
    broker = BrokerLink(None, "c")
    assert broker.accepting.is_set()
    broker.on_events([(L.ACCEPT_PAUSE, 0, b"")])
    assert not broker.accepting.is_set()
    broker.on_events([(L.ACCEPT_RESUME, 0, b"")])
    assert broker.accepting.is_set()


class _Accepted(asyncio.Protocol):
    """Counts the connections its listener handed over."""

    def __init__(self, seen: asyncio.Queue[asyncio.Transport]) -> None:
        self.seen = seen

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.seen.put_nowait(transport)  # type: ignore[arg-type]


Serve = Callable[[socket.socket, Callable[[], asyncio.Protocol], asyncio.Event], Awaitable[Callable[[], Awaitable[None]]]]


async def _plain(listener: socket.socket, factory: Callable[[], asyncio.Protocol],
                 gate: asyncio.Event) -> Callable[[], Awaitable[None]]:
    task = asyncio.create_task(accept_clients(listener, factory, gate))

    async def stop() -> None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    return stop


@contextlib.asynccontextmanager
async def _tls_maker(tmp_path: Path) -> AsyncIterator[Serve]:
    certs = make_local_certificates(tmp_path)
    manager = TlsCertificateManager(TlsServerSettings(TlsMode.PERMISSIVE, str(certs.cert), str(certs.key)))

    async def serve(listener: socket.socket, factory: Callable[[], asyncio.Protocol],
                    gate: asyncio.Event) -> Callable[[], Awaitable[None]]:
        acceptor = TlsAcceptor("test", manager, factory, gate=gate)
        acceptor.serve_socket(listener)
        return acceptor.shutdown

    yield serve


@pytest.fixture(params=["plain", "tls"])
async def serve(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Serve]:
    if request.param == "plain":
        yield _plain
    else:
        async with _tls_maker(tmp_path) as maker:
            yield maker


async def _connect(port: int) -> socket.socket:
    """A client that connected and sent a byte (a permissive TLS port waits for the first one)."""
    client = socket.create_connection(("127.0.0.1", port))
    client.sendall(request(1, b""))
    return client


async def test_a_paused_worker_leaves_new_clients_in_the_backlog_and_takes_them_once_resumed(serve: Serve) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    seen: asyncio.Queue[asyncio.Transport] = asyncio.Queue()
    gate = asyncio.Event()
    gate.set()
    stop = await serve(listener, lambda: _Accepted(seen), gate)
    clients: list[socket.socket] = []
    try:
        clients.append(await _connect(port))
        first = await asyncio.wait_for(seen.get(), 5)
        await asyncio.sleep(SETTLE_S)  # the accept loop waits for the next client now
        gate.clear()  # the pause reaches it while it waits: the next client is not taken
        clients.append(await _connect(port))
        await asyncio.sleep(SETTLE_S)
        assert seen.empty()
        gate.set()
        second = await asyncio.wait_for(seen.get(), 5)
        assert second.get_extra_info("peername")[1] == clients[1].getsockname()[1] != first.get_extra_info(
            "peername")[1]
        gate.clear()  # paused before a client comes: another process would take it from the shared backlog
        clients.append(await _connect(port))
        await asyncio.sleep(SETTLE_S)
        assert seen.empty()
        taken, _ = listener.accept()  # still there for another worker
        taken.close()
        for transport in (first, second):
            transport.close()
    finally:
        await stop()
        for client in clients:
            client.close()
        listener.close()


async def test_the_store_side_reports_each_workers_count_of_connections() -> None:
    counts: list[int] = []
    mine, theirs = socket.socketpair()
    hello: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    _, link = await asyncio.get_running_loop().create_unix_connection(
        lambda: WorkerLink(RemotingServer(), lambda: hello.done() or hello.set_result(None), on_count=counts.append),
        sock=mine)
    try:
        link.on_events([(L.OPEN, 1, L.Opened(("192.0.2.1", 1), False).encode()),
                        (L.OPEN, 2, L.Opened(("192.0.2.1", 2), False).encode()),
                        (L.CLOSE, 1, b""), (L.CLOSE, 1, b"")])  # a second CLOSE of one connection counts once
        assert counts == [1, 2, 1]
        link.conns[2].close()  # the store closes it: the worker will not say CLOSE for it
        assert counts == [1, 2, 1, 0]
    finally:
        link.close()
        theirs.close()
