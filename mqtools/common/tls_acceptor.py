"""A listening socket that speaks TLS, plain or both on one port (RocketMQ's TlsModeHandler).

asyncio's own server cannot decide per connection whether to wrap it in TLS, and a protocol
that reads the first bytes has consumed the ClientHello the TLS layer needs. So this accepts
sockets itself, waits (without blocking the loop) until the first byte arrives, peeks it
(MSG_PEEK leaves it in the socket), and only then hands the socket to asyncio with or without
an SSLContext (the certificate manager's as it is then); the handshake runs inside asyncio, bounded
by a timeout. The remoting server and the HA master both use it, so one decision
(`classify_first_byte`) covers both ports.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Callable

from mqtools.common.log_limiter import LimitedLog
from mqtools.common.tls import FirstByte, classify_first_byte
from mqtools.common.tls_certificates import TlsCertificateManager

log = logging.getLogger("mq.tls")

#: A connection that sends nothing for this long is closed (RocketMQ closes idle channels after 120 s).
FIRST_BYTE_TIMEOUT = 120.0
#: A TLS handshake that does not finish within this is abandoned.
HANDSHAKE_TIMEOUT = 10.0
#: Refusals are logged at most once per this many seconds per listener (a scanner cannot flood the log).
_REFUSALS = {
    FirstByte.REFUSE_PLAIN: "a client tried a plain connection while this server is in TLS enforcing mode",
    FirstByte.REFUSE_TLS: "a client tried a TLS handshake while this server is in TLS disabled mode",
}


class TlsAcceptor:
    """Accept loop for a port in permissive or enforcing mode (disabled ports use asyncio's server)."""

    def __init__(self, name: str, certificates: TlsCertificateManager,
                 protocol_factory: Callable[[], asyncio.BaseProtocol], *,
                 handshake_timeout: float = HANDSHAKE_TIMEOUT, first_byte_timeout: float = FIRST_BYTE_TIMEOUT,
                 gate: asyncio.Event | None = None) -> None:
        #: Asked at each handshake: a certificate loaded again since start reaches the next connection.
        self._certificates = certificates
        self._factory = protocol_factory
        self._timeout = handshake_timeout
        self._first_byte_timeout = first_byte_timeout
        self._name = name
        self._refusals = LimitedLog(log)
        self._sock: socket.socket | None = None
        self._task: asyncio.Task | None = None
        self._pending: set[asyncio.Task] = set()
        self.failed_handshakes = 0
        #: Accept only while this is set (a broker's front worker told to leave new clients to the others); None: always.
        self._gate = gate

    async def start(self, host: str, port: int) -> int:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return self.serve_socket(socket.create_server((host, port), family=family, backlog=1024))

    def serve_socket(self, sock: socket.socket) -> int:
        """Accept on a listening socket made elsewhere (a broker's front worker is handed its broker's); its port."""
        sock.setblocking(False)
        self._sock = sock
        self._name = f"{self._name} {sock.getsockname()[1]}"
        self._task = asyncio.create_task(self._accept_loop(sock), name=f"tls-accept-{sock.getsockname()[1]}")
        return sock.getsockname()[1]

    async def shutdown(self) -> None:
        if self._sock is not None:
            self._sock.close()
        for task in [self._task, *self._pending]:
            if task is not None:
                task.cancel()
        await asyncio.gather(*(t for t in [self._task, *self._pending] if t is not None), return_exceptions=True)

    async def _accept_loop(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                if self._gate is None:
                    sock, _addr = await loop.sock_accept(listener)
                else:
                    gated = await gated_accept(loop, listener, self._gate)
                    if gated is None:  # another process took it, or the gate closed meanwhile
                        continue
                    sock = gated
            except OSError as exc:  # EMFILE and friends: back off instead of spinning
                log.warning("accept failed: %s", exc)
                await asyncio.sleep(0.1)
                continue
            task = asyncio.create_task(self._serve(sock))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

    async def _serve(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        peer = _peer(sock)
        try:
            first = await asyncio.wait_for(_peek_first_byte(loop, sock), self._first_byte_timeout)
        except (TimeoutError, OSError):
            sock.close()
            return
        if first is None:
            sock.close()
            return
        decision = classify_first_byte(first, self._certificates.mode)
        if decision in _REFUSALS:
            self._refusals.warning(decision.name, "%s: closed %s: %s", self._name, peer, _REFUSALS[decision])
            sock.close()
            return
        ctx = self._certificates.context if decision is FirstByte.TLS else None
        try:
            await loop.connect_accepted_socket(self._factory, sock, ssl=ctx,
                                               ssl_handshake_timeout=self._timeout if ctx else None)
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError) as exc:
            self.failed_handshakes += 1
            self._refusals.warning("handshake", "%s: closed %s: TLS handshake failed: %s", self._name, peer,
                                   exc or type(exc).__name__)
            with contextlib.suppress(OSError):
                sock.close()


async def gated_accept(loop: asyncio.AbstractEventLoop, listener: socket.socket,
                       gate: asyncio.Event) -> socket.socket | None:
    """One connection accepted while `gate` is set; None when another process sharing the listener took it first or
    the gate closed meanwhile. It waits for the listener to be readable and looks at the gate just before accepting:
    a sock_accept already waiting when the gate closes would still take the next client."""
    await gate.wait()
    await _readable(loop, listener)
    if not gate.is_set():
        return None
    try:
        sock, _addr = listener.accept()
    except (BlockingIOError, InterruptedError):
        return None
    sock.setblocking(False)
    return sock


async def _readable(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
    readable = loop.create_future()
    fd = sock.fileno()
    loop.add_reader(fd, lambda: readable.done() or readable.set_result(None))
    try:
        await readable
    finally:
        loop.remove_reader(fd)


async def _peek_first_byte(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> int | None:
    """The connection's first byte, left unread; None when the peer closed without sending."""
    await _readable(loop, sock)
    data = sock.recv(1, socket.MSG_PEEK)
    return data[0] if data else None


def _peer(sock: socket.socket) -> str:
    try:
        host, port = sock.getpeername()[:2]
    except OSError:
        return "?"
    return f"{host}:{port}"
