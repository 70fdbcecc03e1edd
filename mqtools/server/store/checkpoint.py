"""The ``checkpoint`` file: store timestamps up to which commitlog, consume queues and index are durable.

4096 bytes; physicMsgTimestamp @0, logicsMsgTimestamp @8, indexMsgTimestamp @16 (8-byte
big-endian each). Abnormal recovery starts from the newest commitlog file whose first message
is older than ``min_timestamp``.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

FILE_SIZE = 4096
FIELDS = struct.Struct(">qqq")


class StoreCheckpoint:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        data = os.pread(self.fd, FIELDS.size, 0)
        if len(data) == FIELDS.size:
            self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp = FIELDS.unpack(data)
        if os.fstat(self.fd).st_size < FILE_SIZE:
            os.ftruncate(self.fd, FILE_SIZE)

    @property
    def min_timestamp(self) -> int:
        """Oldest of the commitlog and consume queue marks, minus 3 s of slack (never below 0)."""
        return max(min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000, 0)

    @property
    def min_timestamp_index(self) -> int:
        return min(self.min_timestamp, self.index_msg_timestamp)

    def flush(self) -> None:
        """Write and fsync (call from a worker thread)."""
        os.pwrite(self.fd, FIELDS.pack(self.physic_msg_timestamp, self.logics_msg_timestamp,
                                       self.index_msg_timestamp), 0)
        os.fsync(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
