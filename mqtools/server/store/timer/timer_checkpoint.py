"""TimerCheckpoint: ``config/timercheck``, how far the timer got, so a restart resumes there.

A 4096-byte file (one OS page, as Apache maps it) whose first 56 bytes are seven big-endian longs:
lastReadTimeMs (the next wheel tick to deliver), lastTimerLogFlushPos (TimerLog bytes known to be
on disk), lastTimerQueueOffset and masterTimerQueueOffset (the next rmq_sys_wheel_timer consume
queue offset to enqueue), then the DataVersion: stateVersion, timestamp, counter. The same 56 bytes
(or the first 32, from brokers older than the DataVersion) are the body of GET_TIMER_CHECK_POINT.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

LAYOUT = struct.Struct(">7q")
LEGACY = struct.Struct(">4q")
FILE_SIZE = 4096
FILE_NAME = "timercheck"


@dataclass(slots=True)
class DataVersion:
    """Apache's DataVersion as the checkpoint keeps it."""

    state_version: int = 0
    timestamp: int = 0
    counter: int = 0

    def next_version(self, now_ms: int, state_version: int = 0) -> None:
        self.state_version = state_version
        self.timestamp = now_ms
        self.counter += 1


@dataclass(slots=True)
class TimerCheckpoint:
    last_read_time_ms: int = 0
    last_timer_log_flush_pos: int = 0
    last_timer_queue_offset: int = 0
    master_timer_queue_offset: int = 0
    data_version: DataVersion = field(default_factory=DataVersion)

    def encode(self) -> bytes:
        dv = self.data_version
        return LAYOUT.pack(
            self.last_read_time_ms,
            self.last_timer_log_flush_pos,
            self.last_timer_queue_offset,
            self.master_timer_queue_offset,
            dv.state_version,
            dv.timestamp,
            dv.counter,
        )

    @classmethod
    def decode(cls, data: bytes | memoryview) -> TimerCheckpoint:
        """56 bytes, or the 32 of a checkpoint without a DataVersion."""
        if len(data) >= LAYOUT.size:
            a, b, c, d, sv, ts, cnt = LAYOUT.unpack_from(data)
            return cls(a, b, c, d, DataVersion(sv, ts, cnt))
        a, b, c, d = LEGACY.unpack_from(data)
        return cls(a, b, c, d)


class TimerCheckpointFile:
    """The checkpoint's file: read once at start, rewritten in place by ``flush`` (from a thread)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.existed = self.path.exists()
        self.value = TimerCheckpoint()
        if self.existed:
            data = self.path.read_bytes()
            if len(data) >= LEGACY.size:
                self.value = TimerCheckpoint.decode(data[: LAYOUT.size])

    def flush(self, snapshot: bytes | None = None) -> None:
        """Write ``snapshot`` (default: the current value) at offset 0 and sync it."""
        data = self.value.encode() if snapshot is None else snapshot
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size < FILE_SIZE:
                os.ftruncate(fd, FILE_SIZE)
            os.pwrite(fd, data, 0)
            os.fdatasync(fd)
        finally:
            os.close(fd)
