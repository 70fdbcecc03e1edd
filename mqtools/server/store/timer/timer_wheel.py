"""TimerWheel: the ``timerwheel`` file, one 32-byte slot per precision tick, twice round the wheel.

A slot says which TimerLog records are due at one time: the first and last record of its chain,
how many, and a magic Apache keeps but does not use. The file holds ``2 * slotsTotal`` slots
(slotsTotal = 7 days of ticks, 604,800, whatever the precision: 38,707,200 bytes), and a time's slot
is ``time / precisionMs % (2 * slotsTotal)``. The slot stores its time as ``time / precisionMs``
(Apache's choice, compatible with its older fixed 1 s precision), so a slot left from an earlier lap
of the wheel is told apart from the one asked for.

Slot layout (big-endian): timeMs/precision long, firstPos long, lastPos long, num int, magic int.

Unlike Apache, which edits a heap copy and copies changed bytes into the mapping on each flush,
this wheel writes the shared mapping directly: a killed process loses nothing the kernel already
has, and ``flush`` (msync, in a worker thread) is what makes it survive a power cut.
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import compress
from pathlib import Path

from mqtools.common.javanum import LONG_MAX

SLOT = struct.Struct(">qqqii")
SLOT_SIZE = SLOT.size  # 32
DAY_SECS = 24 * 3600
TIMER_WHEEL_TTL_DAY = 7
#: Slots of a wheel, regardless of precision (Apache's TIMER_WHEEL_TTL_DAY * DAY_SECS).
SLOTS_TOTAL = TIMER_WHEEL_TTL_DAY * DAY_SECS
BLANK = -1
IGNORE = -2
FILE_NAME = "timerwheel"


@dataclass(frozen=True, slots=True)
class Slot:
    """One slot; ``time_ms`` is -1 for "nothing filed at the time asked"."""

    time_ms: int
    first_pos: int
    last_pos: int
    num: int = 0
    magic: int = 0


EMPTY_SLOT = Slot(-1, -1, -1)


class WheelGeometry:
    """The sans-IO slot arithmetic: which slot a time falls in and what it stores for it."""

    def __init__(self, slots_total: int = SLOTS_TOTAL, precision_ms: int = 1000) -> None:
        self.slots_total = slots_total
        self.precision_ms = precision_ms
        self.length = slots_total * 2 * SLOT_SIZE

    def slot_index(self, time_ms: int) -> int:
        return time_ms // self.precision_ms % (self.slots_total * 2)

    def format_time(self, time_ms: int) -> int:
        """The start of the tick holding ``time_ms``."""
        return time_ms // self.precision_ms * self.precision_ms


class TimerWheel(WheelGeometry):
    """The wheel file mapped read-write; every method runs on one thread (the event loop)."""

    def __init__(self, path: Path, slots_total: int = SLOTS_TOTAL, precision_ms: int = 1000) -> None:
        super().__init__(slots_total, precision_ms)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size not in (0, self.length):
                raise ValueError(f"{self.path}: timer wheel length {size} != expected {self.length}")
            if size == 0:
                os.ftruncate(fd, self.length)
            self.mm = mmap.mmap(fd, self.length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        self.closed = False

    # ------------------------------------------------------------------ slots

    def get_raw_slot(self, time_ms: int) -> Slot:
        t, first, last, num, magic = SLOT.unpack_from(self.mm, self.slot_index(time_ms) * SLOT_SIZE)
        return Slot(t * self.precision_ms, first, last, num, magic)

    def get_slot(self, time_ms: int) -> Slot:
        """The slot of ``time_ms``, or EMPTY_SLOT when the slot holds another lap's time."""
        slot = self.get_raw_slot(time_ms)
        if slot.time_ms != self.format_time(time_ms):
            return EMPTY_SLOT
        return slot

    def put_slot(self, time_ms: int, first_pos: int, last_pos: int, num: int = 0, magic: int = 0) -> None:
        SLOT.pack_into(
            self.mm,
            self.slot_index(time_ms) * SLOT_SIZE,
            time_ms // self.precision_ms,
            first_pos,
            last_pos,
            num,
            magic,
        )

    def revise_slot(self, time_ms: int, first_pos: int, last_pos: int, force: bool) -> None:
        """Recovery's fix-up: set first/last (IGNORE keeps one); a slot of another lap is replaced
        only with ``force`` (its count and magic then start again from 0, as Apache's do)."""
        at = self.slot_index(time_ms) * SLOT_SIZE
        stored = struct.unpack_from(">q", self.mm, at)[0]
        if time_ms // self.precision_ms != stored:
            if force:
                self.put_slot(time_ms, first_pos if first_pos != IGNORE else last_pos, last_pos)
            return
        if first_pos != IGNORE:
            struct.pack_into(">q", self.mm, at + 8, first_pos)
        if last_pos != IGNORE:
            struct.pack_into(">q", self.mm, at + 16, last_pos)

    def get_num(self, time_ms: int) -> int:
        return self.get_slot(time_ms).num

    # ------------------------------------------------------------------ whole-wheel scans

    def live_slots(self, time_start_ms: int) -> Iterator[tuple[int, int, int]]:
        """(first, last, num) of every slot holding a time in [start, start + one wheel round).

        The wheel is read as one array of longs (a slot is four: time, first, last, num<<32|magic) and
        only slots with a time are looked at, so a mostly empty wheel costs a copy, not a loop."""
        total = self.slots_total * 2
        first_index = self.slot_index(time_start_ms)
        base = time_start_ms // self.precision_ms
        longs = array("q")
        longs.frombytes(self.mm)
        if sys.byteorder == "little":
            longs.byteswap()
        times = longs[0::4]
        for j in compress(range(len(times)), times):
            if times[j] == base + (j - first_index) % total:
                yield longs[4 * j + 1], longs[4 * j + 2], longs[4 * j + 3] >> 32

    def check_phy_pos(self, time_start_ms: int, max_offset: int) -> int:
        """The smallest firstPos of a live slot whose lastPos lies past ``max_offset`` (a log end
        recovery cut back); a huge number when there is none. Whole-wheel scan: run it in a thread."""
        min_first = LONG_MAX
        for first, last, _num in self.live_slots(time_start_ms):
            if last > max_offset and first < min_first:
                min_first = first
        return min_first

    def get_all_num(self, time_start_ms: int) -> int:
        """Records filed from ``time_start_ms`` on. Whole-wheel scan: run it in a thread."""
        return sum(num for _f, _l, num in self.live_slots(time_start_ms))

    # ------------------------------------------------------------------ lifecycle

    def flush(self) -> None:
        if not self.closed:
            self.mm.flush()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.mm.close()
