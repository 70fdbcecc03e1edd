"""The store directory lock: one broker process per store root, as RocketMQ's DefaultMessageStore
does with its ``lock`` file.

An advisory ``flock`` rather than a pid file: the kernel drops it when the process dies, so a
SIGKILLed broker never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class StoreLockedError(RuntimeError):
    """Another process holds the store directory."""


class StoreDirectoryLock:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._fd = -1

    @property
    def held(self) -> bool:
        return self._fd >= 0

    def acquire(self) -> None:
        """Take ``<root>/lock`` without waiting; StoreLockedError when another process has it."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreLockedError(f"store directory {self.root} is locked by another process "
                                   "(is another broker running on it?)") from None
        os.pwrite(fd, b"lock", 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
