"""LatestStateWriter: one file of in-memory state written off the event loop, the latest state only.

A server changes a table on its loop and must answer the request that changed it only once the change is on
disk (RocketMQ persists synchronously before it answers), without the loop ever waiting for fsync. Writing a
snapshot per change would hold and render the whole table once per change: a burst of n changes is n
snapshots, n squared in all (200 pipelined PUTs of a 1 MB table held 200 MB). So one write runs at a time, and
every change made while it runs shares the next one, snapshotted when it begins: at most two snapshots in
memory, and each caller still hears back only once a write that holds its change has ended.

The broker's JSON tables (ConfigManager) and the name server's files (kvConfig.json, its properties) both
write through this.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class LatestStateWriter:
    """`take` is called on the loop when a write begins: it snapshots the state and returns the blocking job
    that puts that snapshot on disk, which runs in a worker thread."""

    def __init__(self, take: Callable[[], Callable[[], object]]) -> None:
        self._take = take
        self._running: asyncio.Future[None] | None = None
        #: The write not begun yet, which every request since the running one began shares.
        self._next: asyncio.Future[None] | None = None

    @property
    def pending(self) -> asyncio.Future[None] | None:
        """What settles once every change requested so far is written (or its write failed), None when no
        write runs or waits."""
        return self._next or self._running

    def request(self) -> asyncio.Future[None]:
        """A write of the state as of now: it begins at once if none runs, else it is the one that begins when
        the running one ends. The future settles when it has ended, with the job's exception if it failed."""
        loop = asyncio.get_running_loop()
        if self._running is None:
            self._running = self._begin(loop, loop.create_future())
            return self._running
        if self._next is None:
            self._next = loop.create_future()
        return self._next

    async def write(self) -> None:
        """Returns once the state as of this call is on disk; raises what that write raised (OSError)."""
        await asyncio.shield(self.request())  # a caller cancelled does not cancel the write others await

    async def drain(self) -> None:
        """Waits for the running write and the one pending, if any (their failures are their callers')."""
        while (pending := self.pending) is not None:
            await asyncio.wait([pending])

    def _begin(self, loop: asyncio.AbstractEventLoop, done: asyncio.Future[None]) -> asyncio.Future[None]:
        try:
            job = self._take()
        except Exception as exc:  # noqa: BLE001 - a snapshot that cannot be taken fails this write's callers
            loop.call_soon(self._ended, loop, done, exc)
            return done
        loop.run_in_executor(None, job).add_done_callback(
            lambda fut: self._ended(loop, done, asyncio.CancelledError() if fut.cancelled() else fut.exception()))
        return done

    def _ended(self, loop: asyncio.AbstractEventLoop, done: asyncio.Future[None], exc: BaseException | None) -> None:
        self._running = None
        if done.done():  # cancelled by a caller that awaited it unshielded
            pass
        elif isinstance(exc, asyncio.CancelledError):  # the executor shut down under it
            done.cancel()
        elif exc is not None:
            done.set_exception(exc)
            done.exception()  # logged by the writer's owner: not "never retrieved" when every caller was cancelled
        else:
            done.set_result(None)
        if self._next is not None:
            waiting, self._next = self._next, None
            self._running = self._begin(loop, waiting)
