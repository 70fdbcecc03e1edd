"""Sans-IO core of RocketMQ's classic master/slave HA protocol.

The HA connection is a raw TCP stream (not remoting): the slave only ever sends 8-byte
big-endian offset reports, the master only ever sends transfer frames
(8-byte from-offset + 4-byte body size + raw commitlog bytes).  Everything here works on
bytes and explicit timestamps so it can be tested without sockets or clocks; the asyncio
code in master.py / slave.py only moves bytes in and out of these objects.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

REPORT_SIZE = 8
HEADER_SIZE = 12
_REPORT = struct.Struct(">q")
_HEADER = struct.Struct(">qi")


class HAProtocolError(Exception):
    """An HA peer sent something the HA protocol does not allow; the connection must be dropped (a remoting
    frame that does not parse is remoting.errors.ProtocolError)."""


class OffsetMismatch(HAProtocolError):
    """A frame does not start at the slave's own max offset (classic HA drops the connection)."""


class MasterBehind(OffsetMismatch):
    """A heartbeat before the slave's own max offset: the master refused the slave as ahead of it (master.py)."""


def encode_report(offset: int) -> bytes:
    """The slave's only message: its commitlog max offset."""
    return _REPORT.pack(offset)


def encode_header(from_offset: int, size: int) -> bytes:
    """Transfer header; with size 0 it is the master's heartbeat."""
    return _HEADER.pack(from_offset, size)


# --------------------------------------------------------------------------- master side


class ReportReader:
    """Master-side decoder of offset reports.

    TCP may deliver a report in pieces (partial) or several at once (coalesced).  Like
    RocketMQ's reader, only the LAST complete 8-byte value of what has arrived counts: the
    older ones are stale acks that a newer one supersedes.  A trailing partial report is
    kept until the rest of it arrives.
    """

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, data: bytes) -> int | None:
        """Add received bytes; return the newest complete offset, or None if none completed."""
        self._pending += data
        complete = len(self._pending) - len(self._pending) % REPORT_SIZE
        if complete == 0:
            return None
        (offset,) = _REPORT.unpack_from(self._pending, complete - REPORT_SIZE)
        del self._pending[:complete]
        if offset < 0:
            raise HAProtocolError(f"negative offset report {offset}")
        return offset

    @property
    def buffered(self) -> int:
        return len(self._pending)


def first_transfer_offset(request_offset: int, master_max_offset: int, file_size: int) -> int:
    """Where the master starts streaming to a slave that asked for `request_offset`.

    An empty slave (0) starts at the beginning of the master's LAST commitlog file, not at 0:
    classic HA never copies older files to a new slave.  Otherwise it starts exactly where
    the slave says it is.
    """
    if request_offset == 0:
        return master_max_offset - master_max_offset % file_size
    return request_offset


@dataclass
class TransferCursor:
    """Master-side writer state for one slave: what to send next, when to heartbeat.

    `next_from` is -1 until the slave's first report chooses the start.  `frame()` is given
    the commitlog bytes readable at `next_from` (from the store's get_commit_log_data, which
    never crosses a file boundary) and returns the bytes to write, or None when there is
    nothing to send yet.
    """

    file_size: int
    batch_size: int = 32 * 1024
    heartbeat_interval: float = 5.0
    next_from: int = -1
    last_write: float = 0.0

    @property
    def started(self) -> bool:
        return self.next_from >= 0

    def start(self, request_offset: int, master_max_offset: int, now: float) -> None:
        self.next_from = first_transfer_offset(request_offset, master_max_offset, self.file_size)
        self.last_write = now

    def frame(self, data: bytes | memoryview | None, now: float) -> list[bytes | memoryview] | None:
        """Next transfer frame (header, body) for `data`, a heartbeat when due, else None."""
        if not self.started:
            return None
        if data is not None and len(data) > 0:
            # A copy: the transport may keep what it could not send yet, and a view would pin
            # the store's mapped file (which it must be able to unmap on cleanup/shutdown).
            body = bytes(data[: self.batch_size])
            parts: list[bytes | memoryview] = [encode_header(self.next_from, len(body)), body]
            self.next_from += len(body)
            self.last_write = now
            return parts
        if now - self.last_write >= self.heartbeat_interval:
            self.last_write = now
            return [encode_header(self.next_from, 0)]
        return None


# --------------------------------------------------------------------------- slave side


@dataclass(frozen=True, slots=True)
class Frame:
    """One decoded transfer frame; `body` empty means heartbeat."""

    from_offset: int
    body: bytes

    @property
    def is_heartbeat(self) -> bool:
        return not self.body

    @property
    def end_offset(self) -> int:
        return self.from_offset + len(self.body)


class FrameReader:
    """Slave-side decoder of transfer frames from an arbitrarily split byte stream."""

    def __init__(self, max_body: int = 64 * 1024 * 1024) -> None:
        self._buf = bytearray()
        self._max_body = max_body

    def feed(self, data: bytes) -> list[Frame]:
        """Add received bytes; return every frame that is now complete, in order."""
        self._buf += data
        frames: list[Frame] = []
        pos = 0
        buf = self._buf
        while len(buf) - pos >= HEADER_SIZE:
            from_offset, size = _HEADER.unpack_from(buf, pos)
            if size < 0 or size > self._max_body or from_offset < 0:
                raise HAProtocolError(f"bad transfer header offset={from_offset} size={size}")
            end = pos + HEADER_SIZE + size
            if len(buf) < end:
                break
            frames.append(Frame(from_offset, bytes(buf[pos + HEADER_SIZE:end])))
            pos = end
        if pos:
            del buf[:pos]
        return frames

    @property
    def buffered(self) -> int:
        return len(self._buf)


def check_frame(own_max_offset: int, frame: Frame) -> None:
    """Classic HA's offset check: a frame (heartbeats too) must start at the slave's max offset.

    Skipped while the slave is empty (0) so that it accepts whatever start the master chose.
    """
    if own_max_offset != 0 and frame.is_heartbeat and frame.from_offset < own_max_offset:
        raise MasterBehind(
            f"the master has only {frame.from_offset} bytes this slave can follow, this slave has {own_max_offset}: "
            "its master lost the tail of its commitlog (a crash?) and refuses it; wipe this slave's store (and "
            "restart it) to re-attach it")
    if own_max_offset != 0 and own_max_offset != frame.from_offset:
        raise OffsetMismatch(
            f"master pushed offset {frame.from_offset} not equal the max phy offset in slave "
            f"{own_max_offset}"
        )


@dataclass
class ReportSchedule:
    """When the slave reports: after each growth of its offset, and every `interval` anyway."""

    interval: float = 5.0
    last_report_time: float = 0.0
    last_reported: int = -1

    def due(self, own_max_offset: int, now: float) -> bool:
        return own_max_offset > self.last_reported or now - self.last_report_time >= self.interval

    def reported(self, offset: int, now: float) -> None:
        self.last_reported = offset
        self.last_report_time = now
