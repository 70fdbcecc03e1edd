"""Remoting server (RocketMQ's NettyRemotingServer role): dispatch incoming requests to processors
keyed by request code.

A processor is `fn(conn, request) -> response | None`, or a coroutine function with the
same result. Plain functions answer inline (no task per request: the name server's hot
path stays cheap); coroutines run as tasks. Whatever a processor does, the connection
survives: an exception becomes SYSTEM_ERROR with the message as remark, an unknown code
REQUEST_CODE_NOT_SUPPORTED, and oneway requests never get an answer.

Bad input and our bugs are told apart by exception class: a BadRequestError (raised by header
and body decoding) is the peer's fault and costs one rate-limited log line without a traceback;
anything else keeps its traceback. A malformed frame closes that one connection, logged the
same rate-limited way.

With TLS settings in permissive or enforcing mode the port is served by a `TlsAcceptor`
(mqtools.common.tls_acceptor), which picks TLS or plain per connection by its first byte.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mqtools.common.log_limiter import LimitedLog
from mqtools.common.tls_acceptor import TlsAcceptor
from mqtools.common.tls_certificates import TlsCertificateManager
from mqtools.remoting.codes import ResponseCode, code_name
from mqtools.remoting.command import FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand
from mqtools.remoting.errors import BadRequestError, ProtocolError, RemotingConnectionClosed, RemotingError
from mqtools.remoting.frame import DEFAULT_MAX_FRAME
from mqtools.remoting.transport import RemotingConnection

log = logging.getLogger(__name__)

ProcessorResult = RemotingCommand | None | Awaitable[RemotingCommand | None]
Processor = Callable[[RemotingConnection, RemotingCommand], ProcessorResult]
ConnectionCallback = Callable[[RemotingConnection], None]
AccessCheck = Callable[[RemotingConnection, RemotingCommand], RemotingCommand | None]


def reply(conn: RemotingConnection, req: RemotingCommand, resp: RemotingCommand | None) -> None:
    """Answer `req` with `resp` (None: no answer; a oneway request gets none), as its response in its serializer;
    dropped when the peer has gone. A processor's deferred answer (a parked pull or POP) goes through here too."""
    if resp is None or req.flag & FLAG_ONEWAY:
        return
    resp.opaque = req.opaque
    resp.flag |= FLAG_RESPONSE
    resp.serialize_type = req.serialize_type
    try:
        conn.send(resp)
    except RemotingConnectionClosed:  # the peer left before its answer: nobody to tell
        return


class RemotingServer:
    def __init__(
        self,
        host: str = "0.0.0.0",
        port: int = 0,
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
        on_connect: ConnectionCallback | None = None,
        on_close: ConnectionCallback | None = None,
        tls: TlsCertificateManager | None = None,
        extra_ports: tuple[int, ...] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.host = host
        self.port = port
        #: ports served beside `port` by the same processors (a broker's VIP channel, listenPort - 2)
        self.extra_ports = extra_ports
        self.max_frame = max_frame
        self.processors: dict[int, Processor] = {}
        self.default_processor: Processor | None = None
        #: ACL: asked before any processor; a response it returns is the answer (a refusal)
        self.access_check: AccessCheck | None = None
        self.on_connect = on_connect
        self.on_close = on_close
        #: Run after each read's answers are written (RemotingConnection's after_read): a broker's deferred
        #: dispatch.
        self.after_read: Callable[[], None] | None = None
        self.connections: set[RemotingConnection] = set()
        #: TLS on every port (None: plain); the files' watch runs while the server does.
        self.tls = tls
        self._servers: list[asyncio.Server] = []
        self._acceptors: list[TlsAcceptor] = []
        #: Listening sockets that other processes accept on (bind)
        self._bound: list[socket.socket] = []
        self._tasks: set[asyncio.Task] = set()
        self.bad_input = LimitedLog(log, clock)

    def register(self, code: int, processor: Processor) -> None:
        self.processors[int(code)] = processor

    def add_close_hook(self, hook: ConnectionCallback) -> None:
        """Call `hook` too when a connection closes, after the hooks added before it."""
        previous = self.on_close
        if previous is None:
            self.on_close = hook
            return

        def both(conn: RemotingConnection) -> None:
            previous(conn)
            hook(conn)

        self.on_close = both

    async def start(self) -> None:
        """Listen on `port` and `extra_ports`; ConfigError (before any socket opens) when the TLS
        certificate or key cannot be loaded."""
        self.port = await self._listen(self.port)
        for port in self.extra_ports:
            await self._listen(port)
        if self.tls is not None:
            await self.tls.start()

    async def bind(self) -> list[socket.socket]:
        """Open `port` and `extra_ports` without accepting on them here: the listening sockets, for processes
        that accept and relay their connections to `new_connection` (a broker's front workers)."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sockets: list[socket.socket] = []
        try:
            for port in (self.port, *self.extra_ports):
                sockets.append(socket.create_server((self.host, port), family=family, backlog=1024))
        except OSError:
            for sock in sockets:
                sock.close()
            raise
        self.port = sockets[0].getsockname()[1]
        self._bound = sockets
        if self.tls is not None:
            await self.tls.start()
        return sockets

    async def _listen(self, port: int) -> int:
        """Serve `port` (0: any); the port it got."""
        if self.tls is not None and self.tls.enabled:
            acceptor = TlsAcceptor("remoting port", self.tls, self.new_connection)
            self._acceptors.append(acceptor)
            return await acceptor.start(self.host, port)
        loop = asyncio.get_running_loop()
        server = await loop.create_server(self.new_connection, self.host, port, reuse_address=True)
        self._servers.append(server)
        return server.sockets[0].getsockname()[1]

    async def shutdown(self) -> None:
        if self.tls is not None:
            await self.tls.shutdown()
        for server in self._servers:
            server.close()
        for sock in self._bound:
            sock.close()
        for acceptor in self._acceptors:
            await acceptor.shutdown()
        for conn in list(self.connections):
            conn.close()
        for task in list(self._tasks):
            task.cancel()
        for server in self._servers:
            await server.wait_closed()

    def new_connection(self) -> RemotingConnection:
        """A server connection, before its transport is made (asyncio's protocol factory; a relay's connections)."""
        conn = RemotingConnection(self._on_request, self._closed, self.max_frame, on_bad_frame=self._bad_frame,
                                  fair_reads=True, after_read=self.after_read)
        self.connections.add(conn)
        if self.on_connect is not None:
            asyncio.get_running_loop().call_soon(self.on_connect, conn)
        return conn

    def _closed(self, conn: RemotingConnection) -> None:
        self.connections.discard(conn)
        if self.on_close is not None:
            self.on_close(conn)

    def _on_request(self, conn: RemotingConnection, req: RemotingCommand) -> None:
        processor = self.processors.get(req.code, self.default_processor)
        if processor is None:
            remark = f" request type {req.code} not supported"
            reply(conn, req, req.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark))
            return
        try:
            if self.access_check is not None and (refusal := self.access_check(conn, req)) is not None:
                reply(conn, req, refusal)
                return
            result = processor(conn, req)
        except Exception as exc:  # noqa: BLE001 - any processor failure becomes a response
            self.failed(conn, req, exc)
            return
        if result is not None:  # None: no answer, or (a compiled processor) answered already
            self.answer(conn, req, result)

    def failed(self, conn: RemotingConnection, req: RemotingCommand, exc: Exception) -> None:
        """A processor raised: the request's answer says so."""
        reply(conn, req, self._error(conn, req, exc))

    def answer(self, conn: RemotingConnection, req: RemotingCommand, result: Any) -> None:
        """Answer `req` with what its processor returned: a response, or an awaitable of one."""
        if type(result) is RemotingCommand or not inspect.isawaitable(result):
            reply(conn, req, result)  # type: ignore[arg-type]
        elif isinstance(result, asyncio.Future):  # answered when it is done: no task (a SYNC_MASTER send)
            result.add_done_callback(functools.partial(self._settled, conn, req))
        else:
            task = asyncio.ensure_future(self._finish(conn, req, result))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _finish(self, conn: RemotingConnection, req: RemotingCommand, pending: Awaitable) -> None:
        try:
            resp = await pending
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            resp = self._error(conn, req, exc)
        reply(conn, req, resp)

    def _settled(self, conn: RemotingConnection, req: RemotingCommand, done: asyncio.Future) -> None:
        if done.cancelled():
            return
        exc = done.exception()
        reply(conn, req, done.result() if exc is None else self._error(conn, req, exc))

    def _error(self, conn: RemotingConnection, req: RemotingCommand, exc: Exception) -> RemotingCommand:
        if isinstance(exc, BadRequestError):
            self.bad_input.warning(type(exc).__name__, "bad %s request from %s: %s", code_name(req.code), conn.peer,
                                   exc)
            return req.response(ResponseCode.SYSTEM_ERROR, str(exc))
        if not isinstance(exc, RemotingError):
            log.exception("processor for %s failed", code_name(req.code))
        return req.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")

    def _bad_frame(self, conn: RemotingConnection, exc: ProtocolError) -> None:
        self.bad_input.warning("frame", "closing %s: %s", conn.peer, exc)

