"""One owned queue's consumption state (RocketMQ's ProcessQueue and PullRequest).

The push consumer pulls into it, the consume services take messages out of it, and the
rebalance drops it; the offset committed for the queue is always `commit_point()`, so a
message still being consumed is never skipped by a commit.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.message import MessageExt
from mqtools.remoting.bodies import MessageQueue

#: An orderly consumer's lock not renewed for this long is not trusted: the queue's consumption pauses until it is
#: renewed, and the rebalance gives the queue up (Apache's REBALANCE_LOCK_MAX_LIVE_TIME, 30 s; the broker keeps a
#: lock 60 s, and an orderly consumer renews every 20 s, Rebalance.renew_locks_periodically, and at each rebalance).
LOCK_MAX_LIVE_MS = 30_000


@dataclass
class ProcessQueue:
    """One owned queue: its pull task, what is in flight, where to pull next.

    `generation` grows on every offset reset; work started under an older generation
    finds it changed and leaves the queue alone.
    """

    mq: MessageQueue
    next_offset: int
    task: asyncio.Task | None = None
    inflight: dict[int, MessageExt] = field(default_factory=dict)
    buffered: list[MessageExt] = field(default_factory=list)
    broker_id: int = MASTER_ID
    dropped: bool = False
    locked: bool = False
    generation: int = 0
    #: Epoch ms of the last pull answered, message consumed and lock granted (0: never), as a client's
    #: running info reports them (GET_CONSUMER_RUNNING_INFO).
    last_pull_ms: int = 0
    last_consume_ms: int = 0
    last_lock_ms: int = 0
    idle: asyncio.Event = field(default_factory=asyncio.Event)
    space: asyncio.Event = field(default_factory=asyncio.Event)
    #: Set when the lock is renewed or the queue dropped: wakes an orderly consumption paused on its lock.
    resume: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        if not self.inflight:
            self.idle.set()
        if self.locked:
            self.last_lock_ms = now_ms()

    def commit_point(self) -> int:
        """Every message before this offset is done: the offset safe to commit."""
        return min(self.inflight) if self.inflight else self.next_offset

    def lock_expired(self) -> bool:
        """The lock is not ours (the broker said so) or too old to trust (Apache's !isLocked or isLockExpired):
        an orderly consumer consumes nothing more of the queue meanwhile."""
        return not self.locked or now_ms() - self.last_lock_ms > LOCK_MAX_LIVE_MS

    def lock_renewed(self, now: int) -> None:
        """The broker granted the lock again: a consumption paused on it goes on."""
        self.locked, self.last_lock_ms = True, now
        self.resume.set()

    def drop(self) -> None:
        """Nothing more of the queue is consumed here (RocketMQ's setDropped): the consume services check it before
        each message, so what is left goes to the queue's next owner from the offset committed at the drop."""
        self.dropped = True
        self.resume.set()

    def settle(self) -> None:
        """Wake whoever waits for the queue to drain or for room to pull more."""
        if not self.inflight:
            self.idle.set()
        self.space.set()

    def put(self, msgs: list[MessageExt]) -> None:
        """Pulled messages enter the in-flight table (RocketMQ's putMessage)."""
        for msg in msgs:
            self.inflight[msg.queue_offset] = msg
        if msgs:
            self.idle.clear()

    def remove(self, msg: MessageExt) -> None:
        """A message is done, whatever its outcome (RocketMQ's removeMessage)."""
        self.inflight.pop(msg.queue_offset, None)
        self.last_consume_ms = now_ms()
        self.settle()

    def info(self, committed: int | None) -> dict[str, Any]:
        """RocketMQ's ProcessQueueInfo of this queue (the fields this client keeps)."""
        cached = list(self.inflight)
        return {"commitOffset": committed if committed is not None else -1,
                "cachedMsgMinOffset": min(cached, default=0), "cachedMsgMaxOffset": max(cached, default=0),
                "cachedMsgCount": len(cached),
                "cachedMsgSizeInMiB": sum(len(m.body) for m in self.inflight.values()) // (1024 * 1024),
                "locked": self.locked, "lastLockTimestamp": self.last_lock_ms, "droped": self.dropped,
                "lastPullTimestamp": self.last_pull_ms, "lastConsumeTimestamp": self.last_consume_ms}

    def restart(self, offset: int) -> None:
        """Forget what is in flight and pull from `offset` next; older work sees a new generation."""
        self.generation += 1
        if self.task is not None:
            self.task.cancel()
        self.inflight.clear()
        self.buffered.clear()
        self.next_offset = offset
        self.settle()


def now_ms() -> int:
    """Epoch milliseconds, as the running info and the lock ages count them."""
    return int(time.time() * 1000)
