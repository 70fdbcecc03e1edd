"""Which queues this member of a group consumes (RocketMQ's RebalanceImpl, RebalancePushImpl,
RebalanceService and AllocateMessageQueueAveragely).

Every member computes the same average split from the broker's consumer list, so no
coordination is needed beyond that list. In clustering mode a member also holds the broker's
queue lock (LOCK_BATCH_MQ) for every queue it consumes, orderly or not, takes a queue only
once the lock is granted and gives one up only after its in-flight messages are done and
its offset is committed: a member joining or leaving never makes two members process the
same message in a clean run (RocketMQ's concurrent consumer allows that overlap). The exception: a
concurrent consumer takes the queues of a set with no master in the route without a lock (no lock can be had
there, and the slave serves the pulls), so a master outage does not leave them unread, and locks them once the
set has a master again; an orderly one waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from mqtools.client.client_api import consumer_ids, lock_batch, queue_offset, unlock_batch
from mqtools.client.errors import MQClientError
from mqtools.client.instance import ClientInstance
from mqtools.client.offset_store import OffsetStore
from mqtools.client.process_queue import ProcessQueue, now_ms
from mqtools.client.types import ConsumeFromWhere
from mqtools.common.topics import is_retry_topic
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import RequestCode

log = logging.getLogger(__name__)

#: Seconds before the next rebalance while some allocated queue still waits for its lock.
LOCK_RETRY_INTERVAL = 1.0
#: Seconds between an orderly consumer's lock renewals, apart from its rebalances (Apache's lockMQPeriodically,
#: REBALANCE_LOCK_INTERVAL): a rebalance that fails (every name server down) or runs long must not let the locks
#: age past LOCK_MAX_LIVE_MS, where consumption of their queues pauses.
LOCK_RENEW_INTERVAL = 20.0
#: Seconds the queues a rebalance drops may take, all together, to finish their in-flight messages (and a push
#: consumer's shutdown, by default).
DROP_DRAIN_TIMEOUT = 10.0
#: How far back CONSUME_FROM_TIMESTAMP starts when no timestamp is given (RocketMQ's half an hour).
DEFAULT_TIMESTAMP_LOOKBACK = 1800


def queue_sort_key(mq: MessageQueue) -> tuple[str, str, int]:
    return (mq.topic, mq.broker_name, mq.queue_id)


def allocate_average(consumer_ids: list[str], me: str, queues: list[MessageQueue]) -> list[MessageQueue]:
    """Contiguous, near-equal slices of the sorted queues, in sorted consumer order.

    Every consumer of the group computes the same split from the same sorted inputs, so no
    coordination is needed beyond the broker's consumer list.
    """
    cids = sorted(set(consumer_ids))
    mqs = sorted(queues, key=queue_sort_key)
    if me not in cids or not mqs:
        return []
    index = cids.index(me)
    count = len(cids)
    mod = len(mqs) % count
    if len(mqs) <= count:
        size = 1
    elif mod > 0 and index < mod:
        size = len(mqs) // count + 1
    else:
        size = len(mqs) // count
    start = index * size if mod > 0 and index < mod else index * size + mod
    span = min(size, len(mqs) - start)
    return [mqs[(start + i) % len(mqs)] for i in range(max(span, 0))]


class Rebalance:
    """The owned queues of one push consumer and the work of changing them.

    `dispatch` is called with each newly owned queue so the consumer can start pulling it
    (RocketMQ's dispatchPullRequest). `orderly`: never take a queue without its lock, even on a set
    with no master.
    """

    def __init__(self, instance: ClientInstance, group: str, offsets: OffsetStore, *, clustering: bool,
                 consume_from_where: ConsumeFromWhere, consume_timestamp_ms: int | None,
                 dispatch: Callable[[ProcessQueue], None], orderly: bool) -> None:
        self.instance = instance
        self.group = group
        self.offsets = offsets
        self.clustering = clustering
        self.orderly = orderly
        self.consume_from_where = consume_from_where
        self.consume_timestamp_ms = consume_timestamp_ms
        self.dispatch = dispatch
        self.table: dict[MessageQueue, ProcessQueue] = {}
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """Rebalance now rather than at the next interval (the group's membership changed)."""
        self._wake.set()

    async def run(self, topics: Callable[[], list[str]], interval: float) -> None:
        """Rebalance every `interval` seconds, at once when woken, every second while a lock is pending."""
        while True:
            self._wake.clear()
            try:
                pending = await self.rebalance(topics())
            except MQClientError as exc:
                log.info("rebalance of %s failed: %s", self.group, exc)
                pending = True
            delay = LOCK_RETRY_INTERVAL if pending else interval
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()

    async def renew_locks_periodically(self, interval: float = LOCK_RENEW_INTERVAL) -> None:
        """An orderly consumer's locks renewed every `interval` whatever the rebalances do; the brokers are the ones
        the held queues name (their addresses as the instance holds them), so no name server is needed."""
        while True:
            await asyncio.sleep(interval)
            if self.table:
                try:
                    await self._renew_locks()
                except MQClientError as exc:
                    log.info("lock renewal of %s failed: %s", self.group, exc)

    async def rebalance(self, topics: list[str]) -> bool:
        """Recompute the owned queues; True when some queue is still waiting for its lock."""
        wanted: set[MessageQueue] = set()
        for topic in topics:
            mine = await self._allocate(topic)
            if mine is None:
                mine = [mq for mq in self.table if mq.topic == topic]
            wanted.update(mine)
        await self.drop([mq for mq in self.table if mq not in wanted], DROP_DRAIN_TIMEOUT)
        new = sorted((mq for mq in wanted if mq not in self.table), key=queue_sort_key)
        if self.clustering and self.table:
            await self._renew_locks()
        takeable = await self._takeable(new)
        for mq, locked in takeable.items():
            await self._add(mq, locked)
        return len(takeable) < len(new)

    async def _allocate(self, topic: str) -> list[MessageQueue] | None:
        """This member's queues of the topic; None when it cannot be told, and the queues held are kept (RocketMQ
        skips the topic then): the group's members could not be read (an unread list is not an empty one), or the
        name servers do not know a topic whose route was held (one restarted empty says so of every topic until
        the brokers register again; Apache's rebalance goes on with the subscribe info it holds)."""
        route = await self.instance.route(topic, refresh=True)
        if route is None:
            if topic not in self.instance.routes:
                return []
            log.info("rebalance of %s keeps its queues of %s: the name servers do not know the topic now",
                     self.group, topic)
            return None
        queues = list(route.subscribe)
        if not self.clustering:
            return queues
        cids = await consumer_ids(self.instance, self.group, route.brokers)
        if cids is None:
            log.info("rebalance of %s keeps its queues of %s: no broker answered the consumer list",
                     self.group, topic)
            return None
        return allocate_average(cids, self.instance.client_id, queues)

    async def _takeable(self, new: list[MessageQueue]) -> dict[MessageQueue, bool]:
        """The new queues that may be taken now, each with whether its lock is held: in clustering mode those
        whose lock was granted, and for a concurrent consumer those of a set with no master, unlocked."""
        if not self.clustering:
            return dict.fromkeys(new, False)
        unlocked = set() if self.orderly else {mq for mq in new if not self._has_master(mq)}
        locked = (await lock_batch(self.instance, self.group, [mq for mq in new if mq not in unlocked])).locked
        return {mq: mq in locked for mq in new if mq in locked or mq in unlocked}

    async def _renew_locks(self) -> None:
        """Keep the broker locks alive; a queue whose master answered that its lock went to someone else is
        dropped. One whose master did not answer is kept: a GC pause or a hung master says nothing of the lock,
        except that an orderly consumer gives up a queue whose lock expired (not renewed for LOCK_MAX_LIVE_MS; the
        broker's lapses a while later, and another member may then take it). Its consumption stopped at that age
        already, as Apache's (isLockExpired); a renewal here lets it go on. A queue taken unlocked while its set had
        no master is locked once the set has one again, or dropped if another member holds it by then (else both
        would read it for good)."""
        asked = [mq for mq, pq in self.table.items() if pq.locked or self._has_master(mq)]
        answer = await lock_batch(self.instance, self.group, asked)
        now = now_ms()
        held = {mq: pq for mq, pq in self.table.items() if mq in asked}  # a queue dropped meanwhile is not renewed
        for mq in answer.locked & held.keys():
            held[mq].lock_renewed(now)
        for mq in answer.refused & held.keys():
            held[mq].locked = False
        await self.drop([mq for mq, pq in held.items() if mq in answer.refused or self.orderly and pq.lock_expired()],
                        DROP_DRAIN_TIMEOUT)

    def _has_master(self, mq: MessageQueue) -> bool:
        return self.instance.broker_addr(mq.broker_name, any_node=False) is not None

    async def _start_offset(self, mq: MessageQueue) -> int:
        """Where a newly owned queue starts (RocketMQ's computePullFromWhere)."""
        stored = await self.offsets.read(mq)
        if stored is not None and stored >= 0:
            return stored
        where = self.consume_from_where
        if is_retry_topic(mq.topic) or where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return await queue_offset(self.instance, mq, RequestCode.GET_MIN_OFFSET)
        if where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
            stamp = self.consume_timestamp_ms or int((time.time() - DEFAULT_TIMESTAMP_LOOKBACK) * 1000)
            return await queue_offset(self.instance, mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, timestamp=stamp)
        return await queue_offset(self.instance, mq, RequestCode.GET_MAX_OFFSET)

    async def _add(self, mq: MessageQueue, locked: bool) -> None:
        try:
            offset = await self._start_offset(mq)
        except MQClientError as exc:
            log.info("no start offset for %s yet: %s", mq, exc)
            if locked:
                await unlock_batch(self.instance, self.group, [mq])
            return
        pq = ProcessQueue(mq, offset, locked=locked)
        self.offsets.update(mq, offset)
        self.table[mq] = pq
        self.dispatch(pq)

    async def drop(self, mqs: list[MessageQueue], drain_timeout: float) -> None:
        """Stop pulling `mqs`, let their in-flight messages finish within one `drain_timeout` for them all (each its
        own cost a shutdown with 8 stuck queues 80 s, and a rebalance renewed no lock as long), commit, then
        release the locks. The rest of a queue not drained by then is not consumed here (ProcessQueue.drop): the
        offset committed is its first message not done. An orderly queue paused on its lock is not waited for."""
        dropped = [self.table.pop(mq) for mq in mqs if mq in self.table]
        for pq in dropped:
            if pq.task is not None:
                pq.task.cancel()
        for pq in dropped:
            if pq.task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await pq.task
        drains = [pq.idle.wait() for pq in dropped if not (self.orderly and self.clustering and pq.lock_expired())]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(drain_timeout):
                await asyncio.gather(*drains)
        for pq in dropped:
            pq.drop()
            self.offsets.update(pq.mq, pq.commit_point())
        await self.offsets.persist([pq.mq for pq in dropped])
        if self.clustering:
            await unlock_batch(self.instance, self.group, [pq.mq for pq in dropped if pq.locked])
        for pq in dropped:
            self.offsets.remove(pq.mq)
