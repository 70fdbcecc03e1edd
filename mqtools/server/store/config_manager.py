"""ConfigManager: the one way a JSON table under ``config/`` is loaded and persisted (RocketMQ's
ConfigManager; topics.json, subscriptionGroup.json, consumerOffset.json and delayOffset.json).

Load reads the file and falls back to ``<name>.bak`` when it is missing, empty or unparseable.
Persist writes atomically (``mqtools.common.atomic_file``: temp file, fsync, previous version kept
as ``.bak``, rename).

Newest wins. RocketMQ's persist is synchronized and encodes inside the lock, so the file never
goes back to an older table. Here the table is encoded on the event loop (where it changes) and
written in a worker thread (the loop must not wait for fsync), so two writes can finish out of
order. Each snapshot therefore carries a sequence number taken when it was encoded, and a write
goes ahead only if its sequence is greater than the last one on disk (``seq <= written`` is
skipped). Equal means that very snapshot is already there: writing it again would gain nothing
and would turn the ``.bak`` into a copy of the current file, losing the previous version the
fallback exists for. The sequence is recorded only after the file is in place, so a failed write
never blocks a later attempt.

Write errors are never swallowed: ``persist`` and ``persist_async`` raise OSError; the
fire-and-forget ``persist_soon`` and the periodic ``persist_loop`` log it and leave the table
dirty so the next periodic or shutdown persist writes it.

A request that changed the table is answered once its change is on disk, as RocketMQ's
synchronous persist has it before it answers: ``persist_soon`` keeps the write that will hold its
change in ``unwritten`` until it ends (the running one, or the one queued behind it: LatestStateWriter), and
``until_written`` waits for it (the broker's processors/durable.py). The
loop still never waits for fsync; only the answers to the requests that changed the table do.

fastjson (RocketMQ's Java side) writes integer map keys unquoted (``{0:12}``), which ``json``
rejects; ``loads`` quotes them first (string literals are left untouched).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import logging
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mqtools.common.atomic_file import write_atomic
from mqtools.common.latest_state import LatestStateWriter
from mqtools.common.log_limiter import LimitedLog
from mqtools.server.lifecycle import cancel_and_wait

log = logging.getLogger(__name__)
#: Periodic duties that fail the same way until the machine is mended: a line a minute, not one a round.
_failures = LimitedLog(log)

#: After a failed write, the next try (when no other change brings one sooner).
RETRY_WRITE_S = 5.0
#: What a torn or hand-edited file can make a decoder raise; the backup is tried instead.
DECODE_ERRORS = (ValueError, TypeError, KeyError, AttributeError)

_TOKENS = re.compile(r'("(?:[^"\\]|\\.)*")|([{,]\s*)(-?\d+)(\s*:)')


def _quote_numeric_keys(text: str) -> str:
    def fix(m: re.Match) -> str:
        if m.group(1) is not None:
            return m.group(1)
        return f'{m.group(2)}"{m.group(3)}"{m.group(4)}'

    return _TOKENS.sub(fix, text)


def loads(data: str | bytes) -> Any:
    """Parse JSON as fastjson writes it (unquoted integer keys allowed)."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return json.loads(_quote_numeric_keys(text))


class ConfigManager(ABC):
    """A table persisted as one JSON file; subclasses say how it is encoded and decoded."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        #: Changed since the last snapshot (what ``persist_loop`` looks at).
        self.dirty = False
        self._seq = itertools.count(1)
        self._written_seq = 0
        self._write_lock = threading.Lock()
        self._writer = LatestStateWriter(self._take)
        #: The write whose failure this table has been told to log (each write's, once).
        self._watched: asyncio.Future[None] | None = None
        self._persisting: asyncio.Task | None = None

    @abstractmethod
    def encode(self) -> bytes:
        """The file's bytes for the current table."""

    @abstractmethod
    def decode(self, data: bytes) -> None:
        """Take the table from a file's bytes; raise one of DECODE_ERRORS when they are malformed."""

    # ------------------------------------------------------------------ load

    def load(self) -> bool:
        """Decode the file, else its ``.bak``; False when neither holds a readable table."""
        for candidate in (self.path, self.path.with_name(self.path.name + ".bak")):
            try:
                data = candidate.read_bytes()
            except FileNotFoundError:
                continue
            if not data.strip():
                continue
            try:
                self.decode(data)
            except DECODE_ERRORS as exc:
                log.warning("cannot parse %s (%s); trying the backup", candidate, exc)
                continue
            return True
        return False

    # ------------------------------------------------------------------ persist

    def snapshot(self) -> tuple[int, bytes]:
        """The current table and its sequence number; take it where the table changes."""
        seq = next(self._seq)
        self.dirty = False
        return seq, self.encode()

    def write(self, seq: int, data: bytes) -> bool:
        """Put snapshot ``seq`` on disk unless one at least as new is there (see the module doc).

        Safe from any thread; False when skipped. OSError propagates.
        """
        with self._write_lock:
            if seq <= self._written_seq:
                return False
            write_atomic(self.path, data)
            self._written_seq = seq
            return True

    def persist(self) -> None:
        """Write the current table now, in this thread (start-up, shutdown, tests)."""
        self.write(*self.snapshot())

    async def persist_async(self) -> None:
        """Snapshot on the loop, write in a thread: the loop never waits for fsync."""
        seq, data = self.snapshot()
        await asyncio.to_thread(self.write, seq, data)

    def persist_soon(self) -> None:
        """Write without blocking the event loop and without waiting (a change on a request path);
        outside a running loop, write now. While a write runs, changes wait for the next one, which
        starts when it ends and snapshots every change made meanwhile: a burst of n changes costs a few
        snapshots, not n (each snapshot encodes the whole table, so n of them grow as n squared)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self.persist()
            return
        self.dirty = True
        done = self._writer.request()
        if done is not self._watched:
            self._watched = done
            done.add_done_callback(self._written)

    @property
    def unwritten(self) -> asyncio.Future[None] | None:
        """Settles when every change persist_soon was told of so far is written (or its write failed); None
        when no write runs or waits."""
        return self._writer.pending

    def _take(self) -> Callable[[], bool]:
        seq, data = self.snapshot()
        return functools.partial(self.write, seq, data)

    def _written(self, done: asyncio.Future[None]) -> None:
        exc = None if done.cancelled() else done.exception()
        if exc is None:
            return
        _failures.failure(str(self.path), "persisting %s failed", self.path, exc=exc)
        self.dirty = True
        if self._writer.pending is None:  # no change waits to be written: try again by itself
            asyncio.get_running_loop().call_later(RETRY_WRITE_S, self._write_again)

    def _write_again(self) -> None:
        """A failed write's retry (a topic created while the disk was full is otherwise on disk only once another
        change is made, and lost with the process before that)."""
        if self.dirty and self._writer.pending is None:
            self.persist_soon()

    async def until_written(self) -> None:
        """Wait until the changes made so far are on disk, or their write failed (it was logged, and
        the table stays dirty for the next persist)."""
        unwritten = self.unwritten
        if unwritten is not None:
            await asyncio.wait([unwritten])  # one waiter cancelled must not cancel the write for all

    async def persist_loop(self, interval_s: float) -> None:
        """Every ``interval_s``, persist if the table changed (RocketMQ's scheduled persist of
        consumer and delay offsets: a commit storm never becomes a write storm)."""
        while True:
            await asyncio.sleep(interval_s)
            if not self.dirty:
                continue
            try:
                await self.persist_async()
            except OSError:
                _failures.failure(str(self.path), "persisting %s failed; retrying in %.0f s", self.path, interval_s)
                self.dirty = True

    def start_persisting(self, interval_s: float, name: str) -> None:
        """Run ``persist_loop`` in a task of its own until ``stop_persisting``."""
        self._persisting = asyncio.create_task(self.persist_loop(interval_s), name=name)

    async def stop_persisting(self) -> None:
        """End the periodic persist and write what changed since (a broker's shutdown)."""
        await cancel_and_wait(self._persisting)
        self._persisting = None
        self.persist()
