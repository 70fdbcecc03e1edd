"""Master side of classic HA (RocketMQ's AcceptSocketService and HAConnection): accept slaves, read
their acks, stream the commitlog to them.

One `HAConnection` per slave, with a read task (8-byte acks, housekeeping timeout) and a
write task (transfer frames from the slave's position, heartbeats when idle).  The protocol
decisions live in protocol.py; this module only moves bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Callable
from typing import Any, Protocol

from mqtools.common.log_limiter import LimitedLog
from mqtools.common.tls import TlsServerSettings
from mqtools.common.tls_acceptor import TlsAcceptor
from mqtools.server.ha.protocol import HAProtocolError, ReportReader, TransferCursor
from mqtools.server.lifecycle import cancel_and_wait

log = logging.getLogger("mq.ha.master")


class CommitLogSource(Protocol):
    """What the master needs from the store (the store facade's HA part)."""

    @property
    def max_phy_offset(self) -> int: ...

    def get_commit_log_data(self, offset: int) -> memoryview | bytes | None: ...


class ConnectionHost(Protocol):
    """Callbacks from a connection into the owning HAService."""

    #: Lines about what a peer did (connects, closes, bad reports), rate-limited: anyone who can
    #: reach the HA port can open connections in a loop.
    peer_log: LimitedLog

    def on_slave_ack(self, conn: HAConnection, offset: int) -> None: ...

    def on_connection_closed(self, conn: HAConnection) -> None: ...


class SpeedMeter:
    """Bytes per second over the last completed one-second window (transferredByteInSecond)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._window_start = clock()
        self._window_bytes = 0
        self.last_rate = 0
        self.total = 0

    def add(self, n: int) -> None:
        self._roll()
        self._window_bytes += n
        self.total += n

    def rate(self) -> int:
        self._roll()
        return self.last_rate

    def _roll(self) -> None:
        now = self._clock()
        elapsed = now - self._window_start
        if elapsed >= 1.0:
            self.last_rate = int(self._window_bytes / elapsed) if elapsed < 2.0 else 0
            self._window_start = now
            self._window_bytes = 0


class HAConnection:
    """One slave connected to this master."""

    def __init__(self, host: ConnectionHost, store: CommitLogSource, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter, *, file_size: int, batch_size: int,
                 heartbeat_interval: float, housekeeping_interval: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._host = host
        self._store = store
        self._reader = reader
        self._writer = writer
        self._clock = clock
        self._housekeeping = housekeeping_interval
        self._reports = ReportReader()
        self.cursor = TransferCursor(file_size, batch_size, heartbeat_interval)
        peer = writer.get_extra_info("peername") or ("?", 0)
        self.addr = f"{peer[0]}:{peer[1]}"
        self.slave_request_offset = -1
        self.slave_ack_offset = -1
        self.speed = SpeedMeter(clock)
        self._woken = False
        self._waiter: asyncio.Future[None] | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self.closed = asyncio.Event()

    def start(self) -> None:
        sock = self._writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._tasks = [asyncio.create_task(self._read_loop(), name=f"ha-read-{self.addr}"),
                       asyncio.create_task(self._write_loop(), name=f"ha-write-{self.addr}")]

    def wake(self) -> None:
        """New data in the commitlog: let the writer send it now instead of at its next poll."""
        self._woken = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def shutdown(self) -> None:
        await cancel_and_wait(*self._tasks)
        self._shutdown_socket()

    def _shutdown_socket(self) -> None:
        if not self.closed.is_set():
            self.closed.set()
            self._writer.close()
            self._host.on_connection_closed(self)

    def _finish(self, why: str) -> None:
        """Either task ends the connection: the other one is cancelled, the host is told."""
        if self.closed.is_set():
            return
        self._host.peer_log.info("closed", "HA connection %s closed: %s", self.addr, why)
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()
        self._shutdown_socket()

    async def _read_loop(self) -> None:
        why = "eof"
        try:
            while True:
                timer = asyncio.timeout(self._housekeeping)  # no task per read, as wait_for makes one
                try:
                    async with timer:
                        data = await self._reader.read(1 << 20)
                except TimeoutError:
                    if not timer.expired():
                        raise  # the socket's own ETIMEDOUT, not the housekeeping deadline
                    why = f"no report for {self._housekeeping}s (housekeeping)"
                    break
                if not data:
                    break
                refused = self._take(data)
                if refused is not None:
                    why = refused
                    break
        except (HAProtocolError, OSError) as exc:
            why = str(exc)
        except Exception as exc:  # one bad connection must never take the HA service down
            log.exception("HA reader for %s failed", self.addr)
            why = f"{type(exc).__name__}: {exc}"
        self._finish(why)

    def _take(self, data: bytes) -> str | None:
        """Apply the slave's reports in `data`; why the connection must close, if it must."""
        for offset in self._feed(data):
            if offset > self._store.max_phy_offset:
                # 4.x: a slave ahead of its master (the master lost data) cannot be
                # reconciled by classic HA; refuse it loudly instead of diverging.
                why = (f"slave reports {offset}, beyond the master's max offset "
                       f"{self._store.max_phy_offset}: wipe the slave's store to re-attach it")
                self._host.peer_log.warning("ahead", "HA slave %s: %s", self.addr, why)
                return why
            self._on_report(offset)
        return None

    # ------------------------------------------------------------------ the protocol's hooks

    def _feed(self, data: bytes) -> list[int]:
        """The offsets the slave reported in `data` (classic HA: only the newest counts)."""
        offset = self._reports.feed(data)
        return [] if offset is None else [offset]

    def _begin_transfer(self) -> None:
        self.cursor.start(self.slave_request_offset, self._store.max_phy_offset, self._clock())

    def _next_frame(self) -> list[bytes | memoryview] | None:
        return self.cursor.frame(self._store.get_commit_log_data(self.cursor.next_from), self._clock())

    def _on_report(self, offset: int) -> None:
        self.slave_ack_offset = offset
        if self.slave_request_offset < 0:
            self.slave_request_offset = offset
            self.wake()
        self._host.on_slave_ack(self, offset)

    async def _write_loop(self) -> None:
        why = "writer stopped"
        try:
            while self.slave_request_offset < 0:
                await self._wait_wake(1.0)
            self._begin_transfer()
            log.info("HA slave %s requested %d, transfer from %d", self.addr,
                     self.slave_request_offset, self.cursor.next_from)
            while True:
                parts = self._next_frame()
                if parts is None:
                    remaining = self.cursor.heartbeat_interval - (self._clock() - self.cursor.last_write)
                    await self._wait_wake(max(0.0, min(0.1, remaining)))
                    continue
                self._writer.writelines(parts)
                await self._writer.drain()
                if len(parts) > 1:
                    self.speed.add(len(parts[1]))
        except (OSError, ConnectionError) as exc:
            why = f"write failed: {exc}"
        except Exception as exc:  # see the reader
            log.exception("HA writer for %s failed", self.addr)
            why = f"{type(exc).__name__}: {exc}"
        self._finish(why)

    async def _wait_wake(self, timeout: float) -> None:
        """Sleep until wake() or `timeout`; one future and one timer, no task per wait (hot path)."""
        if not self._woken:
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(timeout, _resolve, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
        self._woken = False


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class HAAcceptor:
    """Listens on haListenPort and turns every accepted socket into an HAConnection.

    With the broker's TLS on, the port follows the broker's tls.server.mode (permissive: TLS
    and plain slaves, enforcing: TLS only) through the same first-byte acceptor as the
    remoting port.
    """

    def __init__(self, factory: Callable[[asyncio.StreamReader, asyncio.StreamWriter], HAConnection],
                 tls: TlsServerSettings | None = None) -> None:
        self._factory = factory
        self._tls = tls or TlsServerSettings()
        self._server: asyncio.Server | None = None
        self._tls_acceptor: TlsAcceptor | None = None

    async def start(self, host: str, port: int) -> int:
        if self._tls.enabled:
            self._tls_acceptor = TlsAcceptor("HA port", self._tls.mode, self._tls.context(),
                                             self._stream_protocol)
            return await self._tls_acceptor.start(host, port)
        self._server = await asyncio.start_server(self._accept, host, port, reuse_address=True)
        return self._server.sockets[0].getsockname()[1]

    def _stream_protocol(self) -> asyncio.StreamReaderProtocol:
        """What asyncio.start_server builds per connection: a reader, and the writer handed to _accept."""
        return asyncio.StreamReaderProtocol(asyncio.StreamReader(), self._accept)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._factory(reader, writer).start()

    async def shutdown(self) -> None:
        if self._tls_acceptor is not None:
            await self._tls_acceptor.shutdown()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
