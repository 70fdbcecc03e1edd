"""Queue locks for orderly consumers (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ; RocketMQ's RebalanceLockManager).

An orderly consumer only consumes a queue it holds the broker-side lock of, so two members of a
group never process one queue at the same time during a rebalance. A lock lives 60 s
(rocketmq.broker.rebalance.lockMaxLiveTime) unless its owner renews it; an expired lock goes to
whoever asks next. Sans-IO: the clock is passed in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mqtools.remoting.bodies import MessageQueue

LOCK_MAX_LIVE_TIME = 60.0


@dataclass(slots=True)
class LockEntry:
    client_id: str
    last_update: float


class RebalanceLockManager:
    def __init__(self, clock: Callable[[], float] = time.time, *, max_live: float = LOCK_MAX_LIVE_TIME) -> None:
        self.clock = clock
        self.max_live = max_live
        self.table: dict[str, dict[MessageQueue, LockEntry]] = {}

    def _expired(self, entry: LockEntry, now: float) -> bool:
        return now - entry.last_update > self.max_live

    def is_locked(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        entry = self.table.get(group, {}).get(mq)
        return entry is not None and entry.client_id == client_id and not self._expired(entry, self.clock())

    def try_lock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> set[MessageQueue]:
        """Lock (or renew) every queue that is free, expired or already ours; return those."""
        now = self.clock()
        locks = self.table.setdefault(group, {})
        granted: set[MessageQueue] = set()
        for mq in mqs:
            entry = locks.get(mq)
            if entry is None or entry.client_id == client_id or self._expired(entry, now):
                locks[mq] = LockEntry(client_id, now)
                granted.add(mq)
        return granted

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> None:
        """Release the caller's own locks; other clients' locks are left alone."""
        locks = self.table.get(group)
        if not locks:
            return
        for mq in mqs:
            entry = locks.get(mq)
            if entry is not None and entry.client_id == client_id:
                del locks[mq]
        if not locks:
            del self.table[group]
