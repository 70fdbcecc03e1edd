"""A put's waits once it is appended (RocketMQ's CommitLog.handleDiskFlush and handleHA): SYNC_FLUSH's group commit,
then a SYNC_MASTER's wait for a slave, each unless the message's WAIT is "false".

`PutWaits` is the part of MessageStore that decides them: a put that waits for nothing has its result at once; one
that waits only for a slave gets a future the HA service's callback settles (no task a put), and the compiled send
registers its own answer through `when_replicated` instead (no future at all); one that waits for the flush too is a
coroutine. The HA service is the store's `ha_hook`, a `ReplicationHook`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from mqtools.common.brokerrole import BrokerRole
from mqtools.common.loop import settle
from mqtools.server.store.config import MessageStoreConfig
from mqtools.server.store.flush import GroupCommitService, wait_flushed
from mqtools.server.store.results import AppendMessageResult, PutMessageResult, PutMessageStatus

log = logging.getLogger(__name__)


class ReplicationHook(Protocol):
    """What a SYNC_MASTER put asks the HA service (mqtools/server/ha): whether to take it, then to call back
    with its status once a slave has it (or cannot), without a task per waiting put."""

    def refuse_put(self) -> str | None: ...

    def when_replicated(self, end_offset: int, timeout_s: float,
                        done: Callable[[PutMessageStatus], None]) -> None: ...


class PutWaits:
    """A store's decision of what a put waits for, and the waits (MessageStore's base)."""

    config: MessageStoreConfig
    ha_hook: ReplicationHook | None
    _group_commit: GroupCommitService | None

    def _settle(self, append: AppendMessageResult, wait: bool) -> PutMessageResult | Awaitable[PutMessageResult]:
        """The result now when there is nothing to wait for (WAIT=false, or ASYNC_FLUSH on a master that
        does not wait for slaves); else the waits, as an awaitable."""
        gc = self._group_commit
        if not wait:
            if gc is not None:
                gc.wake()
            return PutMessageResult(PutMessageStatus.PUT_OK, append)
        replicate = self.config.broker_role == BrokerRole.SYNC_MASTER and self.ha_hook is not None
        if gc is None:
            return self._replicated(append) if replicate else PutMessageResult(PutMessageStatus.PUT_OK, append)
        return self._waited(gc, append, replicate)

    def _replicated(self, append: AppendMessageResult) -> asyncio.Future[PutMessageResult]:
        """The put's result once the SYNC_MASTER wait for a slave ends: a future the HA service's callback
        settles (a send answered from it needs no task: remoting's server answers when it is done)."""
        future: asyncio.Future[PutMessageResult] = asyncio.get_running_loop().create_future()
        self.when_replicated(append.end_offset, lambda status: settle(future, PutMessageResult(status, append)))
        return future

    def when_replicated(self, end_offset: int, done: Callable[[PutMessageStatus], None]) -> None:
        """Call `done` with a SYNC_MASTER put's status once a slave has `end_offset`, its wait timed out (slaveTimeout)
        or no slave can have it; the compiled send registers its answer here (no future per send)."""
        self.ha_hook.when_replicated(end_offset, self.config.slave_timeout / 1000, done)

    async def _waited(self, gc: GroupCommitService, append: AppendMessageResult, replicate: bool) -> PutMessageResult:
        """SYNC_FLUSH group commit, then SYNC_MASTER replication, for a producer that waits."""
        status = PutMessageStatus.PUT_OK
        fut = gc.request(append.end_offset)
        if not fut.done() and not await wait_flushed(fut, self.config.sync_flush_timeout / 1000):
            log.warning("flush to %d not done within %d ms", append.end_offset, self.config.sync_flush_timeout)
            status = PutMessageStatus.FLUSH_DISK_TIMEOUT
        if replicate:
            replicated = await self._replicated(append)
            if replicated.status is not PutMessageStatus.PUT_OK:
                return replicated
        return PutMessageResult(status, append)
