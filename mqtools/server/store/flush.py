"""Flushing: commitlog interval flush (ASYNC_FLUSH) and group commit (SYNC_FLUSH), consume queue
and index flushes, and the checkpoint times each flush may advance.

Group commit: each put registers ``(end_offset, future)``; one flusher task syncs whatever is
written at that moment (in a worker thread, so the loop keeps appending) and then releases every
waiter whose end offset is now durable. Many puts therefore share one fdatasync. A put that
waits longer than ``syncFlushTimeout`` reports FLUSH_DISK_TIMEOUT (its data stays stored).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from mqtools.common.log_limiter import LimitedLog
from mqtools.server.lifecycle import cancel_and_wait
from mqtools.server.store.checkpoint import StoreCheckpoint
from mqtools.server.store.commitlog import CommitLog
from mqtools.server.store.config import MessageStoreConfig
from mqtools.server.store.consume_queue import ConsumeQueue
from mqtools.server.store.dispatch import DispatchService
from mqtools.server.store.index import IndexService

log = logging.getLogger(__name__)
#: The store's periodic duties' failures (the flushes here and the cleaning), which fail the same way until the
#: machine is mended: a line a minute, not one a round.
failures = LimitedLog(log)


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
                failures.failure("sync", "commitlog sync failed; waiters will time out")
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

    async def shutdown(self) -> None:
        """Stop the flusher task; waiters still pending learn that their flush did not happen."""
        await cancel_and_wait(self._task)
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


class StoreFlusher:
    """What is flushed when, and the checkpoint times that go with it (RocketMQ's
    FlushRealTimeService and FlushConsumeQueueService timing; group commit is above).

    A checkpoint time is only advanced after the data it vouches for is durable: the commitlog
    time after a full commitlog flush, the consume queue and index times after a thorough one.
    """

    def __init__(self, config: MessageStoreConfig, commitlog: CommitLog, dispatcher: DispatchService,
                 index: IndexService, checkpoint: StoreCheckpoint, clock: Callable[[], float]) -> None:
        self.config = config
        self.commitlog = commitlog
        self.dispatcher = dispatcher
        self.index = index
        self.checkpoint = checkpoint
        self.clock = clock
        self._last_thorough = 0.0

    def sync_flush(self) -> int:
        """Everything written so far (blocking); the group commit's flush."""
        ts = self.dispatcher.last_store_ts
        flushed = self.commitlog.flush(0)
        if flushed >= self.commitlog.max_offset:
            self.checkpoint.physic_msg_timestamp = max(self.checkpoint.physic_msg_timestamp, ts)
        return flushed

    def async_flush(self) -> None:
        """ASYNC_FLUSH tick: whole pages only, except a full flush every thorough interval."""
        cfg = self.config
        now_ms = self.clock() * 1000
        if now_ms - self._last_thorough >= cfg.flush_commit_log_thorough_interval:
            self._last_thorough = now_ms
            self.sync_flush()
        else:
            self.commitlog.flush(cfg.flush_commit_log_least_pages)

    async def consume_queue_loop(self) -> None:
        cfg = self.config
        last_thorough = self.clock()
        while True:
            await asyncio.sleep(cfg.flush_interval_consume_queue / 1000)
            thorough = self.clock() - last_thorough >= cfg.flush_consume_queue_thorough_interval / 1000
            if thorough:
                last_thorough = self.clock()
            cqs = self.dispatcher.all_cqs()
            ts = self.dispatcher.last_dispatch_ts
            try:
                await asyncio.to_thread(self._flush_cqs, cqs, thorough, ts)
            except Exception:  # noqa: BLE001 - a file closed under the flush (topic deleted) must not end it
                failures.failure("cq", "consume queue flush failed")

    def _flush_cqs(self, cqs: list[ConsumeQueue], thorough: bool, logics_ts: int) -> None:
        least = 0 if thorough else self.config.flush_consume_queue_least_pages
        for cq in cqs:
            cq.flush(least)
        if thorough:
            cp = self.checkpoint
            cp.logics_msg_timestamp = max(cp.logics_msg_timestamp, logics_ts)
            cp.index_msg_timestamp = max(cp.index_msg_timestamp, self.index.flush())
            cp.flush()

    def flush_all(self) -> None:
        """Shutdown: everything durable and the checkpoint up to date."""
        ts = self.dispatcher.last_store_ts
        self.commitlog.flush(0)
        dispatch_ts = self.dispatcher.last_dispatch_ts
        for cq in self.dispatcher.all_cqs():
            cq.flush(0)
        index_ts = self.index.flush()
        cp = self.checkpoint
        cp.physic_msg_timestamp = max(cp.physic_msg_timestamp, ts)
        cp.logics_msg_timestamp = max(cp.logics_msg_timestamp, dispatch_ts)
        cp.index_msg_timestamp = max(cp.index_msg_timestamp, index_ts)
        cp.flush()
