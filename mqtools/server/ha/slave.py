"""Slave side of HA: the HA client (RocketMQ's HAService.HAClient), the byte pump of both HA flavours.

The session's decisions (when to report, whether a frame fits, the AutoSwitch handshake) live in the sans-IO
slave_session.py; this module only moves bytes: it connects to the master's HA address (TLS when the
broker's client TLS is on, TCP_NODELAY so reports and small frames go at once), hands what arrives to the
session in the connection's own data callback (`Pump`: no read task, stream buffer or timeout per read, which
cost a slave about 2 us of its 16-19 a message under a SYNC_MASTER's load), writes what the session says, and
ticks the session at its next deadline. When the session gives up (or the socket fails) the connection is
closed and re-established after the reconnect interval, which re-reports the real offset. AutoSwitchHAClient (autoswitch_client.py) is this client with
controller mode's session.

A safety net Apache 4.9.7 lacks (its ReputMessageService stops without a word on an entry it cannot read, while
its HAClient goes on acknowledging): when the store's dispatch stops on replicated bytes that are invalid and not
a torn tail still arriving (`DispatchWatch`), they do not continue this slave's log (a master that lost its tail
streamed from the middle of one of its messages). The client then stops for good: it closes the connection
without acknowledging them, logs an error naming the offset, and does not reconnect, so its master counts it
gone and SYNC puts are SLAVE_NOT_AVAILABLE, not SEND_OK for messages this slave cannot serve. Until the dispatch
has passed the offset a connection started at, where such a seam lies, the new bytes are dispatched before the
report that acknowledges them (later, after it, so a SYNC_MASTER's producers do not wait for the dispatch).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import time
from collections.abc import Callable
from typing import Protocol

from mqtools.common.loop import wait_event
from mqtools.server.ha.master import SpeedMeter
from mqtools.server.ha.protocol import HAProtocolError
from mqtools.server.ha.slave_session import CommitLogSink, Output, SlaveSession
from mqtools.server.lifecycle import cancel_and_wait

__all__ = ["CommitLogSink", "HAClient", "Pump"]

log = logging.getLogger("mq.ha.slave")

#: How long a connection to the master may take.
CONNECT_TIMEOUT_S = 5.0
#: The shortest wait for data: a timer that fires a hair early must not make the pump spin.
MIN_WAIT_S = 0.01


class _Dispatcher(Protocol):
    """The store's dispatch as the client reads it (DispatchService)."""

    reput_offset: int
    invalid_at: int


class DispatchWatch:
    """Where the store's dispatch stands: whether it stopped on bytes that do not continue the log, and whether it
    has passed the offset the current connection started at (a store without a dispatcher: never either)."""

    def __init__(self, store: object) -> None:
        self._dispatcher: _Dispatcher | None = getattr(store, "dispatcher", None)
        self._seam = 0

    def begin(self, own_max: int) -> None:
        """A connection starts at `own_max`: the master's bytes join this slave's log there."""
        self._seam = own_max

    def before_report(self) -> bool:
        """Whether new bytes are dispatched before the report that acknowledges them."""
        d = self._dispatcher
        return d is not None and self._seam > 0 and d.reput_offset <= self._seam

    def invalid_at(self) -> int:
        d = self._dispatcher
        return -1 if d is None else d.invalid_at


class HAClient:
    """Replicates one master's commitlog into the local store."""

    def __init__(self, store: CommitLogSink, master_address: str | None = None, *,
                 report_interval: float = 5.0, housekeeping_interval: float = 20.0,
                 reconnect_interval: float = 5.0, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time, tls: ssl.SSLContext | None = None,
                 session: SlaveSession | None = None) -> None:
        """`session`: the protocol's state machine (classic HA's when None)."""
        self._store = store
        self.master_address = master_address
        #: The broker's client TLS (tls.enable): the connection to the master's HA port is wrapped in it.
        self._ssl = tls
        self._reconnect_interval = reconnect_interval
        self._clock = clock
        self._wall = wall_clock
        self.session = session or SlaveSession(store, report_interval=report_interval,
                                               housekeeping_interval=housekeeping_interval)
        self._task: asyncio.Task[None] | None = None
        self._address_changed = asyncio.Event()
        #: The TCP connection is up (a hung master's kernel still accepts it; see `activated`).
        self.connected = False
        #: When the master's last byte arrived on the current connection (the clock's; None: none yet).
        self._read_at: float | None = None
        self._pump: Pump | None = None
        self._dispatch = DispatchWatch(store)
        #: Why this client stopped for good (its replica does not continue its log); None while it runs.
        self.halted: str | None = None
        self.last_read_ms = 0
        self.last_write_ms = 0
        self.speed = SpeedMeter(clock)
        self.sessions = 0

    @property
    def activated(self) -> bool:
        """Replicating: connected, and the master's bytes arrive (one on this connection, the last within the
        housekeeping interval), not merely a TCP connect, which a hung master's kernel still accepts."""
        pump = self._pump
        return (self.connected and pump is not None and not pump.ended.done() and self._read_at is not None
                and self._clock() - self._read_at <= self.session.housekeeping_interval)

    @property
    def last_close_reason(self) -> str:
        """Why the last connection ended ("" while none has), or why the client stopped."""
        return self.halted or self.session.close_reason

    @property
    def mismatches(self) -> int:
        """Frames that did not start at the own max offset (each closed a connection)."""
        return self.session.mismatches

    def update_master_address(self, address: str | None) -> None:
        """From the registration result; used at the next (re)connect, like RocketMQ."""
        if address and address != self.master_address:
            log.info("HA master address %s -> %s", self.master_address, address)
            self.master_address = address
            self._address_changed.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="ha-client")

    async def shutdown(self) -> None:
        await cancel_and_wait(self._task)

    async def _run(self) -> None:
        while self.halted is None:
            address = self.master_address
            if address:
                try:
                    await self._session(address)
                except (OSError, HAProtocolError, ValueError) as exc:
                    log.warning("HA connection to %s ended: %s", address, exc)
                except Exception:  # the client must outlive any one session
                    log.exception("HA session with %s failed", address)
                finally:
                    self.connected = False
            if self.halted is not None:
                return
            self._address_changed.clear()
            await wait_event(self._address_changed, self._reconnect_interval)

    async def _connect(self, address: str) -> tuple[asyncio.BaseTransport, Pump]:
        """A session's connection to the master's HA port (TCP_NODELAY: acks and small frames go at once), its
        bytes going to this client's `Pump`."""
        host, _, port = address.rpartition(":")
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(CONNECT_TIMEOUT_S):  # not wait_for, which can swallow a stop's cancel
            transport, pump = await loop.create_connection(lambda: Pump(self), host, int(port), ssl=self._ssl)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connected = True
        self._read_at, self._pump = None, pump
        self.sessions += 1
        return transport, pump

    async def _session(self, address: str) -> None:
        """One connection: the session sees it open, every byte read (in the pump's callbacks, no task or
        buffer between the socket and the session), every deadline, and its end."""
        transport, pump = await self._connect(address)
        log.info("HA client connected to %s at offset %d", address, self._store.max_phy_offset)
        self._dispatch.begin(self._store.max_phy_offset)
        session = self.session
        try:
            self._perform(pump, session.connected(self._clock()))
            while True:
                deadline = session.next_deadline()
                wait = None if deadline is None else max(MIN_WAIT_S, deadline - self._clock())
                with contextlib.suppress(TimeoutError):  # asyncio.timeout: a stop is never taken for the end
                    async with asyncio.timeout(wait):      # (wait_for may return a result that came with it)
                        await asyncio.shield(pump.ended)
                if pump.ended.done():
                    raise pump.ended.result()
                self._perform(pump, session.tick(self._clock()))  # nothing when no timer is due yet
        except BaseException as exc:  # the loop only ends by an exception; the session must hear of it
            session.closed(str(exc) or type(exc).__name__)
            raise
        finally:
            transport.close()

    def received(self, pump: Pump, data: bytes) -> None:
        """The pump's bytes: what the session makes of them is carried out at once."""
        self.last_read_ms = int(self._wall() * 1000)
        now = self._read_at = self._clock()
        self._perform(pump, self.session.data_received(data, now))

    def _perform(self, pump: Pump, out: Output) -> None:
        """What the session decided: count what it appended, send its bytes, end the connection when it gave
        up, or stop for good when the dispatch found the appended bytes do not continue the log."""
        if pump.ended.done():
            return
        dispatched = False
        if out.appended:
            self.speed.add(out.appended)
            if self._dispatch.before_report():  # where a seam can lie: checked before it is acknowledged
                self._store.dispatch_appended()
                dispatched = True
                if self._halt_on_invalid(pump):
                    return
        if out.send:
            pump.write(out.send)  # the report goes out now ...
            self.last_write_ms = int(self._wall() * 1000)
        if out.appended and not dispatched:
            self._store.dispatch_appended()  # ... and the queues are built while the master answers
            if self._halt_on_invalid(pump):
                return
        if out.error is not None:
            pump.end(out.error)

    def _halt_on_invalid(self, pump: Pump) -> bool:
        """Stop for good when the dispatch stopped on bytes that do not continue this slave's log."""
        at = self._dispatch.invalid_at()
        if at < 0:
            return False
        self.halted = (f"the replicated commitlog does not continue this slave's log at offset {at} (its dispatch "
                       f"stops there: {self.master_address} streamed from the middle of a message of its own, a "
                       "master that lost its tail?); this slave acknowledges nothing more and stays disconnected: "
                       "wipe its store and restart it to re-attach it")
        log.error("HA: %s", self.halted)
        pump.end(HAProtocolError(self.halted))
        return True


class Pump(asyncio.Protocol):
    """The byte pump of one HA connection: bytes read go to the client's session as they arrive, its answers
    are written back; `ended` is settled with why the connection is over."""

    def __init__(self, client: HAClient) -> None:
        self._client = client
        self._transport: asyncio.Transport | None = None
        self.ended: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.ended.done():
            return
        try:
            self._client.received(self, data)
        except Exception as exc:  # noqa: BLE001 - a failing append ends this connection; the client reconnects
            self.end(exc)

    def eof_received(self) -> bool:
        self.end(HAProtocolError("master closed the connection"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.end(exc or HAProtocolError("master closed the connection"))

    def write(self, data: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    def end(self, why: BaseException) -> None:
        if not self.ended.done():
            self.ended.set_result(why)
