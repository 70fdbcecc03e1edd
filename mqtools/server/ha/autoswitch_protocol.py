"""Sans-IO core of RocketMQ 5's AutoSwitch HA protocol (controller mode), on the same raw TCP stream as
classic HA but with states, broker ids and epochs.

Slave to master: a 16-byte handshake (state HANDSHAKE, syncFromLastFile and asyncLearner as int16 flags,
the slave's broker id) and 12-byte offset reports (state TRANSFER, max offset). Master to slave: a 20-byte
handshake answer (state, body size, max offset, last epoch) whose body is the master's epoch entries
(epoch int32, start offset int64 each), then 36-byte transfer headers (state, body size, offset, epoch,
epoch start offset, confirm offset) each followed by commitlog bytes; a header with no body is a
heartbeat. Every integer is big-endian. A frame never spans two epochs.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from mqtools.server.ha.epoch_file import OPEN_END, EpochEntry
from mqtools.server.ha.protocol import HAProtocolError


class HAConnectionState(enum.IntEnum):
    READY = 0
    HANDSHAKE = 1
    TRANSFER = 2
    SUSPEND = 3
    SHUTDOWN = 4


_SLAVE_HANDSHAKE = struct.Struct(">ihhq")
_SLAVE_REPORT = struct.Struct(">iq")
_MASTER_HANDSHAKE = struct.Struct(">iiqi")
_EPOCH_ENTRY = struct.Struct(">iq")
_TRANSFER = struct.Struct(">iiqiqq")
SLAVE_HANDSHAKE_SIZE = _SLAVE_HANDSHAKE.size  # 16
SLAVE_REPORT_SIZE = _SLAVE_REPORT.size  # 12
MASTER_HANDSHAKE_SIZE = _MASTER_HANDSHAKE.size  # 20
EPOCH_ENTRY_SIZE = _EPOCH_ENTRY.size  # 12
TRANSFER_HEADER_SIZE = _TRANSFER.size  # 36
#: The most epoch entries a handshake answer carries (RocketMQ's buffer holds 1000).
MAX_EPOCH_ENTRIES = 1000


@dataclass(frozen=True, slots=True)
class SlaveHandshake:
    broker_id: int
    sync_from_last_file: bool = False
    async_learner: bool = False


@dataclass(frozen=True, slots=True)
class SlaveReport:
    offset: int


@dataclass(frozen=True, slots=True)
class MasterHandshake:
    max_offset: int
    last_epoch: int
    epochs: list[EpochEntry]
    """The master's entries, the newest ending at its max offset."""


@dataclass(frozen=True, slots=True)
class Transfer:
    offset: int
    epoch: int
    epoch_start_offset: int
    confirm_offset: int
    body: bytes

    @property
    def is_heartbeat(self) -> bool:
        return not self.body


def encode_slave_handshake(h: SlaveHandshake) -> bytes:
    return _SLAVE_HANDSHAKE.pack(HAConnectionState.HANDSHAKE, int(h.sync_from_last_file), int(h.async_learner),
                                 h.broker_id)


def encode_slave_report(offset: int) -> bytes:
    return _SLAVE_REPORT.pack(HAConnectionState.TRANSFER, offset)


def encode_master_handshake(max_offset: int, epochs: list[EpochEntry]) -> bytes:
    shown = epochs[-MAX_EPOCH_ENTRIES:]
    last = shown[-1].epoch if shown else -1
    body = b"".join(_EPOCH_ENTRY.pack(e.epoch, e.start_offset) for e in shown)
    return _MASTER_HANDSHAKE.pack(HAConnectionState.HANDSHAKE, len(body), max_offset, last) + body


def encode_transfer_header(offset: int, size: int, epoch: int, epoch_start: int, confirm_offset: int) -> bytes:
    return _TRANSFER.pack(HAConnectionState.TRANSFER, size, offset, epoch, epoch_start, confirm_offset)


class SlaveStreamReader:
    """Master side: the slave's handshakes and reports from an arbitrarily split stream."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[SlaveHandshake | SlaveReport]:
        self._buf += data
        out: list[SlaveHandshake | SlaveReport] = []
        buf, pos = self._buf, 0
        while len(buf) - pos >= 4:
            (state,) = struct.unpack_from(">i", buf, pos)
            if state == HAConnectionState.HANDSHAKE:
                if len(buf) - pos < SLAVE_HANDSHAKE_SIZE:
                    break
                _, last_file, learner, broker_id = _SLAVE_HANDSHAKE.unpack_from(buf, pos)
                out.append(SlaveHandshake(broker_id, bool(last_file), bool(learner)))
                pos += SLAVE_HANDSHAKE_SIZE
            elif state == HAConnectionState.TRANSFER:
                if len(buf) - pos < SLAVE_REPORT_SIZE:
                    break
                _, offset = _SLAVE_REPORT.unpack_from(buf, pos)
                if offset < 0:
                    raise HAProtocolError(f"negative offset report {offset}")
                out.append(SlaveReport(offset))
                pos += SLAVE_REPORT_SIZE
            else:
                raise HAProtocolError(f"unexpected HA state {state} from the slave")
        del buf[:pos]
        return out


class MasterStreamReader:
    """Slave side: the master's handshake answer and transfer frames from an arbitrarily split stream."""

    def __init__(self, max_body: int = 64 * 1024 * 1024) -> None:
        self._buf = bytearray()
        self._max_body = max_body

    def feed(self, data: bytes) -> list[MasterHandshake | Transfer]:
        self._buf += data
        out: list[MasterHandshake | Transfer] = []
        buf, pos = self._buf, 0
        while len(buf) - pos >= 4:
            (state,) = struct.unpack_from(">i", buf, pos)
            if state == HAConnectionState.HANDSHAKE:
                if len(buf) - pos < MASTER_HANDSHAKE_SIZE:
                    break
                _, size, max_offset, last_epoch = _MASTER_HANDSHAKE.unpack_from(buf, pos)
                if size < 0 or size % EPOCH_ENTRY_SIZE or size > MAX_EPOCH_ENTRIES * EPOCH_ENTRY_SIZE:
                    raise HAProtocolError(f"bad handshake body size {size}")
                end = pos + MASTER_HANDSHAKE_SIZE + size
                if len(buf) < end:
                    break
                starts = [_EPOCH_ENTRY.unpack_from(buf, p) for p in range(pos + MASTER_HANDSHAKE_SIZE, end,
                                                                          EPOCH_ENTRY_SIZE)]
                epochs = [EpochEntry(e, s, starts[i + 1][1] if i + 1 < len(starts) else max_offset)
                          for i, (e, s) in enumerate(starts)]
                out.append(MasterHandshake(max_offset, last_epoch, epochs))
                pos = end
            elif state == HAConnectionState.TRANSFER:
                if len(buf) - pos < TRANSFER_HEADER_SIZE:
                    break
                _, size, offset, epoch, start, confirm = _TRANSFER.unpack_from(buf, pos)
                if size < 0 or size > self._max_body or offset < 0:
                    raise HAProtocolError(f"bad transfer header offset={offset} size={size}")
                end = pos + TRANSFER_HEADER_SIZE + size
                if len(buf) < end:
                    break
                out.append(Transfer(offset, epoch, start, confirm, bytes(buf[pos + TRANSFER_HEADER_SIZE:end])))
                pos = end
            else:
                raise HAProtocolError(f"unexpected HA state {state} from the master")
        del buf[:pos]
        return out


def first_transfer_offset(request_offset: int, min_offset: int, max_offset: int, file_size: int,
                          sync_from_last_file: bool) -> int:
    """Where the master starts: the reported offset, or for an empty slave the commitlog's first byte
    (the start of the last file with syncFromLastFile)."""
    if request_offset > 0:
        return request_offset
    if sync_from_last_file:
        return max_offset - max_offset % file_size
    return min_offset


@dataclass
class EpochTransferCursor:
    """Master-side writer state for one slave: the next frame from `next_from`, clipped to the batch size
    and to the end of the epoch it lies in, or a heartbeat when the slave heard nothing for the interval."""

    batch_size: int = 32 * 1024
    heartbeat_interval: float = 5.0
    next_from: int = -1
    last_write: float = 0.0

    def start(self, offset: int, now: float) -> None:
        self.next_from = offset
        self.last_write = now

    def frame(self, data: bytes | memoryview | None, epochs: list[EpochEntry], confirm_offset: int,
              now: float) -> list[bytes | memoryview] | None:
        """`data`: the commitlog bytes readable at `next_from` (never past a file's end); `epochs`: the
        master's entries, the newest open-ended."""
        if self.next_from < 0 or not epochs:
            return None
        entry = next((e for e in epochs if e.start_offset <= self.next_from < e.end_offset), None)
        end = entry.end_offset if entry is not None else OPEN_END
        if entry is None and self.next_from < epochs[0].start_offset:
            # bytes written before the first epoch (a store that ran in classic mode): labelled with
            # the first epoch, never sent in one frame with its own bytes
            entry, end = epochs[0], epochs[0].start_offset
        if data is not None and len(data) > 0 and entry is not None:
            size = min(len(data), self.batch_size, end - self.next_from)
            body = bytes(data[:size])  # a copy: a view would pin the mapped file the store may unmap
            header = encode_transfer_header(self.next_from, size, entry.epoch, entry.start_offset, confirm_offset)
            self.next_from += size
            self.last_write = now
            return [header, body]
        if now - self.last_write >= self.heartbeat_interval:
            self.last_write = now
            shown = entry or epochs[0]
            return [encode_transfer_header(self.next_from, 0, shown.epoch, shown.start_offset, confirm_offset)]
        return None
