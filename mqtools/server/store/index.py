"""Index files: hash slots + linked entries mapping ``topic#key`` to commitlog offsets.

Layout (RocketMQ's IndexFile and IndexHeader): a 40-byte header (begin/end store timestamp, begin/end physical
offset, used slot count, entry count starting at 1), ``max_hash_slot_num`` 4-byte slots holding
the newest entry number per slot, then ``max_index_num`` 20-byte entries (key hash, physical
offset, seconds since the file's begin timestamp, previous entry number in the slot). Only
hashes are compared; callers filter exact keys, as RocketMQ's clients do.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from mqtools.common import speedups
from mqtools.common.hashing import index_key_hash, index_key_hashes
from mqtools.common.javanum import INT_MAX
from mqtools.common.log_limiter import LimitedLog
from mqtools.server.store.mapped_file import MappedFile

log = logging.getLogger(__name__)

HEADER = struct.Struct(">qqqqii")
HEADER_SIZE = 40
SLOT = struct.Struct(">i")
ENTRY = struct.Struct(">iqii")
ENTRY_SIZE = 20
#: An index file's entries get their blocks this far ahead of them (52,428 entries a call).
ENTRY_CHUNK = 1 << 20
_SLOT_UNPACK = SLOT.unpack_from
_SLOT_PACK = SLOT.pack_into
_ENTRY_PACK = ENTRY.pack_into
_ENTRY_UNPACK = ENTRY.unpack_from


def put_entries(mm, slots: int, entries_at: int, n: int, hashes: list[int], phys: list[int], start: int, end: int,
                diff: int, rest: int) -> tuple[int, int]:
    """Write entries n, n+1, ... for hashes[start:end] (the first with time ``diff``, the rest with
    ``rest``), each chained to its slot's previous entry, and point the slots at them; returns the
    next entry number and how many slots were empty before. ValueError rather than a write past
    the mapping."""
    if HEADER_SIZE + slots * 4 > entries_at or entries_at + (n + end - start) * ENTRY_SIZE > len(mm):
        raise ValueError(f"index entries {n}..{n + end - start} do not fit a mapping of {len(mm)} bytes")
    used = 0
    pos = entries_at + n * ENTRY_SIZE
    for h, p in zip(hashes[start:end], phys[start:end]):
        slot_pos = HEADER_SIZE + (h % slots) * 4
        prev = _SLOT_UNPACK(mm, slot_pos)[0]
        if prev <= 0 or prev > n:
            prev = 0
            used += 1
        _ENTRY_PACK(mm, pos, h, p, diff, prev)
        _SLOT_PACK(mm, slot_pos, n)
        diff = rest
        n += 1
        pos += ENTRY_SIZE
    return n, used


#: A message's dispatch unit as the index reads it: (phys, size, tag code, KEYS, UNIQ_KEY).
Unit = tuple[int, int, int, str | None, str | None]
#: Single messages ``IndexService.build`` keeps before it indexes them together.
WAITING_LIMIT = 64
#: Single messages kept unindexed while no index file can be made, at most (then the oldest are dropped).
WAITING_MAX = 100_000


def unit_key_hashes(prefix: str, units: list[Unit], end_phy: int) -> tuple[list[int], list[int]]:
    """The index key hashes of dispatch units (phys, size, tag code, KEYS, UNIQ_KEY) at ``end_phy`` or past
    it, and the physical offset each key indexes: per message its UNIQ_KEY, then each key, as RocketMQ's
    buildIndex does. ``prefix`` is the topic and "#"."""
    keys_: list[str] = []
    uniq_marks: list[bool] = []
    targets: list[int] = []
    key, mark, target = keys_.append, uniq_marks.append, targets.append
    for phys, _, _, keys, uniq in units:
        if phys < end_phy:
            continue
        if uniq:
            key(uniq)
            mark(True)
            target(phys)
        if keys:
            for k in keys.split(" ") if " " in keys else (keys,):
                if k:
                    key(k)
                    mark(False)
                    target(phys)
    return index_key_hashes(prefix, keys_, uniq_marks), targets


class IndexFile:
    def __init__(self, path: Path, slots: int, max_index: int, *, create: bool) -> None:
        self.slots = slots
        self.max_index = max_index
        self.file = MappedFile(path, 0, HEADER_SIZE + slots * 4 + max_index * ENTRY_SIZE, create=create)
        self.mm = self.file.mm
        self.entries_at = HEADER_SIZE + slots * 4
        self.file.wrote = self.file.size
        (self.begin_ts, self.end_ts, self.begin_phy, self.end_phy, self.slot_count,
         self.index_count) = HEADER.unpack_from(self.mm, 0)
        self.index_count = max(self.index_count, 1)
        self.dirty = create
        # sparse wherever it was never written, loaded or not: the header, the slots (written anywhere) and the
        # next entries get blocks before they are written, as the commitlog does (MappedFile.ensure)
        self.file.reserved = 0
        try:
            self.file.ensure(self.entries_at + self.index_count * ENTRY_SIZE, ENTRY_CHUNK, 0)
        except OSError:
            if create:  # a file that cannot have its blocks is not made: the keys wait (IndexService)
                self.file.destroy()
                raise
            log.warning("index file %s: no blocks for its slots yet (the disk is full); its next write asks again",
                        path.name)

    @property
    def path(self) -> Path:
        return self.file.path

    def is_full(self) -> bool:
        return self.index_count >= self.max_index

    def _write_header(self) -> None:
        HEADER.pack_into(self.mm, 0, self.begin_ts, self.end_ts, self.begin_phy, self.end_phy, self.slot_count,
                         self.index_count)

    def put_many(self, hashes: list[int], phys: list[int], store_ts: int, start: int) -> int:
        """Insert hashes[start:] (entry = hash, phys, seconds since begin, previous entry of the slot),
        all stored at ``store_ts`` (one put), header fields kept in locals; returns the index of the
        first entry that did not fit (len(hashes) when all did)."""
        mm, slots, entries_at = self.mm, self.slots, self.entries_at
        n, slot_count = self.index_count, self.slot_count
        end = min(len(hashes), start + self.max_index - n)
        if end <= start:
            return start
        self.file.ensure(entries_at + (n + end - start) * ENTRY_SIZE, ENTRY_CHUNK, 0)  # OSError: nothing written
        begin_ts = self.begin_ts
        diff = rest = min(max((store_ts - begin_ts) // 1000, 0), INT_MAX) if begin_ts > 0 else 0
        if n <= 1:
            # RocketMQ: the first entry's time is relative to the begin the file was created with
            # (the previous file's end); the file's begin becomes this put.
            self.begin_phy, self.begin_ts = phys[start], store_ts
            rest = 0
        n, used = put_entries(mm, slots, entries_at, n, hashes, phys, start, end, diff, rest)
        self.index_count, self.slot_count = n, slot_count + used
        self.end_phy, self.end_ts = phys[end - 1], store_ts
        self.dirty = True
        return end

    def drop_uncounted_heads(self) -> int:
        """Point every slot that holds an entry the header does not count back at the newest counted entry of
        its chain; returns how many slots changed. A kill between a put's entries and its header leaves such
        slots (the page cache keeps both): the uncounted entries are overwritten by the next put, and a slot
        still pointing at them would hide every earlier entry of its chain from queries and from that put.
        Such a slot is the slot of an uncounted entry (an entry is written before its slot), and the uncounted
        entries run from the count to the first that was never written (files are created zeroed)."""
        count, mm, at = self.index_count, self.mm, self.entries_at
        changed = 0
        for k in range(count, self.max_index):
            h, phys, diff, prev = ENTRY.unpack_from(mm, at + k * ENTRY_SIZE)
            if not (h or phys or diff or prev):
                break
            slot_pos = HEADER_SIZE + (h % self.slots) * 4
            head = _SLOT_UNPACK(mm, slot_pos)[0]
            if head < count:
                continue
            while head >= count:  # an uncounted entry still holds the previous head of its slot
                earlier = ENTRY.unpack_from(mm, at + head * ENTRY_SIZE)[3] if head < self.max_index else 0
                head = earlier if 0 < earlier < head else 0
            _SLOT_PACK(mm, slot_pos, head)
            changed += 1
        if changed:
            self.dirty = True
        return changed

    def first_entry_from(self, phy: int) -> int:
        """Number of the first entry indexing offset ``phy`` or past it (the count when none does), by bisection:
        entries are put in commitlog order."""
        lo, hi = 1, self.index_count
        while lo < hi:
            mid = (lo + hi) // 2
            if _ENTRY_UNPACK(self.mm, self.entries_at + mid * ENTRY_SIZE)[1] >= phy:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def cut_at(self, phy_end: int) -> bool:
        """Forget the entries indexing offset ``phy_end`` or past it, as if they were never put: each of their
        slots points back at the newest entry before them (a slot left pointing at a forgotten entry would hide
        its whole chain), the entries are zeroed (an unwritten entry ends ``drop_uncounted_heads``' scan) and the
        header ends at the last entry kept. The file stays one Apache reads. Returns whether any entry remains."""
        keep, count = self.first_entry_from(phy_end), self.index_count
        if keep >= count:
            return count > 1
        mm, at = self.mm, self.entries_at
        emptied = 0
        for k in range(keep, count):
            slot_pos = HEADER_SIZE + (_ENTRY_UNPACK(mm, at + k * ENTRY_SIZE)[0] % self.slots) * 4
            head = _SLOT_UNPACK(mm, slot_pos)[0]
            if head < keep:  # repaired for an earlier forgotten entry of the slot
                continue
            while head >= keep:
                earlier = _ENTRY_UNPACK(mm, at + head * ENTRY_SIZE)[3] if head < self.max_index else 0
                head = earlier if 0 < earlier < head else 0
            _SLOT_PACK(mm, slot_pos, head)
            emptied += head == 0
        mm[at + keep * ENTRY_SIZE:at + count * ENTRY_SIZE] = bytes((count - keep) * ENTRY_SIZE)
        self.index_count, self.slot_count = keep, max(self.slot_count - emptied, 0)
        self.dirty = True
        if keep == 1:
            return False
        _, self.end_phy, diff, _ = _ENTRY_UNPACK(mm, at + (keep - 1) * ENTRY_SIZE)
        # the first entry's time counts from the file's begin before the put that made it the begin
        self.end_ts = self.begin_ts + (diff * 1000 if keep > 2 else 0)
        return True

    def overlaps(self, begin: int, end: int) -> bool:
        return self.begin_ts <= end and self.end_ts >= begin

    def query(self, key_hash: int, begin: int, end: int, max_num: int, out: list[int]) -> None:
        if self.index_count <= 1:
            return
        n = SLOT.unpack_from(self.mm, HEADER_SIZE + (key_hash % self.slots) * 4)[0]
        base = HEADER_SIZE + self.slots * 4
        while 0 < n < self.index_count and len(out) < max_num:
            h, phys, diff, prev = ENTRY.unpack_from(self.mm, base + n * ENTRY_SIZE)
            if diff < 0:
                break
            ts = self.begin_ts + diff * 1000
            if h == key_hash and begin <= ts <= end:
                out.append(phys)
            if prev <= 0 or prev > self.index_count or prev == n or ts < begin:
                break
            n = prev

    def flush(self) -> None:
        """Write the header (kept in memory between flushes: it is rewritten on every put
        otherwise) and sync the file."""
        if self.dirty and not self.file.closed:
            self._write_header()
            self.file.wrote = self.file.size
            self.file.flushed = 0
            self.file.flush()
            self.dirty = False

    def destroy(self) -> None:
        self.file.destroy()

    def close(self) -> None:
        if not self.file.closed:
            self._write_header()
        self.file.close()


class IndexService:
    """The index files of a store, newest last; keys are ``topic#key`` and ``topic#uniqKey``.

    Single messages are indexed behind the commitlog, as RocketMQ's reput thread does: ``build`` keeps up
    to WAITING_LIMIT of them and indexes them together. Everything that reads the index (``query``,
    ``write_header``, ``build_many``, cleaning, ``close``) indexes what waits first, on the event loop's
    thread. ``flush``, which runs on the flush thread, syncs only what is indexed, so the index
    checkpoint never covers a waiting message and recovery re-dispatches one lost in a crash.
    """

    def __init__(self, directory: Path, slots: int, max_index: int, clock: Callable[[], float]) -> None:
        self.dir = Path(directory)
        self.slots = slots
        self.max_index = max_index
        self.clock = clock
        self.files: list[IndexFile] = []
        #: Runs of (topic, store timestamp, units) from ``build``, in commitlog order.
        self._waiting: list[tuple[str, int, list[Unit]]] = []
        self._waiting_units = 0
        #: After a file could not be made: when to try again (the clock's time; 0 to try at once).
        self._retry_at = 0.0
        self.stalled = LimitedLog(log)

    def load(self, abnormal: bool, index_checkpoint_ts: int) -> int | None:
        """Open existing files; after a crash drop files not covered by the checkpoint, and return the earliest
        store timestamp a dropped file indexed (None: none dropped). The recovery re-dispatch must start at or
        before it: a file can begin several commitlog files before the checkpoint's time (RocketMQ drops the
        file the same way and rebuilds only from the checkpoint's commitlog file, losing the keys before it)."""
        if not self.dir.is_dir():
            return None
        dropped_from: int | None = None
        for path in sorted(p for p in self.dir.iterdir() if p.is_file() and p.name.isdigit()):
            f = IndexFile(path, self.slots, self.max_index, create=False)
            if abnormal and f.end_ts > index_checkpoint_ts:
                log.info("dropping index file %s (newer than the checkpoint)", path.name)
                dropped_from = f.begin_ts if dropped_from is None else min(dropped_from, f.begin_ts)
                f.destroy()
                continue
            self.files.append(f)
        # Only the newest file can be cut short: creating the next one writes the header of the one before.
        if abnormal and self.files and self.files[-1].drop_uncounted_heads():
            log.info("index file %s: slots pointing past its header's count repaired", self.files[-1].path.name)
        return dropped_from

    def _new_file(self) -> IndexFile:
        self.dir.mkdir(parents=True, exist_ok=True)
        name = datetime.fromtimestamp(self.clock()).strftime("%Y%m%d%H%M%S%f")[:17]
        path = self.dir / name
        while path.exists() or (self.files and name <= self.files[-1].path.name):
            name = str(int(name) + 1)
            path = self.dir / name
        f = IndexFile(path, self.slots, self.max_index, create=True)
        if self.files:
            prev = self.files[-1]
            f.begin_ts = f.end_ts = prev.end_ts
            f.begin_phy = f.end_phy = prev.end_phy
            f._write_header()
            prev._write_header()  # synced by the next periodic index flush, never on the event loop
        self.files.append(f)
        return f

    def build(self, topic: str, keys: str | None, uniq: str | None, phys: int, store_ts: int) -> None:
        """Index one message, with the ones waiting once WAITING_LIMIT wait (skipped when the newest file
        already covers its offset). One call per message costs a send several microseconds. The compiled put
        (_cput.pyx, `_index`) does the same without the call."""
        unit = (phys, 0, 0, keys, uniq)
        waiting = self._waiting
        if waiting and waiting[-1][0] == topic and waiting[-1][1] == store_ts:
            waiting[-1][2].append(unit)
        else:
            waiting.append((topic, store_ts, [unit]))
        self._waiting_units += 1
        if self._waiting_units >= WAITING_LIMIT:
            self.write_header()

    def _index_waiting(self, *, patient: bool = False) -> None:
        """Index the single messages ``build`` keeps, if any: every reader of the index calls this first. A file
        that cannot be made (no file descriptor left, no space) leaves them waiting, the put that brought them
        stored, to be indexed by a later call; `patient` (the put path) tries again a second after a failure at
        the earliest, a reader at once. Past WAITING_MAX the oldest are dropped unindexed, as Apache's index
        skips what it cannot build."""
        if not self._waiting or patient and self.clock() < self._retry_at:
            return
        waiting, self._waiting, self._waiting_units = self._waiting, [], 0
        for i, (topic, store_ts, units) in enumerate(waiting):
            try:
                self._build(topic, units, store_ts)
            except OSError as exc:
                self._waiting = waiting[i:]
                self._waiting_units = sum(len(run[2]) for run in self._waiting)
                self._retry_at = self.clock() + 1.0
                dropped = 0
                while self._waiting_units > WAITING_MAX:
                    oldest = len(self._waiting.pop(0)[2])
                    dropped += oldest
                    self._waiting_units -= oldest
                self.stalled.error("build", "index: %s; %d messages wait to be indexed%s", exc, self._waiting_units,
                                   f", {dropped} dropped unindexed" if dropped else "")
                return
        self._retry_at = 0.0

    def build_many(self, topic: str, units: list[Unit], store_ts: int) -> None:
        """Index the messages of one put (one topic, one store time) given as their dispatch units
        (phys, size, tag code, KEYS, UNIQ_KEY), in commitlog order: per message its UNIQ_KEY, then
        each key, as RocketMQ's buildIndex does. Waiting single messages go first."""
        self._waiting.append((topic, store_ts, list(units)))
        self._waiting_units += len(units)
        self._index_waiting(patient=True)

    def _build(self, topic: str, units: list[Unit], store_ts: int) -> None:
        end_phy = self.files[-1].end_phy if self.files else -1
        hashes, targets = unit_key_hashes(topic + "#", units, end_phy)
        if not hashes:
            return
        f = self.files[-1] if self.files else self._new_file()
        # the next file first when the run goes on there: one that cannot be made leaves the whole run waiting
        fresh = self._new_file() if f.index_count + len(hashes) > f.max_index else None
        done = f.put_many(hashes, targets, store_ts, 0)
        if fresh is not None:
            done = fresh.put_many(hashes, targets, store_ts, done)
        while done < len(hashes):
            done = self._new_file().put_many(hashes, targets, store_ts, done)

    def query(self, topic: str, key: str, max_num: int, begin: int, end: int) -> list[int]:
        """Physical offsets whose key hash matches, newest file first (hash collisions included)."""
        self._index_waiting()
        h = index_key_hash(f"{topic}#{key}")
        out: list[int] = []
        for f in reversed(self.files):
            if f.overlaps(begin, end):
                f.query(h, begin, end, max_num, out)
            if f.begin_ts < begin or len(out) >= max_num:
                break
        return out

    def delete_expired(self, min_phy: int) -> int:
        self._index_waiting()
        deleted = 0
        while len(self.files) > 1 and self.files[0].end_phy < min_phy:
            self.files.pop(0).destroy()
            deleted += 1
        return deleted

    def truncate_beyond(self, phy_end: int) -> None:
        """Forget what indexes offset ``phy_end`` or past it, the commitlog being cut there: the keys waiting, the
        newest entries (``IndexFile.cut_at``) and the newest files left without entries but ending past it (their
        end would keep the messages written there next from being indexed). A file is cut, not dropped:
        re-dispatch resumes about ``phy_end``, so the keys a dropped file held before it would be lost for good.
        Apache leaves its index as it is, its entries past the cut pointing at whatever is written there next
        and its end skipping the keys of what is written before that end; its clients drop what does not match."""
        for _, _, units in self._waiting:
            units[:] = [u for u in units if u[0] < phy_end]
        self._waiting = [run for run in self._waiting if run[2]]
        self._waiting_units = sum(len(run[2]) for run in self._waiting)
        while self.files:
            f = self.files[-1]
            kept = f.cut_at(phy_end) if f.index_count > 1 else f.end_phy < phy_end
            if kept:
                return
            self.files.pop().destroy()

    def write_header(self) -> None:
        """Index what waits, then publish the newest file's header into the mapping (once per put or run,
        not once per key)."""
        self._index_waiting(patient=True)
        if self.files:
            self.files[-1]._write_header()

    def flush(self) -> int:
        """Sync every dirty file; returns the newest indexed store timestamp now durable."""
        for f in self.files:
            f.flush()
        return self.files[-1].end_ts if self.files else 0

    def close(self) -> None:
        self._index_waiting()
        for f in self.files:
            f.close()


_compiled = speedups.compiled()
if _compiled is not None:
    put_entries = _compiled.index_put_entries
    unit_key_hashes = _compiled.unit_key_hashes
