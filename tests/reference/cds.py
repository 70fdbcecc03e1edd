"""Class-data-sharing archives for the harness JVMs (tests/reference/java and java-grpc), the JVMs the reference
tests start most often.

A harness run loads some thousands of classes (Apache's client, Netty, the harness) before it sends a message: about
1.3 s of CPU for four messages here, 0.8-0.9 s with the classes mapped from a dynamic archive (JDK 13 and later:
-XX:ArchiveClassesAtExit writes one when the JVM exits, -XX:SharedArchiveFile maps it). The first run of each
harness to its end writes the archive under its own name, moved into place once that run has ended well; the runs
after it map it. An archive the JVM cannot use is ignored by the JVM, which then loads its classes as before. The
archives live in the reference cache beside the jars, per JDK (the java binary and its time), so a new JDK writes
its own. The JVM's warnings go to stderr, never into the event stream a harness prints on stdout.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import shutil
from pathlib import Path

from fetch import CACHE

#: The JVM's unified log to stderr, warnings and worse only (its default is stdout, which the harnesses own).
LOG_TO_STDERR = ("-Xlog:disable", "-Xlog:all=warning:stderr")

_names = itertools.count(1)


@functools.cache
def _jdk() -> str:
    """The JDK on the PATH, as a directory name: its java binary's real path and modification time (once a
    session)."""
    java = os.path.realpath(shutil.which("java") or "java")
    stamp = os.stat(java).st_mtime_ns if os.path.exists(java) else 0
    return hashlib.sha1(f"{java}:{stamp}".encode()).hexdigest()[:12]


class Archive:
    """The archive of one harness (a classpath and its main class)."""

    def __init__(self, name: str) -> None:
        self.path = CACHE / "cds" / _jdk() / f"{name}.jsa"

    def map_flags(self) -> list[str]:
        """The JVM flags that map the archive where it is there (a JVM left running: it never writes one)."""
        if self.path.is_file():
            return [f"-XX:SharedArchiveFile={self.path}", *LOG_TO_STDERR]
        return [*LOG_TO_STDERR]

    def flags(self) -> tuple[list[str], Path | None]:
        """The JVM flags of a run to its end: they map the archive, or, none there yet, write it to a name of its
        own, which `settle` moves into place; and that name."""
        if self.path.is_file():
            return self.map_flags(), None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        written = self.path.with_name(f"{self.path.stem}.{os.getpid()}-{next(_names)}.writing")
        return [f"-XX:ArchiveClassesAtExit={written}", *LOG_TO_STDERR], written

    def settle(self, written: Path | None, ended_well: bool) -> None:
        """After a run that wrote the archive: into place if the run ended well, else gone."""
        if written is None:
            return
        if ended_well and written.is_file():
            os.replace(written, self.path)
        else:
            written.unlink(missing_ok=True)
