"""Slave side of AutoSwitch HA (RocketMQ 5's AutoSwitchHAClient): replicate a controller-mode master.

A session says who this slave is (its controller broker id), takes the master's epoch entries and cuts
its own log back to where the two agree (`EpochFileCache.find_consistent_point`: a returning old master
drops the tail nobody acknowledged), then appends the master's frames, adding an epoch entry whenever a
frame carries a new epoch. Unlike Apache's client, which first reports after its 5 s heartbeat interval,
this one reports its offset as soon as the handshake is done, so a rejoining slave streams at once.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Callable
from typing import Protocol

from mqtools.server.ha.autoswitch_protocol import (
    MasterHandshake,
    MasterStreamReader,
    SlaveHandshake,
    Transfer,
    encode_slave_handshake,
    encode_slave_report,
)
from mqtools.server.ha.epoch_file import EpochFileCache
from mqtools.server.ha.protocol import ProtocolError, ReportSchedule
from mqtools.server.ha.slave import CommitLogSink, HAClient
from mqtools.server.lifecycle import cancel_and_wait

log = logging.getLogger("mq.ha.slave")

#: How long a slave waits for the master's handshake answer before it tries again.
HANDSHAKE_TIMEOUT_S = 5.0


class TruncatableSink(CommitLogSink, Protocol):
    def truncate_commit_log(self, offset: int) -> int: ...


class AutoSwitchHAClient(HAClient):
    """Replicates one master's commitlog and epochs into the local store (the classic client's connection,
    reconnect and report loops, with this protocol's session)."""

    def __init__(self, store: TruncatableSink, epochs: EpochFileCache, broker_id: int, *,
                 report_interval: float = 5.0, housekeeping_interval: float = 20.0,
                 reconnect_interval: float = 1.0, sync_from_last_file: bool = False,
                 clock: Callable[[], float] = time.monotonic, wall_clock: Callable[[], float] = time.time,
                 tls: ssl.SSLContext | None = None) -> None:
        super().__init__(store, None, report_interval=report_interval, housekeeping_interval=housekeeping_interval,
                         reconnect_interval=reconnect_interval, clock=clock, wall_clock=wall_clock, tls=tls)
        self._sink = store
        self._epochs = epochs
        self.broker_id = broker_id
        self._sync_from_last_file = sync_from_last_file
        #: Bytes this slave cut from its own log at handshakes (a divergent tail), in all.
        self.truncated_bytes = 0
        #: The master's confirm offset, as its last frame gave it (-1: none yet).
        self.master_confirm_offset = -1

    @staticmethod
    def _encode_report(offset: int) -> bytes:
        return encode_slave_report(offset)

    async def _session(self, address: str) -> None:
        reader, writer = await self._connect(address)
        frames = MasterStreamReader()
        reporter: asyncio.Task[None] | None = None
        try:
            writer.write(encode_slave_handshake(SlaveHandshake(self.broker_id, self._sync_from_last_file)))
            await writer.drain()
            pending = await self._handshake(reader, frames)
            schedule = ReportSchedule(self._report_interval)
            await self._report(writer, schedule)
            reporter = asyncio.create_task(self._report_loop(writer, schedule))
            for item in pending:
                self._take(item)
            await self._transfer_loop(reader, writer, frames, schedule)
        finally:
            await cancel_and_wait(reporter)
            writer.close()

    async def _handshake(self, reader: asyncio.StreamReader, frames: MasterStreamReader) -> list[Transfer]:
        """Wait for the master's answer, cut the local log back to the consistent point; the frames that
        came with the answer."""
        while True:
            data = await asyncio.wait_for(reader.read(1 << 20), HANDSHAKE_TIMEOUT_S)
            if not data:
                raise ProtocolError("master closed the connection during the handshake")
            items = frames.feed(data)
            for i, item in enumerate(items):
                if isinstance(item, MasterHandshake):
                    self._reconcile(item)
                    rest = items[i + 1:]
                    if any(isinstance(x, MasterHandshake) for x in rest):
                        raise ProtocolError("two handshake answers")
                    return [x for x in rest if isinstance(x, Transfer)]

    def _reconcile(self, answer: MasterHandshake) -> None:
        local_max = self._sink.max_phy_offset
        if not self._epochs.entries():
            log.info("HA handshake: no local epochs, continuing from %d", local_max)
            return
        point = self._epochs.find_consistent_point(local_max, answer.epochs)
        if point < 0:
            # No epoch in common (a replica elected before it held any of the old epoch's bytes starts its log
            # with its own epoch). The elected master is the authority: only the bytes from before either's
            # first epoch can be shared; everything after came in epochs it does not have. Apache's slave
            # retries the handshake for ever here.
            first = answer.epochs[0].start_offset if answer.epochs else answer.max_offset
            point = min(first, self._epochs.entries()[0].start_offset, local_max)
            log.warning("HA handshake: no epoch in common with the master (local %s, master %s): keeping %d bytes",
                        self._epochs.entries(local_max), answer.epochs, point)
        cut = self._sink.truncate_commit_log(point) if point < local_max else 0
        self.truncated_bytes += cut
        self._epochs.truncate_from_offset(point)
        log.log(logging.WARNING if cut else logging.INFO,
                "HA handshake: master max %d epoch %d; local log agrees up to %d, %d bytes past it cut",
                answer.max_offset, answer.last_epoch, point, cut)

    async def _transfer_loop(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                             frames: MasterStreamReader, schedule: ReportSchedule) -> None:
        while True:
            try:
                data = await asyncio.wait_for(reader.read(4 << 20), self._housekeeping)
            except TimeoutError:
                raise ProtocolError(f"nothing from master for {self._housekeeping}s") from None
            if not data:
                raise ProtocolError("master closed the connection")
            self.last_read_ms = int(self._wall() * 1000)
            for item in frames.feed(data):
                if isinstance(item, MasterHandshake):
                    raise ProtocolError("a handshake answer in the middle of the transfer")
                self._take(item)
            if self._store.max_phy_offset > schedule.last_reported:
                await self._report(writer, schedule)

    def _take(self, frame: Transfer) -> None:
        own = self._store.max_phy_offset
        if own != 0 and own != frame.offset:
            raise ProtocolError(f"master pushed offset {frame.offset}, local log ends at {own}")
        if frame.epoch > self._epochs.last_epoch:
            self._epochs.append(frame.epoch, frame.epoch_start_offset)
        self.master_confirm_offset = frame.confirm_offset
        if frame.body:
            if not self._store.append_to_commit_log(frame.offset, frame.body):
                raise ProtocolError(f"store refused {len(frame.body)} bytes at {frame.offset} (own max {own})")
            self.speed.add(len(frame.body))
