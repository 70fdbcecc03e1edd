"""Slave side of classic HA: the HA client (RocketMQ's HAService.HAClient).

Connects to the master's HA address, reports its commitlog max offset (right after
connecting, after every appended frame and every report interval), checks that each frame
starts at its own max offset and appends the raw bytes through the store facade, whose
dispatcher builds consume queues and the index.  Any error closes the connection; it is
re-established after the reconnect interval, which re-reports the real offset.
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
from mqtools.server.ha.protocol import (
    Frame,
    FrameReader,
    ProtocolError,
    ReportSchedule,
    check_frame,
    encode_report,
)
from mqtools.server.lifecycle import cancel_and_wait

log = logging.getLogger("mq.ha.slave")


class CommitLogSink(Protocol):
    @property
    def max_phy_offset(self) -> int: ...

    def append_to_commit_log(self, start_offset: int, data: bytes) -> bool: ...


class HAClient:
    """Replicates one master's commitlog into the local store."""

    def __init__(self, store: CommitLogSink, master_address: str | None = None, *,
                 report_interval: float = 5.0, housekeeping_interval: float = 20.0,
                 reconnect_interval: float = 5.0, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time, tls: ssl.SSLContext | None = None) -> None:
        self._store = store
        self.master_address = master_address
        #: The broker's client TLS (tls.enable): the connection to the master's HA port is wrapped in it.
        self._ssl = tls
        self._report_interval = report_interval
        self._housekeeping = housekeeping_interval
        self._reconnect_interval = reconnect_interval
        self._clock = clock
        self._wall = wall_clock
        self._task: asyncio.Task[None] | None = None
        self._address_changed = asyncio.Event()
        self.connected = False
        self.last_read_ms = 0
        self.last_write_ms = 0
        self.speed = SpeedMeter(clock)
        self.mismatches = 0
        self.sessions = 0

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
                except (OSError, ProtocolError, ValueError) as exc:
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
        reader, writer = await self._connect(address)
        log.info("HA client connected to %s at offset %d", address, self._store.max_phy_offset)
        schedule = ReportSchedule(self._report_interval)
        reporter = asyncio.create_task(self._report_loop(writer, schedule))
        try:
            await self._read_loop(reader, writer, schedule)
        finally:
            await cancel_and_wait(reporter)
            writer.close()

    @staticmethod
    def _encode_report(offset: int) -> bytes:
        return encode_report(offset)

    async def _report(self, writer: asyncio.StreamWriter, schedule: ReportSchedule) -> None:
        offset = self._store.max_phy_offset
        writer.write(self._encode_report(offset))
        await writer.drain()
        schedule.reported(offset, self._clock())
        self.last_write_ms = int(self._wall() * 1000)

    async def _report_loop(self, writer: asyncio.StreamWriter, schedule: ReportSchedule) -> None:
        """The first report (the request offset) goes out at once, then every interval."""
        while True:
            if schedule.due(self._store.max_phy_offset, self._clock()):
                await self._report(writer, schedule)
            wait = self._report_interval - (self._clock() - schedule.last_report_time)
            await asyncio.sleep(max(0.01, wait))

    async def _read_loop(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                         schedule: ReportSchedule) -> None:
        frames = FrameReader()
        while True:
            try:
                data = await asyncio.wait_for(reader.read(4 << 20), self._housekeeping)
            except TimeoutError:
                raise ProtocolError(f"nothing from master for {self._housekeeping}s") from None
            if not data:
                raise ProtocolError("master closed the connection")
            self.last_read_ms = int(self._wall() * 1000)
            for frame in frames.feed(data):
                self._apply(frame)
            if schedule.due(self._store.max_phy_offset, self._clock()) and \
                    self._store.max_phy_offset > schedule.last_reported:
                await self._report(writer, schedule)

    def _apply(self, frame: Frame) -> None:
        own = self._store.max_phy_offset
        try:
            check_frame(own, frame)
        except ProtocolError:
            self.mismatches += 1
            raise
        if frame.body:
            if not self._store.append_to_commit_log(frame.from_offset, frame.body):
                raise ProtocolError(
                    f"store refused {len(frame.body)} bytes at {frame.from_offset} (own max {own})")
            self.speed.add(len(frame.body))
