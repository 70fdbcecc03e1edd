"""Fixed-size files named by their 20-digit start offset, written through mmap, and the queue of them.

A MappedFile is created at full size (zero-filled: recovery finds the end of data by the zero
tail), mapped shared, and written by slice assignment / ``pack_into`` on the event loop (a
memcpy into the page cache). Durability is msync(MS_SYNC) of the written, unflushed range (through
ctypes, libc.py; the mapping's own flush where that msync is not available), which writes back the dirty
mapped pages and releases the GIL, so flushes run in a worker thread without stalling the loop.
Readers get zero-copy memoryview slices of the mapping.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import mmap
import os
from pathlib import Path

from mqtools.server.store import libc

log = logging.getLogger(__name__)

OS_PAGE_SIZE = libc.PAGE


class StoreLoadError(RuntimeError):
    """The on-disk state cannot be loaded (wrong file size, unreadable directory...)."""


def offset_to_file_name(offset: int) -> str:
    return f"{offset:020d}"


class MappedFile:
    """One file of a mapped-file queue: ``start`` is its absolute offset in the logical stream."""

    __slots__ = ("closed", "flushed", "mm", "mv", "path", "reserved", "size", "start", "wrote")

    def __init__(self, path: Path, start: int, size: int, *, create: bool) -> None:
        self.path = path
        self.start = start
        self.size = size
        # The mapping keeps a descriptor of its own (CPython's mmap duplicates the one it is given), so this one is
        # closed at once: a file costs the process one descriptor, as a Java MappedByteBuffer's does, not two (a
        # broker needs one per queue in use). The rare calls that need one (ensure, set_position) open the file.
        fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o644)
        try:
            if os.fstat(fd).st_size != size:
                os.ftruncate(fd, size)
            self.mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        self.mv = memoryview(self.mm)
        self.wrote = 0 if create else size
        self.flushed = self.wrote
        self.closed = False
        self.reserved = 0 if create else size
        """Bytes from the file's start known to have blocks (`ensure`). A file loaded from disk counts as whole:
        recovery cuts the last one back to its data's end (set_position), which frees the blocks past it and brings
        this down to that end, so a restarted broker does not count the data it has as space to allocate."""

    def ensure(self, end: int, chunk: int, keep_free: int) -> None:
        """Allocate the file's blocks up to `end`, and `chunk` bytes beyond it (at most the file's size), before a
        write there. The file is sparse, and a write through the mapping into a hole that the filesystem has no
        block for is a SIGBUS, which ends the process (Apache's JVM turns it into an InternalError and goes on);
        posix_fallocate says ENOSPC instead. OSError(ENOSPC) too when the filesystem would be left with less than
        `keep_free` bytes, so that the files written through mappings without this (consume queues, index) still
        find blocks."""
        if end <= self.reserved:
            return
        new = min(self.size, max(end, self.reserved + chunk))
        fd = os.open(self.path, os.O_RDWR)
        try:
            fs = os.fstatvfs(fd)
            if fs.f_bavail * fs.f_frsize - (new - self.reserved) < keep_free:
                raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)}: less than {keep_free >> 20} MiB would be "
                                            f"left on the filesystem of {self.path.parent}")
            os.posix_fallocate(fd, self.reserved, new - self.reserved)
        finally:
            os.close(fd)
        self.reserved = new

    @property
    def end(self) -> int:
        """Absolute offset just past the written bytes."""
        return self.start + self.wrote

    def is_full(self) -> bool:
        return self.wrote >= self.size

    def free(self) -> int:
        return self.size - self.wrote

    def flush(self) -> int:
        """Sync [flushed, wrote) if anything is unflushed; returns the position made durable.
        Thread-safe with respect to concurrent appends: only the position read before the sync is
        claimed.

        Only that range: pages past the write position may be dirty without data (the commitlog
        warmer populates them ahead of the appends), and a whole-file fdatasync would write them
        out as zeros and then again with their data. msync(MS_SYNC) of a range is Linux's
        fdatasync of that range; the whole mapping's flush where there is no msync through ctypes."""
        target = self.wrote
        if target > self.flushed and not self.closed:
            sync = libc.msync()
            if sync is None:
                self.mm.flush()
            else:
                start = self.flushed - self.flushed % OS_PAGE_SIZE
                outcome = libc.on_pages(sync, self.mm, start, target, libc.MS_SYNC)
                if outcome is None:
                    return self.flushed  # closed meanwhile: nothing of it is claimed
                if outcome != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"msync of {self.path.name}: {os.strerror(err)}")
            self.flushed = max(self.flushed, target)
        return self.flushed

    def pages_dirty(self) -> int:
        return self.wrote // OS_PAGE_SIZE - self.flushed // OS_PAGE_SIZE

    def set_position(self, pos: int) -> None:
        """Move the write position back (recovery) and zero everything after it, so a later scan
        sees the true end and a slave can overwrite the tail."""
        if pos < self.size:
            os.truncate(self.path, pos)  # the filesystem zeroes the tail; the mapping sees it at once
            os.truncate(self.path, self.size)
        self.wrote = pos
        self.flushed = min(self.flushed, pos)
        self.reserved = min(self.reserved, pos)  # the cut freed the tail's blocks

    def close(self) -> None:
        """Unmap and close. Outstanding zero-copy slices keep the mapping alive until released."""
        if self.closed:
            return
        self.closed = True
        try:
            self.mv.release()
            self.mm.close()
        except BufferError:
            log.debug("%s still has readers; the mapping is released with them", self.path)

    def destroy(self) -> None:
        self.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


class MappedFileQueue:
    """Consecutive files of one stream (a commitlog, or one consume queue)."""

    def __init__(self, directory: Path, file_size: int) -> None:
        self.dir = Path(directory)
        self.file_size = file_size
        self.files: list[MappedFile] = []
        self.flushed_where = 0
        #: The file after the last one, made before it is needed (`spare`); create_file takes it.
        self._spare: MappedFile | None = None

    def load(self) -> None:
        """Map every file; all but the last must be exactly ``file_size`` (the last is padded with
        zeros if it was truncated, so a torn tail never blocks start-up)."""
        if not self.dir.is_dir():
            return
        names = sorted(p for p in self.dir.iterdir() if p.is_file() and p.name.isdigit())
        for i, path in enumerate(names):
            actual = path.stat().st_size
            last = i == len(names) - 1
            if actual != self.file_size and not last:
                raise StoreLoadError(f"{path} is {actual} bytes, configured file size is {self.file_size}; "
                                     "changing the file size of an existing store is not supported")
            if actual > self.file_size:
                raise StoreLoadError(f"{path} is larger ({actual}) than the configured file size")
            if actual != self.file_size:
                log.warning("%s is %d bytes, padding it to %d", path, actual, self.file_size)
            self.files.append(MappedFile(path, int(path.name), self.file_size, create=False))

    # ------------------------------------------------------------------ positions

    @property
    def min_offset(self) -> int:
        return self.files[0].start if self.files else 0

    @property
    def max_offset(self) -> int:
        return self.files[-1].end if self.files else 0

    def last(self) -> MappedFile | None:
        return self.files[-1] if self.files else None

    def create_file(self, start: int) -> MappedFile:
        mf = self.spare(start)
        self._spare = None
        self.files.append(mf)
        return mf

    def spare(self, start: int) -> MappedFile:
        """The file starting at `start`, made now and kept aside until create_file asks for it: a writer that must
        not fail halfway (a consume queue's units for a commitlog entry already written) makes its files first."""
        spare = self._spare
        if spare is not None and spare.start == start:
            return spare
        self._drop_spare()
        self.dir.mkdir(parents=True, exist_ok=True)
        self._spare = MappedFile(self.dir / offset_to_file_name(start), start, self.file_size, create=True)
        return self._spare

    def _drop_spare(self) -> None:
        if self._spare is not None:
            self._spare.destroy()
            self._spare = None

    def last_writable(self, start_if_empty: int = 0) -> MappedFile:
        """The last file, or a new one after it when it is full (or the queue is empty)."""
        last = self.files[-1] if self.files else None
        if last is None:
            return self.create_file(start_if_empty - start_if_empty % self.file_size)
        if last.is_full():
            return self.create_file(last.start + self.file_size)
        return last

    def find(self, offset: int) -> MappedFile | None:
        """The file holding absolute ``offset`` (None if it was deleted or is not yet written)."""
        files = self.files
        if not files:
            return None
        i = (offset - files[0].start) // self.file_size
        if 0 <= i < len(files):
            mf = files[i]
            if mf.start <= offset < mf.start + self.file_size:
                return mf
        for mf in files:
            if mf.start <= offset < mf.start + self.file_size:
                return mf
        return None

    # ------------------------------------------------------------------ flush

    def flush(self, least_pages: int = 0) -> int:
        """Sync every file with unflushed data (thread-safe); returns the new flushed offset.

        With ``least_pages > 0`` a non-full file is only synced once that many pages are dirty.
        """
        for mf in list(self.files):
            if mf.end <= self.flushed_where or mf.closed:
                continue
            if least_pages > 0 and not mf.is_full() and mf.pages_dirty() < least_pages:
                break
            target = mf.wrote
            mf.flush()
            self.flushed_where = max(self.flushed_where, mf.start + min(mf.flushed, target))
        return self.flushed_where

    # ------------------------------------------------------------------ truncation / deletion

    def truncate_to(self, offset: int) -> None:
        """Make ``offset`` the end: later files are deleted, the containing file is cut back."""
        keep: list[MappedFile] = []
        for mf in self.files:
            if mf.start + self.file_size <= offset:
                keep.append(mf)
            elif mf.start <= offset:
                mf.set_position(offset - mf.start)
                keep.append(mf)
            else:
                mf.destroy()
        self.files = keep
        self._drop_spare()
        self.flushed_where = min(self.flushed_where, offset)

    def delete_first(self) -> MappedFile:
        mf = self.files.pop(0)
        mf.destroy()
        return mf

    def pop_first(self) -> MappedFile:
        """The first file, out of the queue but not yet unmapped nor unlinked (its caller destroys it, off the
        loop: unmapping and unlinking a written 1 GiB file takes about a quarter of a second)."""
        return self.files.pop(0)

    def destroy(self) -> None:
        for mf in self.files:
            mf.destroy()
        self.files = []
        self._drop_spare()
        self.flushed_where = 0
        try:
            self.dir.rmdir()
        except OSError:
            pass

    def close(self) -> None:
        for mf in self.files:
            mf.close()
        if self._spare is not None:  # an empty file: recovery loads it as the queue's (empty) last one
            self._spare.close()
