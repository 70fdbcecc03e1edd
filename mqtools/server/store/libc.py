"""libc's calls on mapped pages (RocketMQ's LibC): madvise and msync, through ctypes.

ctypes releases the GIL for a foreign call, so a worker thread that populates or syncs pages never
holds up the event loop (Python's own ``mmap.flush`` keeps the GIL through its msync). Each call
holds a buffer export of the mapping, so a file closed meanwhile stays mapped until the call
returns (MappedFile.close leaves an exported mapping to be released with its users).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import mmap
import sys
from typing import Any

#: Linux's MADV_POPULATE_WRITE (5.14+); Python's mmap module does not name it on every version.
MADV_POPULATE_WRITE = 23
#: msync's "write the dirty pages of the range and wait" (Linux's value; mmap does not export it).
MS_SYNC = 4
PAGE = mmap.PAGESIZE


@functools.cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError:
        return None


def _function(name: str) -> Any | None:
    libc = _libc()
    fn = getattr(libc, name, None) if libc is not None else None
    if fn is not None:
        fn.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        fn.restype = ctypes.c_int
    return fn


@functools.cache
def madvise_populate() -> Any | None:
    """libc's madvise when MADV_POPULATE_WRITE works here, else None."""
    fn = _function("madvise")
    if fn is None:
        return None
    probe = ctypes.create_string_buffer(2 * PAGE)
    aligned = (ctypes.addressof(probe) + PAGE - 1) // PAGE * PAGE
    return fn if fn(aligned, PAGE, MADV_POPULATE_WRITE) == 0 else None


@functools.cache
def msync() -> Any | None:
    """libc's msync when it syncs here (Linux), else None."""
    fn = _function("msync")
    if fn is None:
        return None
    probe = mmap.mmap(-1, PAGE)
    try:
        return fn if on_pages(fn, probe, 0, PAGE, MS_SYNC) == 0 else None
    finally:
        probe.close()


def on_pages(fn: Any, mapping: mmap.mmap, start: int, end: int, arg: int) -> int | None:
    """fn(address of mapping[start], end - start, arg), `start` a page boundary; its return value, or
    None when the mapping is already closed."""
    try:
        view = (ctypes.c_char * (end - start)).from_buffer(mapping, start)
    except (ValueError, TypeError, BufferError):
        return None
    try:
        return fn(ctypes.addressof(view), end - start, arg)
    finally:
        del view
