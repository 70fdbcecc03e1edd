"""Files a server reloads when they change (RocketMQ's FileWatchService role), polled by their owner.

A plain class: the owner calls `poll()` on its own schedule (off the event loop: a stat can hang on a
network file system) and `loaded()` once it has read the files. Polled by stat, not watched through inotify:
portable, cheap, and it sees a Kubernetes secret's symlink swap (stat follows the link to a new inode).

Two rules, as operators replace such files:
- a change is reported once the file has stayed as it is for one poll, so a file still being copied is not
  read half-written;
- a file that is missing or cannot be stat'ed is not a change: the one loaded stays in use (Apache's watch
  ignores deletions, so deleting a file and copying the new one in its place never leaves the server without).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

#: What tells two versions of a file apart without reading it: inode, size, mtime and ctime (ctime changes on
#: every write and cannot be set back, so `cp -p` of a file of the same size is seen too).
Stamp = tuple[int, int, int, int]


def stamp(path: Path) -> Stamp | None:
    """The file's stamp, or None when it is missing or cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class FileWatch:
    """The stamps of some files when they were last loaded, and the poll that tells when to load them again."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self.paths = tuple(dict.fromkeys(Path(p) for p in paths))
        self._seen: dict[Path, Stamp | None] = {p: stamp(p) for p in self.paths}
        self._loaded = dict(self._seen)

    def poll(self) -> list[Path]:
        """The files that changed since they were loaded and have not changed since the previous poll (then call
        `loaded()` whether or not reading them worked: a bad edit is reported once, not once a poll)."""
        now = {p: stamp(p) for p in self.paths}
        changed = [p for p in self.paths
                   if now[p] is not None and now[p] != self._loaded[p] and now[p] == self._seen[p]]
        self._seen = now
        return changed

    def adopt(self) -> None:
        """The files as they are now are the ones in use (the owner is about to read them, or wrote them itself)."""
        self._seen = {p: stamp(p) for p in self.paths}
        self.loaded()

    def loaded(self) -> None:
        """The files as the last poll saw them are the ones in use now (a missing one keeps its old stamp)."""
        self._loaded = {p: s if s is not None else self._loaded[p] for p, s in self._seen.items()}
