"""TimerLog: the append-only file of timer records, 52 bytes each, chained backwards per wheel slot.

Each record says "the commitlog message at (offsetPy, sizePy) is due at writeTime + delay"; ``prevPos``
points at the previous record of the same slot (-1 for the first), so a slot is read from its
``lastPos`` back to its first record. Files are named and sized as the store's other mapped-file
queues (20-digit start offset, ``mappedFileSizeTimerLog`` bytes, 100 MiB by default) under
``<storePathRootDir>/timerlog/``; a record never straddles two files: when a record plus a 16-byte
blank does not fit, a blank (size of the rest, 0, BLANK_MAGIC) ends the file, as Apache's TimerLog
writes it, so either broker reads the other's files.

Record layout (big-endian)::

    0  size        int   (52)
    4  prevPos     long
    12 magic       int   (bit 0 default, bit 1 roll, bit 2 delete)
    16 writeTime   long  (the wheel's write time when enqueued, ms)
    24 delay       int   (delayed time - writeTime, ms)
    28 offsetPy    long  (commitlog offset of the rmq_sys_wheel_timer message)
    36 sizePy      int
    40 topicHash   int   (Java hashCode of REAL_TOPIC, for the metrics)
    44 reserved    long  (0)
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from pathlib import Path

from mqtools.server.store.mapped_file import MappedFileQueue

log = logging.getLogger(__name__)

UNIT = struct.Struct(">iqiqiqiiq")
UNIT_SIZE = UNIT.size  # 52
#: Offset of offsetPy / sizePy inside a record (Apache's UNIT_PRE_SIZE_FOR_MSG) and of the topic hash.
UNIT_PRE_SIZE_FOR_MSG = 28
UNIT_PRE_SIZE_FOR_METRIC = 40
BLANK = struct.Struct(">iqi")
MIN_BLANK_LEN = BLANK.size  # 16
#: 0xBBCCDDEE ^ (1880681586 + 8) as a signed int: the same value as the commitlog's end-of-file blank.
BLANK_MAGIC_CODE = -875286124
MAGIC_DEFAULT = 1
MAGIC_ROLL = 1 << 1
MAGIC_DELETE = 1 << 2
DEFAULT_FILE_SIZE = 100 * 1024 * 1024
_HEAD = struct.Struct(">iqi")  # size, prevPos, magic


def is_magic_ok(magic: int) -> bool:
    """Only the low four bits may be set in a record's magic (Apache's isMagicOK)."""
    return (magic | 0xF) == 0xF


def need_roll(magic: int) -> bool:
    return (magic & MAGIC_ROLL) != 0


def need_delete(magic: int) -> bool:
    return (magic & MAGIC_DELETE) != 0


@dataclass(frozen=True, slots=True)
class TimerRecord:
    """One record; ``delayed_time`` is the slot time it was filed under (write time + delay)."""

    prev_pos: int
    magic: int
    write_time: int
    delay: int
    offset_py: int
    size_py: int
    topic_hash: int
    reserved: int = 0
    size: int = UNIT_SIZE

    @property
    def delayed_time(self) -> int:
        return self.write_time + self.delay

    def encode(self) -> bytes:
        return UNIT.pack(self.size, self.prev_pos, self.magic, self.write_time, self.delay, self.offset_py,
                         self.size_py, self.topic_hash, self.reserved)

    @classmethod
    def decode(cls, buf: bytes | memoryview, pos: int = 0) -> TimerRecord:
        size, prev, magic, write, delay, off, sz, th, res = UNIT.unpack_from(buf, pos)
        return cls(prev, magic, write, delay, off, sz, th, res, size)


def encode_record(prev_pos: int, magic: int, write_time: int, delay: int, offset_py: int, size_py: int,
                  topic_hash: int) -> bytes:
    """A new record's bytes, as TimerRecord(...).encode() gives them without building the record: the
    enqueue path writes one per timer message."""
    return UNIT.pack(UNIT_SIZE, prev_pos, magic, write_time, delay, offset_py, size_py, topic_hash, 0)


def offset_for_last_unit(file_size: int) -> int:
    """Where the last whole record of a full file starts (Apache's getOffsetForLastUnit)."""
    return file_size - (file_size - MIN_BLANK_LEN) % UNIT_SIZE - MIN_BLANK_LEN - UNIT_SIZE


class TimerLog:
    """The mapped-file queue of timer records; writes happen on the event loop, flushes in a thread."""

    def __init__(self, directory: Path, file_size: int = DEFAULT_FILE_SIZE) -> None:
        self.file_size = file_size
        self.queue = MappedFileQueue(Path(directory), file_size)

    def load(self) -> None:
        self.queue.load()

    @property
    def max_offset(self) -> int:
        return self.queue.max_offset

    @property
    def flushed_where(self) -> int:
        return self.queue.flushed_where

    def append(self, data: bytes) -> int:
        """Write one record; its absolute position. A file without room for it and a blank is closed
        with a blank record and the record goes at the start of the next file."""
        mf = self.queue.last_writable()
        free = mf.free()
        if len(data) + MIN_BLANK_LEN > free:
            BLANK.pack_into(mf.mm, mf.wrote, free, 0, BLANK_MAGIC_CODE)
            mf.wrote = mf.size
            mf = self.queue.last_writable()
        pos = mf.start + mf.wrote
        mf.mm[mf.wrote : mf.wrote + len(data)] = data
        mf.wrote += len(data)
        return pos

    def read(self, pos: int) -> TimerRecord | None:
        """The record at absolute ``pos`` (None when its file is gone or the bytes are not written)."""
        mf = self.queue.find(pos)
        if mf is None or mf.closed:
            return None
        rel = pos - mf.start
        if rel + UNIT_SIZE > mf.wrote:
            return None
        return TimerRecord.decode(mf.mv, rel)

    def flush(self) -> int:
        return self.queue.flush(0)

    def scan_valid(self, begin: int, check: bool) -> tuple[int, list[tuple[int, TimerRecord]]]:
        """Walk the records from the file holding ``begin`` to the end: (end offset, records).

        With ``check`` the walk stops at the first record whose size or magic is wrong (a torn or
        never-written tail: zeros), and the end is where it stopped; a blank closes its file and
        the walk goes on in the next, as Apache's recoverAndRevise does.
        """
        files = self.queue.files
        if not files:
            return 0, []
        index = len(files) - 1
        while index > 0 and begin < files[index].start:
            index -= 1
        end = files[index].start
        found: list[tuple[int, TimerRecord]] = []
        for mf in files[index:]:
            limit = mf.size if check else mf.wrote
            position, stop = 0, False
            while position + UNIT_SIZE <= limit:
                size, _prev, magic = _HEAD.unpack_from(mf.mv, position)
                if magic == BLANK_MAGIC_CODE:
                    break
                if check and (not is_magic_ok(magic) or size != UNIT_SIZE):
                    stop = True
                    break
                if size == UNIT_SIZE and is_magic_ok(magic):
                    found.append((mf.start + position, TimerRecord.decode(mf.mv, position)))
                position += UNIT_SIZE
            end = mf.start + position
            if stop:
                break
        return end, found

    def truncate_dirty(self, offset: int) -> None:
        """Make ``offset`` the end of the log: later files go, the holding file is cut (zeroed) there."""
        self.queue.truncate_to(offset)
        self.queue.flushed_where = offset

    def delete_expired(self, min_commitlog_offset: int) -> int:
        """Drop leading files whose last record points below the commitlog's first offset (those
        messages are gone anyway); never the last file. Returns how many files were deleted."""
        deleted = 0
        last_unit = offset_for_last_unit(self.file_size)
        while len(self.queue.files) > 1:
            mf = self.queue.files[0]
            size, _prev, magic = _HEAD.unpack_from(mf.mv, last_unit)
            if size != UNIT_SIZE or not is_magic_ok(magic):
                break
            offset_py = struct.unpack_from(">q", mf.mv, last_unit + UNIT_PRE_SIZE_FOR_MSG)[0]
            if offset_py >= min_commitlog_offset:
                break
            self.queue.delete_first()
            deleted += 1
        return deleted

    def close(self) -> None:
        self.queue.close()
