"""Consume queues: per (topic, queueId) arrays of 20-byte units (commitlog offset, size, tag code).

Unit ``n`` of a queue lives at byte ``n*20`` of the queue's stream, so a logical queue offset is
a direct index. Units are written by dispatch only (master puts, slave replication, recovery);
a unit whose message is already covered (``phys + size <= max_physic_offset``) is a duplicate
and is ignored, which makes re-dispatch after a crash idempotent.
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path

from mqtools.common.javanum import INT_MAX
from mqtools.server.store.mapped_file import MappedFileQueue

log = logging.getLogger(__name__)

UNIT = struct.Struct(">qiq")
UNIT_SIZE = 20
SIZE_FIELD = struct.Struct(">i")
#: Size field of a unit that fills the tail of a queue file (it points at no message).
BLANK_UNIT_SIZE = INT_MAX
BLANK_UNIT = UNIT.pack(0, BLANK_UNIT_SIZE, 0)
#: A queue file's blocks are allocated this far ahead of its units (MappedFile.ensure): 3,276 units a call.
RESERVE_CHUNK = 64 << 10


class ConsumeQueue:
    def __init__(self, root: Path, topic: str, queue_id: int, file_size: int) -> None:
        if file_size % UNIT_SIZE:
            raise ValueError(f"consume queue file size {file_size} is not a multiple of {UNIT_SIZE}")
        self.topic = topic
        self.queue_id = queue_id
        self.queue = MappedFileQueue(root / topic / str(queue_id), file_size)
        self.file_size = file_size
        self.min_logic_offset = 0  # bytes
        self.max_physic_offset = -1  # end (phys + size) of the last unit written

    # ------------------------------------------------------------------ offsets (in units)

    @property
    def max_offset(self) -> int:
        return self.queue.max_offset // UNIT_SIZE

    @property
    def min_offset(self) -> int:
        return max(self.min_logic_offset, self.queue.min_offset) // UNIT_SIZE

    # ------------------------------------------------------------------ write

    def put(self, phys: int, size: int, tags: int, cq_offset: int) -> bool:
        """Write the unit for logical index ``cq_offset``; False when it is a duplicate."""
        if phys + size <= self.max_physic_offset:
            return False
        expected = cq_offset * UNIT_SIZE
        files = self.queue.files
        mf = files[-1] if files else None
        if mf is None or mf.end != expected or mf.is_full():
            # not simply the next unit of the current file: a queue starting past 0, a full file, a gap
            # or a duplicate
            if not files and expected:
                self._start_at(expected)
            mf = self.queue.last_writable(expected)
            end = mf.end
            if expected < end:
                return False
            if expected > end:
                log.error("consume queue %s-%d: unit %d expected but queue ends at %d", self.topic,
                          self.queue_id, cq_offset, end // UNIT_SIZE)
        if mf.wrote + UNIT_SIZE > mf.reserved:  # a write into a hole with no block behind it is a SIGBUS
            mf.ensure(mf.wrote + UNIT_SIZE, RESERVE_CHUNK, 0)
        UNIT.pack_into(mf.mm, mf.wrote, phys, size, tags)
        mf.wrote += UNIT_SIZE
        self.max_physic_offset = phys + size
        return True

    def ready(self, cq_offset: int, count: int = 1) -> None:
        """Make room for the units from ``cq_offset`` on (``count`` of them) before the commitlog entries they
        point to are written: the files they go in are open and have blocks. A put that cannot have them (no
        file descriptor left, a full disk) is then refused with nothing written; failing in ``put`` instead left
        the commitlog holding a message whose queue never got its unit. OSError when it cannot."""
        pos, end = cq_offset * UNIT_SIZE, (cq_offset + count) * UNIT_SIZE
        files = self.queue.files
        if not files:
            if pos:
                self._start_at(pos)
            else:
                self.queue.create_file(0)
        last = files[-1]
        stop = last.start + last.size
        if last.wrote < last.size:
            last.ensure(min(end, stop) - last.start, RESERVE_CHUNK, 0)
        if end > stop:  # on in the next file, which put makes when this one is full
            self.queue.spare(stop).ensure(min(end - stop, self.file_size), RESERVE_CHUNK, 0)

    def put_run(self, units: list[tuple], first_cq_offset: int) -> None:
        """Units for consecutive logical offsets (a batch): one slice write when they all fit the
        current file right at its end, else unit by unit. ``units`` items start with (phys, size, tags)."""
        mf = self.queue.files[-1] if self.queue.files else None
        n = len(units)
        if (mf is not None and mf.end == first_cq_offset * UNIT_SIZE and mf.free() >= n * UNIT_SIZE
                and units[0][0] + units[0][1] > self.max_physic_offset):
            mf.ensure(mf.wrote + n * UNIT_SIZE, RESERVE_CHUNK, 0)
            pack = UNIT.pack
            mf.mm[mf.wrote:mf.wrote + n * UNIT_SIZE] = b"".join([pack(u[0], u[1], u[2]) for u in units])
            mf.wrote += n * UNIT_SIZE
            self.max_physic_offset = units[-1][0] + units[-1][1]
            return
        for i, u in enumerate(units):
            self.put(u[0], u[1], u[2], first_cq_offset + i)

    def _start_at(self, expected: int) -> None:
        """A queue first written at a non-zero offset: blank units fill the file up to it."""
        mf = self.queue.create_file(expected - expected % self.file_size)
        try:
            mf.ensure(expected - mf.start + UNIT_SIZE, RESERVE_CHUNK, 0)
        except OSError:
            self.queue.files.remove(mf)
            mf.destroy()
            raise
        for pos in range(0, expected - mf.start, UNIT_SIZE):
            mf.mm[pos:pos + UNIT_SIZE] = BLANK_UNIT
        mf.wrote = expected - mf.start
        self.min_logic_offset = expected

    # ------------------------------------------------------------------ read

    def unit(self, index: int) -> tuple[int, int, int] | None:
        pos = index * UNIT_SIZE
        mf = self.queue.find(pos)
        if mf is None or pos - mf.start + UNIT_SIZE > mf.wrote:
            return None
        return UNIT.unpack_from(mf.mm, pos - mf.start)

    def units(self, index: int, max_count: int) -> memoryview | None:
        """Contiguous units from ``index`` (up to ``max_count``, never across a file boundary)."""
        pos = index * UNIT_SIZE
        mf = self.queue.find(pos)
        if mf is None or mf.closed:
            return None
        rel = pos - mf.start
        end = min(mf.wrote, rel + max_count * UNIT_SIZE)
        if rel >= end:
            return None
        return mf.mv[rel:end]

    def unit_list(self, index: int, max_count: int) -> list[tuple[int, int, int]] | None:
        """(phys, size, tags code) of up to ``max_count`` units from ``index``, within the file that holds it (as
        Apache's getIndexBuffer reads for QUERY_CONSUME_QUEUE); None when ``index`` is not in the queue."""
        if not self.min_offset <= index < self.max_offset:
            return None
        view = self.units(index, max_count) if max_count > 0 else None
        return [UNIT.unpack_from(view, pos) for pos in range(0, len(view), UNIT_SIZE)] if view is not None else []

    # ------------------------------------------------------------------ recovery

    def recover(self) -> None:
        """Find the end of valid units (first unit with size 0) and cut the queue there."""
        files = self.queue.files
        if not files:
            return
        end = files[0].start
        for mf in files[max(0, len(files) - 3):]:
            valid = self._valid_units(mf)
            end = mf.start + valid * UNIT_SIZE
            if valid * UNIT_SIZE < mf.size:
                break
        self.queue.truncate_to(end)
        self.queue.flushed_where = end
        self._refresh_max_physic()

    @staticmethod
    def _valid_units(mf) -> int:
        """Count of leading valid units in a file (binary search: units are a non-zero prefix)."""
        lo, hi = 0, mf.size // UNIT_SIZE
        while lo < hi:
            mid = (lo + hi) // 2
            if SIZE_FIELD.unpack_from(mf.mm, mid * UNIT_SIZE + 8)[0] > 0:
                lo = mid + 1
            else:
                hi = mid
        while lo > 0:  # a torn unit (size written, offset negative) is not valid either
            phys, size, _ = UNIT.unpack_from(mf.mm, (lo - 1) * UNIT_SIZE)
            if phys >= 0 and size > 0:
                break
            lo -= 1
        return lo

    def _refresh_max_physic(self) -> None:
        self.max_physic_offset = -1
        n = self.max_offset
        if n > self.min_offset:
            u = self.unit(n - 1)
            if u is not None and u[1] != BLANK_UNIT_SIZE:
                self.max_physic_offset = u[0] + u[1]

    def truncate_dirty(self, phy_end: int) -> None:
        """Drop units pointing at or beyond the recovered commitlog end."""
        while self.queue.files:
            mf = self.queue.files[-1]
            first = UNIT.unpack_from(mf.mm, 0)
            if mf.wrote == 0 or (first[1] != BLANK_UNIT_SIZE and first[0] >= phy_end):
                self.queue.files.pop().destroy()
                continue
            keep = 0
            for pos in range(0, mf.wrote, UNIT_SIZE):
                phys, size, _ = UNIT.unpack_from(mf.mm, pos)
                if size <= 0:
                    break
                if size != BLANK_UNIT_SIZE and phys >= phy_end:
                    break
                keep = pos + UNIT_SIZE
            if keep < mf.wrote:
                mf.set_position(keep)
            break
        self._refresh_max_physic()

    # ------------------------------------------------------------------ cleanup

    def delete_expired(self, min_phy: int) -> int:
        """Delete leading files (never the last) whose last unit is below ``min_phy``."""
        deleted = 0
        while len(self.queue.files) > 1:
            mf = self.queue.files[0]
            phys, size, _ = UNIT.unpack_from(mf.mm, mf.wrote - UNIT_SIZE)
            if size != BLANK_UNIT_SIZE and phys >= min_phy:
                break
            self.queue.delete_first()
            deleted += 1
        return deleted

    def correct_min_offset(self, min_phy: int) -> None:
        """min offset = first unit whose message is still in the commitlog (queue end if none)."""
        mf = self.queue.files[0] if self.queue.files else None
        if mf is None:
            return
        for pos in range(max(0, self.min_logic_offset - mf.start), mf.wrote, UNIT_SIZE):
            phys, size, _ = UNIT.unpack_from(mf.mm, pos)
            if size != BLANK_UNIT_SIZE and phys >= min_phy:
                self.min_logic_offset = mf.start + pos
                return
        self.min_logic_offset = mf.start + mf.wrote

    def flush(self, least_pages: int = 0) -> int:
        return self.queue.flush(least_pages)

    def destroy(self) -> None:
        self.queue.destroy()

    def close(self) -> None:
        self.queue.close()
