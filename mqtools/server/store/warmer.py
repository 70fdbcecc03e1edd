"""Faulting the commitlog's pages in ahead of its write position, off the event loop.

The first write to a page of a fresh mapped file takes a page fault (allocate, zero, map) on
the thread that writes: the event loop, a master's puts and a slave's replicated appends alike.
RocketMQ moves that cost out of the append path by touching a new file's pages in its
allocate-file service (``warmMapedFileEnable``); here a
daemon thread keeps the ``LEAD`` bytes after the write position populated with Linux's
``madvise(MADV_POPULATE_WRITE)``, which faults pages in writable without changing their
contents, so it cannot race with the appends (the CPU it spends is the faults the loop no
longer takes). The call is made through ctypes, which releases the GIL for it. Where the call
does not exist (not Linux, or a kernel before 5.14) the warmer does not start and appends take
their own faults, as before.

It runs unless ``warmMapedFileEnable=false`` (RocketMQ's default is false: its warm-up writes
zeros over each new file). A populated page is dirty, so a flush of the whole file would write the
window out as zeros and then again with its data (a broker taking 28 MB/s dirtied 2.1-2.25x the bytes
it stored); flushes therefore sync only the written range (MappedFile.flush), and the window's pages
are written once, with their data: 1.01-1.07x at 150-190 MB/s, and at 25 MB/s the same 1.2x as
without the warmer. The gain shows where the event loop is the bottleneck and a core is free: an
auto-batching producer went from 128-171k msgs/s (bimodal, by which pages the appends faulted) to
152-160k.

The call is libc.py's, which holds an export of the mapping while it runs.
"""

from __future__ import annotations

import ctypes
import logging
import sys
import threading
from typing import Any

from mqtools.server.store import libc
from mqtools.server.store.mapped_file import OS_PAGE_SIZE, MappedFile

log = logging.getLogger(__name__)

#: How far ahead of the write position pages are kept populated.
LEAD = 64 << 20
#: Populated per call: small enough that a close or a stop is not held up for long.
CHUNK = 4 << 20


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
        fn = libc.madvise_populate()
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
        outcome = libc.on_pages(self._madvise, mf.mm, start, end, libc.MADV_POPULATE_WRITE)
        if outcome is None:
            return False  # closed meanwhile
        if outcome != 0:
            log.warning("commitlog warm-up of %s at %d failed (errno %d); it stops, appends fault pages in "
                        "themselves", mf.path.name, start, ctypes.get_errno())
            self.due = sys.maxsize  # the appender asks no more
            self._stopped = True
            return False
        return True
