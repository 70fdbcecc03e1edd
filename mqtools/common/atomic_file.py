"""Replace a small file so that a crash leaves either the old or the new version, never a mix."""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    """Unique temp file + fsync, previous version kept as `<name>.bak` (as RocketMQ's string2File
    does), rename into place, fsync the directory. Concurrent writers never share a temp file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        _keep_previous(path, path.with_name(path.name + ".bak"))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _keep_previous(path: Path, bak: Path) -> None:
    """The current version becomes `bak` while it stays in place (a hard link put over `bak`), so that `path` is
    never missing: moved away first, a crash before the new version's rename left no file, which a reader that
    does not look at `.bak` took for an empty table (every ACL 2.0 user gone). Where the file system has no hard
    links, it is moved as before."""
    staging = bak.with_name(f"{bak.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with contextlib.suppress(FileNotFoundError):  # left by a crash of a writer with this pid and thread
        os.unlink(staging)
    try:
        os.link(path, staging)
    except FileNotFoundError:  # no previous version (or a concurrent writer moved it away)
        return
    except OSError:
        with contextlib.suppress(FileNotFoundError):
            os.replace(path, bak)
        return
    os.replace(staging, bak)
    with contextlib.suppress(FileNotFoundError):  # rename leaves both names when `bak` is already that file
        os.unlink(staging)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
