"""EpochFileCache: which master epoch wrote which commitlog range, kept in `epochFileCheckpoint`.

Controller mode numbers masters by epoch. A broker that becomes master appends (epoch, its max offset);
a slave appends (epoch, start offset) when replication first brings it data of a new epoch. Two replicas
agree on their logs up to the end of the newest epoch both have with the same start offset
(`find_consistent_point`); past it a returning old master holds a divergent tail to truncate.

The file is RocketMQ's CheckpointFile layout, so Apache's broker and ours can take over each other's
store: a line with the number of entries, a line with the CRC32 (31 bits) of the entry lines, then one
"epoch-startOffset" line per entry, ascending. The previous content is kept as `.bak`, read when the
main file is damaged (write_atomic keeps it).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

from mqtools.common.atomic_file import write_atomic
from mqtools.common.javanum import LONG_MAX

#: The end offset of the newest epoch: open-ended (Long.MAX_VALUE).
OPEN_END = LONG_MAX
FILE_NAME = "epochFileCheckpoint"


class EpochFileError(Exception):
    """Neither the epoch file nor its backup can be read."""


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int
    end_offset: int = OPEN_END


class EpochFileCache:
    """The entries, ascending by epoch and start offset; `path` None keeps them in memory only."""

    def __init__(self, path: Path | None = None, entries: list[tuple[int, int]] | None = None) -> None:
        self.path = path
        self._starts: list[tuple[int, int]] = list(entries or [])

    # ------------------------------------------------------------------ reading

    def entries(self, last_end: int = OPEN_END) -> list[EpochEntry]:
        """Each entry with its end (the next one's start; `last_end` for the newest)."""
        out = []
        for i, (epoch, start) in enumerate(self._starts):
            end = self._starts[i + 1][1] if i + 1 < len(self._starts) else last_end
            out.append(EpochEntry(epoch, start, end))
        return out

    @property
    def last_epoch(self) -> int:
        return self._starts[-1][0] if self._starts else -1

    @property
    def last_entry(self) -> EpochEntry | None:
        return self.entries()[-1] if self._starts else None

    def entry_of_offset(self, offset: int) -> EpochEntry | None:
        """The entry whose range holds `offset`."""
        for entry in self.entries():
            if entry.start_offset <= offset < entry.end_offset:
                return entry
        return None

    def entry_of_epoch(self, epoch: int) -> EpochEntry | None:
        return next((e for e in self.entries() if e.epoch == epoch), None)

    def find_consistent_point(self, local_max: int, master: list[EpochEntry]) -> int:
        """How far this log agrees with the master's (whose newest entry ends at its max offset): the
        end of the newest local epoch that the master has with the same start, the smaller end of the
        two; -1 when they share no epoch."""
        theirs = {e.epoch: e for e in master}
        for mine in reversed(self.entries(local_max)):
            other = theirs.get(mine.epoch)
            if other is not None and other.start_offset == mine.start_offset:
                return min(mine.end_offset, other.end_offset)
        return -1

    # ------------------------------------------------------------------ changing (each one is written)

    def append(self, epoch: int, start_offset: int) -> bool:
        """Add the newest epoch; False (nothing changes) for an epoch or start not past the last one."""
        if self._starts and (epoch <= self._starts[-1][0] or start_offset < self._starts[-1][1]):
            return False
        self._starts.append((epoch, start_offset))
        self._save()
        return True

    def truncate_from_epoch(self, epoch: int) -> None:
        """Drop the entries of `epoch` and later (a master re-appending its own epoch)."""
        self._keep([e for e in self._starts if e[0] < epoch])

    def truncate_from_offset(self, offset: int) -> None:
        """Drop the entries that start at or past `offset` (a truncated commitlog tail)."""
        self._keep([e for e in self._starts if e[1] < offset])

    def truncate_before(self, offset: int) -> None:
        """Expired commitlog files: the entries that end at or before `offset` go, the one holding it stays."""
        kept = [e for e in self.entries() if e.end_offset > offset]
        self._keep([(e.epoch, e.start_offset) for e in kept])

    def _keep(self, starts: list[tuple[int, int]]) -> None:
        if starts != self._starts:
            self._starts = starts
            self._save()

    # ------------------------------------------------------------------ the file

    @classmethod
    def load(cls, store_root: Path) -> EpochFileCache:
        """The cache of a store (empty when the broker never ran in controller mode)."""
        path = store_root / FILE_NAME
        backup = path.with_name(FILE_NAME + ".bak")
        if not path.exists() and not backup.exists():
            return cls(path)
        for candidate in (path, backup):
            entries = _parse(candidate)
            if entries:
                return cls(path, entries)
        raise EpochFileError(f"{path} and its backup are damaged or empty")

    def _save(self) -> None:
        if self.path is None or not self._starts:  # an empty list is never written, as RocketMQ does
            return
        write_atomic(self.path, render(self._starts).encode())


def render(starts: list[tuple[int, int]]) -> str:
    block = "".join(f"{epoch}-{start}\n" for epoch, start in starts)
    return f"{len(starts)}\n{zlib.crc32(block.encode()) & 0x7FFFFFFF}\n{block}"


def _parse(path: Path) -> list[tuple[int, int]] | None:
    """The entries of one file; None when it is missing, damaged (count or CRC) or empty."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        count, crc = int(lines[0]), int(lines[1])
        body = lines[2:2 + count]
        if count <= 0 or len(body) != count:
            return None
        if crc != 0 and zlib.crc32("".join(f"{line}\n" for line in body).encode()) & 0x7FFFFFFF != crc:
            return None
        entries = []
        for line in body:
            epoch, _, start = line.partition("-")
            entries.append((int(epoch), int(start)))
        return entries
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return None
