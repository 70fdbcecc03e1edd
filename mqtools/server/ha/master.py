"""Master side of classic HA (RocketMQ's AcceptSocketService and HAConnection): accept slaves, read
their acks, stream the commitlog to them.

One `HAConnection` per slave: its acks are taken in the connection's own data callback (`SlaveLink`, an
asyncio Protocol: no read task, stream buffer or timeout per read), the housekeeping deadline is one timer
re-armed from the last read, and a write task sends transfer frames from the slave's position (heartbeats
when idle), waiting on the link's flow control. The protocol decisions live in protocol.py; this module
only moves bytes.

A classic slave whose first report lies past what this master can vouch for (`Vouched`: what its store recovered
to when HA started, and what it has streamed since) holds bytes this master never had: its master lost its
commitlog's tail in a crash. Apache 4.9.7's HAConnection takes any first report and streams from it; only later
acks past the master's max close the connection, so once new writes carry the master past the slave's offset it
streams from the middle of one of its messages and the slave diverges silently, acknowledging SYNC puts of
messages it can never serve. Here such a slave is refused on every connection, however far the master has
grown since, with one heartbeat at the vouched offset before the close, so the slave can tell why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Callable
from typing import NamedTuple, Protocol

from mqtools.common.log_limiter import LimitedLog
from mqtools.common.tls_acceptor import TlsAcceptor
from mqtools.common.tls_certificates import TlsCertificateManager
from mqtools.server.ha.protocol import HAProtocolError, ReportReader, TransferCursor, encode_header
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


class Vouched(NamedTuple):
    """What a classic master knows it had: its store's max offset when HA started (what recovery left), and the
    highest offset it has streamed to any slave since."""

    recovered: int
    streamed: int

    @property
    def offset(self) -> int:
        return max(self.recovered, self.streamed)


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

    def __init__(self, host: ConnectionHost, store: CommitLogSource, link: SlaveLink, *, file_size: int,
                 batch_size: int, heartbeat_interval: float, housekeeping_interval: float,
                 clock: Callable[[], float] = time.monotonic, vouched: Callable[[], Vouched] | None = None) -> None:
        """`vouched`: what the master can vouch for, which a first report must not pass (None: no such check,
        as controller mode, whose slaves cut a divergent tail at the handshake)."""
        self._host = host
        self._vouched = vouched
        self._store = store
        self._link = link
        self._clock = clock
        self._housekeeping = housekeeping_interval
        self._reports = ReportReader()
        self.cursor = TransferCursor(file_size, batch_size, heartbeat_interval)
        self.addr = link.peer
        self.slave_request_offset = -1
        self.slave_ack_offset = -1
        #: When the last report arrived (the clock's; None before the first): a slave reports at least every
        #: heartbeat interval, so a stale one says the slave is hung or cut off before the housekeeping drops it.
        self.last_report_at: float | None = None
        #: Set by the service once it counts this connection as a slave (after its first report).
        self.counted = False
        #: The end of what was streamed to this slave (-1: nothing yet).
        self.streamed_to = -1
        self.speed = SpeedMeter(clock)
        self._woken = False
        self._waiter: asyncio.Future[None] | None = None
        self._writer_task: asyncio.Task[None] | None = None
        self._last_read = clock()
        self._housekeeper: asyncio.TimerHandle | None = None
        self.closed = asyncio.Event()

    def start(self) -> None:
        self._last_read = self._clock()
        self._housekeeper = asyncio.get_running_loop().call_later(self._housekeeping, self._housekeep)
        self._writer_task = asyncio.create_task(self._write_loop(), name=f"ha-write-{self.addr}")

    def wake(self) -> None:
        """New data in the commitlog: let the writer send it now instead of at its next poll."""
        self._woken = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def shutdown(self) -> None:
        self._stop_housekeeping()
        await cancel_and_wait(self._writer_task)
        self._shutdown_socket()

    def _stop_housekeeping(self) -> None:
        if self._housekeeper is not None:
            self._housekeeper.cancel()
            self._housekeeper = None

    def _shutdown_socket(self) -> None:
        if not self.closed.is_set():
            self.closed.set()
            self._link.close()
            self._host.on_connection_closed(self)

    def _finish(self, why: str) -> None:
        """The reader's side or the writer ends the connection: the writer is stopped, the host is told."""
        if self.closed.is_set():
            return
        self._host.peer_log.info("closed", "HA connection %s closed: %s", self.addr, why)
        self._stop_housekeeping()
        task = self._writer_task
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        self._shutdown_socket()

    # ------------------------------------------------------------------ the link's callbacks

    def received(self, data: bytes) -> None:
        """Bytes from the slave, in the link's data callback: its reports are applied at once."""
        if self.closed.is_set():
            return
        self._last_read = self._clock()
        try:
            refused = self._take(data)
        except HAProtocolError as exc:
            refused = str(exc)
        except Exception as exc:  # one bad connection must never take the HA service down
            log.exception("HA reader for %s failed", self.addr)
            refused = f"{type(exc).__name__}: {exc}"
        if refused is not None:
            self._finish(refused)

    def lost(self, why: str) -> None:
        """The slave closed the connection, or the socket failed."""
        self._finish(why)

    def _housekeep(self) -> None:
        """No report for housekeeping_interval closes the connection (haHousekeepingInterval); one timer,
        re-armed from the last read, instead of one per read."""
        self._housekeeper = None
        if self.closed.is_set():
            return
        due = self._last_read + self._housekeeping
        now = self._clock()
        if now < due:
            self._housekeeper = asyncio.get_running_loop().call_later(due - now, self._housekeep)
            return
        self._finish(f"no report for {self._housekeeping}s (housekeeping)")

    def _take(self, data: bytes) -> str | None:
        """Apply the slave's reports in `data`; why the connection must close, if it must."""
        for offset in self._feed(data):
            if self.slave_request_offset < 0 and self._vouched is not None:
                vouched = self._vouched()
                if offset > vouched.offset:
                    return self._refuse_ahead(offset, vouched)
            if offset > self._store.max_phy_offset:
                # 4.x: a slave ahead of its master (the master lost data) cannot be
                # reconciled by classic HA; refuse it loudly instead of diverging.
                why = (f"slave reports {offset}, beyond the master's max offset "
                       f"{self._store.max_phy_offset}: wipe the slave's store to re-attach it")
                self._host.peer_log.warning("ahead", "HA slave %s: %s", self.addr, why)
                return why
            self._on_report(offset)
        return None

    def _refuse_ahead(self, offset: int, vouched: Vouched) -> str:
        """A first report past what this master can vouch for: one heartbeat at the vouched offset (a slave sees it
        is ahead of its master; Apache's logs the two offsets) and the close, logged once for this connection."""
        streamed = f"streamed up to {vouched.streamed}" if vouched.streamed >= 0 else "streamed nothing"
        why = (f"slave reports offset {offset}, past the {vouched.offset} bytes this master can vouch for (its store "
               f"recovered to {vouched.recovered}, it {streamed} since): the slave holds bytes this master never had "
               "(it lost its commitlog's tail in a crash?); wipe the slave's store to re-attach it")
        self._host.peer_log.error("ahead", "HA slave %s refused: %s", self.addr, why)
        self._link.write(encode_header(vouched.offset, 0))
        return why

    # ------------------------------------------------------------------ the protocol's hooks

    def _feed(self, data: bytes) -> list[int]:
        """The offsets the slave reported in `data` (classic HA: only the newest counts)."""
        offset = self._reports.feed(data)
        return [] if offset is None else [offset]

    def _begin_transfer(self) -> None:
        """The first heartbeat goes at once (when there is nothing to send), not an interval later: the slave learns
        its master is alive as soon as it asked (a slave counts as activated once its master's bytes arrive)."""
        now = self._clock()
        self.cursor.start(self.slave_request_offset, self._store.max_phy_offset, now)
        self.cursor.last_write = now - self.cursor.heartbeat_interval

    def _next_frame(self) -> list[bytes | memoryview] | None:
        return self.cursor.frame(self._store.get_commit_log_data(self.cursor.next_from), self._clock())

    def _transfer_held(self) -> bool:
        """Whether transfer frames must wait for the slave: classic HA until its first report."""
        return self.slave_request_offset < 0

    def _answer(self) -> bytes | None:
        """An answer the slave is owed, taken by the writer ahead of any transfer frame: the reader never
        writes, so a peer that sends and never reads cannot queue bytes (classic HA owes none)."""
        return None

    def _on_report(self, offset: int) -> None:
        self.last_report_at = self._clock()
        self.slave_ack_offset = offset
        if self.slave_request_offset < 0:
            self.slave_request_offset = offset
            self.wake()
        self._host.on_slave_ack(self, offset)

    async def _write_loop(self) -> None:
        why = "writer stopped"
        link = self._link
        try:
            await self._until_transfer()
            self._begin_transfer()
            log.info("HA slave %s requested %d, transfer from %d", self.addr,
                     self.slave_request_offset, self.cursor.next_from)
            while True:
                if self._transfer_held():
                    await self._until_transfer()
                    continue
                parts = self._next_frame()
                if parts is None:
                    remaining = self.cursor.heartbeat_interval - (self._clock() - self.cursor.last_write)
                    await self._wait_wake(max(0.0, min(0.1, remaining)))
                    continue
                link.writelines(parts)
                if len(parts) > 1:
                    self.streamed_to = self.cursor.next_from
                await link.drain()
                if len(parts) > 1:
                    self.speed.add(len(parts[1]))
        except (OSError, ConnectionError) as exc:
            why = f"write failed: {exc}"
        except Exception as exc:  # see received()
            log.exception("HA writer for %s failed", self.addr)
            why = f"{type(exc).__name__}: {exc}"
        self._finish(why)

    async def _until_transfer(self) -> None:
        """Send what the slave is owed, each answer drained before the next, until the transfer may go on."""
        while True:
            answer = self._answer()
            if answer is not None:
                self._link.write(answer)
                await self._link.drain()
            elif self._transfer_held():
                await self._wait_wake(1.0)
            else:
                return

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


class SlaveLink(asyncio.Protocol):
    """The master's end of one slave's socket: what arrives goes to its HAConnection in the data callback;
    writes go straight to the transport, `drain` waiting while the transport's buffer is over its limit."""

    def __init__(self, accept: Callable[[SlaveLink], HAConnection | None]) -> None:
        self._accept = accept
        self._transport: asyncio.Transport | None = None
        self._conn: HAConnection | None = None
        self._paused = False
        self._drained: asyncio.Future[None] | None = None
        self._lost = False
        self.peer = "?:0"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.peer = f"{peer[0]}:{peer[1]}"
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._conn = self._accept(self)
        if self._conn is None:
            transport.close()  # the host refuses it (a controller-mode broker that is not the master)
        else:
            self._conn.start()

    def data_received(self, data: bytes) -> None:
        if self._conn is not None:
            self._conn.received(data)

    def eof_received(self) -> bool:
        if self._conn is not None:
            self._conn.lost("eof")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._wake_drain()
        if self._conn is not None:
            self._conn.lost(str(exc) if exc else "eof")

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake_drain()

    def _wake_drain(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def write(self, data: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    def writelines(self, parts: list[bytes | memoryview]) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.writelines(parts)

    async def drain(self) -> None:
        """Return when the transport takes more; ConnectionResetError once the connection is gone."""
        if self._paused and not self._lost:
            self._drained = asyncio.get_running_loop().create_future()
            try:
                await self._drained
            finally:
                self._drained = None
        if self._lost or self._transport is None or self._transport.is_closing():
            raise ConnectionResetError("the slave's connection is closed")

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


class HAAcceptor:
    """Listens on haListenPort and turns every accepted socket into an HAConnection.

    With the broker's TLS on, the port follows the broker's tls.server.mode (permissive: TLS
    and plain slaves, enforcing: TLS only) through the same first-byte acceptor as the
    remoting port.
    """

    def __init__(self, accept: Callable[[SlaveLink], HAConnection | None],
                 tls: TlsCertificateManager | None = None) -> None:
        """`accept`: the connection for a new link, or None to refuse it."""
        self._accept = accept
        self._tls = tls
        self._server: asyncio.Server | None = None
        self._tls_acceptor: TlsAcceptor | None = None

    async def start(self, host: str, port: int) -> int:
        if self._tls is not None and self._tls.enabled:
            self._tls_acceptor = TlsAcceptor("HA port", self._tls, self._link)
            return await self._tls_acceptor.start(host, port)
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._link, host, port, reuse_address=True)
        return self._server.sockets[0].getsockname()[1]

    def _link(self) -> SlaveLink:
        return SlaveLink(self._accept)

    async def shutdown(self) -> None:
        if self._tls_acceptor is not None:
            await self._tls_acceptor.shutdown()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
