"""Slave side of HA: the HA client (RocketMQ's HAService.HAClient), the byte pump of both HA flavours.

The session's decisions (when to report, whether a frame fits, the AutoSwitch handshake) live in the sans-IO
slave_session.py; this module only moves bytes: it connects to the master's HA address (TLS when the
broker's client TLS is on, TCP_NODELAY so reports and small frames go at once), feeds what it reads to the
session, writes what the session says, and waits for data no longer than the session's next deadline. When
the session gives up (or the socket fails) the connection is closed and re-established after the reconnect
interval, which re-reports the real offset. AutoSwitchHAClient (autoswitch_client.py) is this client with
controller mode's session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import time
from collections.abc import Callable

from mqtools.common.loop import wait_event
from mqtools.server.ha.master import SpeedMeter
from mqtools.server.ha.protocol import HAProtocolError
from mqtools.server.ha.slave_session import CommitLogSink, Output, SlaveSession
from mqtools.server.lifecycle import cancel_and_wait

__all__ = ["CommitLogSink", "HAClient"]

log = logging.getLogger("mq.ha.slave")

#: The most bytes one read takes from the socket.
READ_SIZE = 4 << 20
#: The shortest wait for data: a timer that fires a hair early must not make the pump spin.
MIN_WAIT_S = 0.01


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
        self.connected = False
        self.last_read_ms = 0
        self.last_write_ms = 0
        self.speed = SpeedMeter(clock)
        self.sessions = 0

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
        while True:
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
            self._address_changed.clear()
            await wait_event(self._address_changed, self._reconnect_interval)

    async def _connect(self, address: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A session's connection to the master's HA port (TCP_NODELAY: acks and small frames go at once)."""
        host, _, port = address.rpartition(":")
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port), ssl=self._ssl), 5.0)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connected = True
        self.sessions += 1
        return reader, writer

    async def _session(self, address: str) -> None:
        """One connection: the session sees it open, every byte read, every deadline, and its end."""
        reader, writer = await self._connect(address)
        log.info("HA client connected to %s at offset %d", address, self._store.max_phy_offset)
        try:
            await self._pump(reader, writer)
        except BaseException as exc:  # the loop only ends by an exception; the session must hear of it
            self.session.closed(str(exc) or type(exc).__name__)
            raise
        finally:
            writer.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = self.session
        out = session.connected(self._clock())
        while True:
            await self._perform(writer, out)
            deadline = session.next_deadline()
            wait = None if deadline is None else max(MIN_WAIT_S, deadline - self._clock())
            timer = asyncio.timeout(wait)
            try:
                async with timer:
                    data = await reader.read(READ_SIZE)
            except TimeoutError:
                if not timer.expired():
                    raise  # the socket's own ETIMEDOUT, not the deadline
                out = session.tick(self._clock())
                continue
            if not data:
                raise HAProtocolError("master closed the connection")
            self.last_read_ms = int(self._wall() * 1000)
            out = session.data_received(data, self._clock())

    async def _perform(self, writer: asyncio.StreamWriter, out: Output) -> None:
        """What the session decided: count what it appended, send its bytes, close when it gave up."""
        if out.appended:
            self.speed.add(out.appended)
        try:
            if out.send:
                writer.write(out.send)  # the report goes out now (the socket is rarely full) ...
        finally:
            if out.appended:
                self._store.dispatch_appended()  # ... and the queues are built while the master answers
        if out.send:
            await writer.drain()
            self.last_write_ms = int(self._wall() * 1000)
        if out.error is not None:
            raise out.error
