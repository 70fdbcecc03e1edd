"""Faulting the commitlog's pages in ahead of its write position, off the event loop.

The first write to a page of a fresh mapped file takes a page fault (allocate, zero, map) on
the thread that writes: the event loop. RocketMQ moves that cost out of the append path by
touching a new file's pages in its allocate-file service (``warmMapedFileEnable``); here a
daemon thread keeps the ``LEAD`` bytes after the write position populated with Linux's
``madvise(MADV_POPULATE_WRITE)``, which faults pages in writable without changing their
contents, so it cannot race with the appends (the CPU it spends is the faults the loop no
longer takes). The call is made through ctypes, which releases the GIL for it. Where the call
does not exist (not Linux, or a kernel before 5.14) the warmer does not start and appends take
their own faults, as before.

It runs only with ``warmMapedFileEnable=true`` (off by default, as in RocketMQ). The cost is disk
writes: a populated page is dirty, so a flush that comes before its data writes it as zeros,
and its data later writes it again. With the 64 MiB window and ASYNC_FLUSH every 500 ms, a broker
taking 28 MB/s dirtied 2.1-2.25x the bytes it stored, against 1.09-1.13x without the warmer.
RocketMQ's own warm-up writes zeros over each new file too. The gain shows where the event loop
is the bottleneck and a core is free: an auto-batching producer went from 112-154k (bimodal) to
134-149k msgs/s.

Each call holds a buffer export of the mapping, so a file closed meanwhile stays mapped until
the call returns (MappedFile.close leaves an exported mapping to be released with its users).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys
import threading
from typing import Any

from mqtools.server.store.mapped_file import OS_PAGE_SIZE, MappedFile

log = logging.getLogger(__name__)

#: Linux's MADV_POPULATE_WRITE (5.14+); Python's mmap module does not name it on every version.
MADV_POPULATE_WRITE = 23
#: How far ahead of the write position pages are kept populated.
LEAD = 64 << 20
#: Populated per call: small enough that a close or a stop is not held up for long.
CHUNK = 4 << 20


def _madvise() -> Any | None:
    """libc's madvise when MADV_POPULATE_WRITE works here, else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = libc.madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    fn.restype = ctypes.c_int
    probe = ctypes.create_string_buffer(2 * OS_PAGE_SIZE)
    aligned = (ctypes.addressof(probe) + OS_PAGE_SIZE - 1) // OS_PAGE_SIZE * OS_PAGE_SIZE
    return fn if fn(aligned, OS_PAGE_SIZE, MADV_POPULATE_WRITE) == 0 else None


class MappedFileWarmer:
    """Keeps [write position, write position + LEAD) of the newest file populated.

    The appender calls ``request(mf, pos)`` when ``pos`` passes ``due`` or the file changed (one
    comparison per append); the thread does the rest.
    """

    def __init__(self, madvise: Any, lead: int = LEAD, chunk: int = CHUNK) -> None:
        self._madvise = madvise
        self.lead = lead
        self.chunk = chunk
        self.file: MappedFile | None = None
        self.warmed = 0
        """Position in ``file`` up to which pages are populated."""
        self.due = -1
        """Write position past which the appender asks for more."""
        self._target = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self.caught_up = threading.Event()
        """Set when everything requested so far is populated (or cannot be)."""
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="commitlog-warmer", daemon=True)

    @classmethod
    def start_if_supported(cls, **kw: int) -> MappedFileWarmer | None:
        fn = _madvise()
        if fn is None:
            log.info("MADV_POPULATE_WRITE is not available: commitlog pages are faulted in by the appends")
            return None
        warmer = cls(fn, **kw)
        warmer.start()
        return warmer

    def start(self) -> None:
        self._thread.start()

    def request(self, mf: MappedFile, pos: int) -> None:
        """Populate ``mf`` from ``pos`` up to ``pos + lead`` (a new file starts over from ``pos``)."""
        with self._lock:
            if mf is not self.file:
                self.file, self.warmed = mf, pos - pos % OS_PAGE_SIZE
            ahead = pos + self.lead
            self._target = min(mf.size, ahead + -ahead % OS_PAGE_SIZE)  # every call starts on a page
            self.due = min(mf.size, pos + self.lead // 2)
            self.caught_up.clear()
        self._wake.set()

    def stop(self) -> None:
        """End the thread (it finishes the call it is in: one chunk)."""
        self._stopped = True
        self._wake.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopped:
            self._wake.wait()
            self._wake.clear()
            while not self._stopped:
                with self._lock:
                    mf, start, target = self.file, self.warmed, self._target
                    if mf is None or start >= target:
                        self.caught_up.set()
                        break
                end = min(target, start + self.chunk)
                if not self._populate(mf, start, end):
                    self.caught_up.set()
                    break
                with self._lock:
                    if self.file is mf:
                        self.warmed = max(self.warmed, end)

    def _populate(self, mf: MappedFile, start: int, end: int) -> bool:
        """One call over [start, end) of ``mf``; False when the file is gone or the call failed (a failure,
        such as a full disk, stops the warmer for good)."""
        try:
            view = (ctypes.c_char * (end - start)).from_buffer(mf.mm, start)
        except (ValueError, TypeError, BufferError):
            return False  # closed meanwhile
        try:
            if self._madvise(ctypes.addressof(view), end - start, MADV_POPULATE_WRITE) != 0:
                log.warning("commitlog warm-up of %s at %d failed (errno %d); it stops, appends fault pages in "
                            "themselves", mf.path.name, start, ctypes.get_errno())
                self.due = sys.maxsize  # the appender asks no more
                self._stopped = True
                return False
        finally:
            del view
        return True
