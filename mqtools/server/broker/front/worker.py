"""A front worker: a process that accepts a broker's client connections and relays their requests.

It is handed the broker's listening sockets (the remoting port and the VIP channel) and one end of a
socket pair to the broker's store process (link.py). It accepts, does the TLS handshake and the
encryption, reads and writes the clients' sockets, cuts each client's stream at its frames and parses the
plain sends into records (send_record.py); the store process runs the requests. What this takes off the
store's loop: the socket calls of every client connection (a worker joins what all its clients sent in one
loop turn into one write to the link), TLS, and a plain send's framing, JSON and command. A worker stops
when its link closes (the broker stopped, or died); the broker starts a worker that died again (relay.py).
Every worker accepts on the same listening sockets; one the store's process tells ACCEPT_PAUSE (it holds more
clients than its share, accept_gate.py) leaves new clients to the others until ACCEPT_RESUME.

Started by the broker as `python -m mqtools.server.broker.front.worker SPEC`, SPEC a JSON object:
{"index", "link": fd, "listen": [fd, ...], "tls": TlsServerSettings' fields or null, "maxFrame": bytes,
"sendRecords": whether the store's process takes records of plain sends, "cluster": the broker's cluster}.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

from mqtools.common import loop as mqloop
from mqtools.common.tls import ClientAuth, TlsMode, TlsServerSettings
from mqtools.common.tls_acceptor import TlsAcceptor, gated_accept
from mqtools.common.tls_certificates import TlsCertificateManager
from mqtools.server.broker.front import link as L
from mqtools.server.broker.front.endpoint import LinkEnd
from mqtools.server.broker.front.send_record import SendSplitter
from mqtools.server.lifecycle import SERVER_LOG_FORMAT
from mqtools.server.loop_watch import LoopWatch

log = logging.getLogger(__name__)


def tls_spec(settings: TlsServerSettings | None) -> dict[str, Any] | None:
    """TLS settings as a worker's SPEC carries them."""
    if settings is None or not settings.enabled:
        return None
    doc = dataclasses.asdict(settings)
    doc["mode"], doc["need_client_auth"] = settings.mode.value, settings.need_client_auth.value
    return doc


def _tls_settings(doc: dict[str, Any] | None) -> TlsServerSettings | None:
    if doc is None:
        return None
    return TlsServerSettings(**{**doc, "mode": TlsMode(doc["mode"]), "need_client_auth": ClientAuth(doc["need_client_auth"])})


class BrokerLink(LinkEnd):
    """This worker's end of the link: client bytes out in one write per loop turn, the broker's bytes in."""

    def __init__(self, max_frame: int | None, cluster: str) -> None:
        super().__init__()
        #: Clients' streams are cut at frames of at most this (their plain sends parsed), or relayed as they come.
        self.max_frame = max_frame
        self.cluster = cluster
        self.clients: dict[int, ClientConnection] = {}
        self._next_id = 0
        #: The link's write buffer is over its high-water mark: clients are not read until it drains.
        self.paused = False
        #: Set while the store's process lets this worker accept new clients (ACCEPT_PAUSE clears it, ACCEPT_RESUME
        #: sets it again): a worker holding more than its share leaves them to the others (accept_gate.py).
        self.accepting = asyncio.Event()
        self.accepting.set()

    def new_id(self) -> int:
        self._next_id = self._next_id % 0xFFFFFFFF + 1
        return self._next_id

    def on_events(self, events: list[tuple[int, int, bytes]]) -> None:
        for kind, conn_id, payload in events:
            if kind == L.PING:
                self.emit(L.PONG, 0)
                continue
            if kind == L.ACCEPT_PAUSE:
                self.accepting.clear()
                continue
            if kind == L.ACCEPT_RESUME:
                self.accepting.set()
                continue
            client = self.clients.get(conn_id)
            if client is None:  # gone already: what the broker wrote to it has nobody to read it
                continue
            if kind == L.DATA:
                client.write(payload)
            elif kind == L.CLOSE:
                del self.clients[conn_id]
                client.close()

    def pause_writing(self) -> None:
        self.paused = True
        for client in self.clients.values():
            client.pause()

    def resume_writing(self) -> None:
        self.paused = False
        for client in self.clients.values():
            client.resume()  # not one whose own answers back up (ClientConnection.pause_writing)

    def connection_lost(self, exc: Exception | None) -> None:
        for client in list(self.clients.values()):
            client.close()
        self.clients.clear()
        super().connection_lost(exc)


class ClientConnection(asyncio.Protocol):
    """One client's connection: its plain sends as records, every other frame as it came. A client that does not
    read its answers is not read either, and the store's process is told to stop serving it (PAUSE), until they
    drain (RESUME): what a worker buffers for it stays bounded, as a broker without workers stops reading it."""

    def __init__(self, broker: BrokerLink) -> None:
        self.broker = broker
        self.conn_id = broker.new_id()
        self._transport: asyncio.Transport | None = None
        #: The client's socket's output passed its high-water mark (asyncio's pause_writing) and has not drained.
        self._answers_wait = False
        self._splitter = None if broker.max_frame is None else SendSplitter(broker.max_frame, broker.cluster)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername") or ("?", 0)
        is_tls = transport.get_extra_info("sslcontext") is not None
        served = transport.get_extra_info("peercert") if is_tls else None
        not_after = served.get("notAfter") if served else None
        self.broker.clients[self.conn_id] = self
        self.broker.emit(L.OPEN, self.conn_id, L.Opened((peer[0], peer[1]), is_tls, not_after).encode())
        if self.broker.paused:
            self.pause()

    def data_received(self, data: bytes) -> None:
        emit, conn_id = self.broker.emit, self.conn_id
        if self._splitter is None:
            emit(L.DATA, conn_id, data)
            return
        for kind, payload in self._splitter.feed(data):
            emit(L.SEND if kind is SendSplitter.SEND else L.DATA, conn_id, payload)

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        if self.broker.clients.pop(self.conn_id, None) is not None:
            self.broker.emit(L.CLOSE, self.conn_id)

    def write(self, data: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def pause_writing(self) -> None:
        """asyncio: the client does not read its answers as fast as it asks."""
        self._answers_wait = True
        self.pause()
        if self.conn_id in self.broker.clients:
            self.broker.emit(L.PAUSE, self.conn_id)

    def resume_writing(self) -> None:
        self._answers_wait = False
        self.resume()
        if self.conn_id in self.broker.clients:
            self.broker.emit(L.RESUME, self.conn_id)

    def pause(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.pause_reading()

    def resume(self) -> None:
        """Read again, unless the link or the client's own answers still wait."""
        if self._answers_wait or self.broker.paused:
            return
        if self._transport is not None and not self._transport.is_closing():
            self._transport.resume_reading()


async def accept_clients(listener: socket.socket, factory: Callable[[], asyncio.Protocol], gate: asyncio.Event) -> None:
    """Accept plain clients on the shared listening socket while `gate` is set (what asyncio's server does, but one
    that can stop accepting and leave new clients in the backlog to the other workers)."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            sock = await gated_accept(loop, listener, gate)
        except OSError as exc:  # EMFILE and friends: back off instead of spinning, as TlsAcceptor does
            log.warning("accept failed: %s", exc)
            await asyncio.sleep(0.1)
            continue
        if sock is None:  # another worker took it, or this one was told to pause meanwhile
            continue
        try:
            await loop.connect_accepted_socket(factory, sock)
        except OSError:
            sock.close()
        except Exception:  # a client's failure must not end the accepting: the store would count this worker as
            log.exception("a client's connection could not be set up")  # serving, and pause the others for it
            sock.close()


async def serve(spec: dict[str, Any]) -> None:
    """Serve the handed sockets until the link closes; a LoopWatch names what holds this worker's loop up, as the
    other server processes' (lifecycle.serve)."""
    watch = LoopWatch()
    watch.start()
    try:
        await _serve(spec)
    finally:
        watch.stop()


async def _serve(spec: dict[str, Any]) -> None:
    loop = asyncio.get_running_loop()
    broker = BrokerLink(spec["maxFrame"] if spec["sendRecords"] and SendSplitter.available() else None,
                        spec["cluster"])
    await loop.create_unix_connection(lambda: broker, sock=socket.socket(fileno=spec["link"]))
    settings = _tls_settings(spec.get("tls"))
    certificates = TlsCertificateManager(settings) if settings is not None else None
    if certificates is not None:
        await certificates.start()  # a renewed certificate reaches this worker's next handshake too
    acceptors: list[TlsAcceptor] = []
    plain: list[asyncio.Task[None]] = []
    for fd in spec["listen"]:
        sock = socket.socket(fileno=fd)
        sock.setblocking(False)
        if certificates is not None:
            acceptor = TlsAcceptor("remoting port", certificates, lambda: ClientConnection(broker),
                                   gate=broker.accepting)
            acceptor.serve_socket(sock)
            acceptors.append(acceptor)
        else:
            plain.append(asyncio.create_task(accept_clients(sock, lambda: ClientConnection(broker), broker.accepting),
                                             name=f"accept-{sock.getsockname()[1]}"))
    broker.emit(L.HELLO, 0)
    await broker.closed
    for task in plain:
        task.cancel()
    await asyncio.gather(*plain, return_exceptions=True)
    for acceptor in acceptors:
        await acceptor.shutdown()
    if certificates is not None:
        await certificates.shutdown()


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    # the broker stops its workers by closing their links: a terminal's Ctrl-C, or systemd's SIGTERM to every process
    # of the service, reaches the broker too, which does that once its clients are told (a worker that went first
    # would be started again by a broker that is still unregistering)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, format=SERVER_LOG_FORMAT)
    mqloop.run(serve(spec))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
