"""Commitlog flushing: interval flush (ASYNC_FLUSH) and group commit (SYNC_FLUSH).

Group commit: each put registers ``(end_offset, future)``; one flusher task syncs whatever is
written at that moment (in a worker thread, so the loop keeps appending) and then releases every
waiter whose end offset is now durable. Many puts therefore share one fdatasync. A put that
waits longer than ``syncFlushTimeout`` reports FLUSH_DISK_TIMEOUT (its data stays stored).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)


class GroupCommitService:
    def __init__(self, flush: Callable[[], int], written: Callable[[], int]) -> None:
        self._flush = flush  # blocking: syncs and returns the flushed offset
        self._written = written
        self._waiters: list[tuple[int, asyncio.Future]] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self.flushed = 0
        self.fsyncs = 0

    def start(self, flushed: int) -> None:
        self.flushed = flushed
        self._task = asyncio.create_task(self._run(), name="group-commit")

    def request(self, end_offset: int) -> asyncio.Future:
        """A future resolved with True once ``end_offset`` is durable."""
        fut = asyncio.get_running_loop().create_future()
        if end_offset <= self.flushed:
            fut.set_result(True)
            return fut
        self._waiters.append((end_offset, fut))
        self._wake.set()
        return fut

    def wake(self) -> None:
        self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.flush_once()
            except OSError:
                log.exception("commitlog sync failed; waiters will time out")
                await asyncio.sleep(0.01)

    async def flush_once(self) -> None:
        if self._written() > self.flushed:
            self.flushed = await asyncio.to_thread(self._flush)
            self.fsyncs += 1
        self._release()

    def _release(self) -> None:
        keep = []
        for end, fut in self._waiters:
            if end <= self.flushed:
                if not fut.done():
                    fut.set_result(True)
            elif not fut.done():
                keep.append((end, fut))
        self._waiters = keep
        if keep:
            self._wake.set()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for _, fut in self._waiters:
            if not fut.done():
                fut.set_result(False)
        self._waiters = []


async def wait_flushed(fut: asyncio.Future, timeout_s: float) -> bool:
    """True if the flush completed within the timeout (the request stays registered otherwise)."""
    try:
        return bool(await asyncio.wait_for(asyncio.shield(fut), timeout_s))
    except TimeoutError:
        return False


async def interval_loop(interval_s: float, action: Callable[[], object], name: str) -> None:
    """Run a blocking ``action`` in a worker thread every ``interval_s`` until cancelled."""
    while True:
        await asyncio.sleep(interval_s)
        try:
            await asyncio.to_thread(action)
        except Exception:  # the next interval retries
            log.exception("%s failed", name)
