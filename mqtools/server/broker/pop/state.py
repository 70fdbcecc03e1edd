"""What the POP processors (pop, ack, change invisible time) share on one broker.

The revive topic and its queue count, the revive service, the FIFO table (config/consumerOrderInfo.json),
the rotation counters, and the
POP long-polling service (pop/long_polling.py), where POPs and NOTIFICATIONs that found nothing wait.

Settings read from broker.properties (Apache's BrokerConfig names): reviveQueueNum (8), reviveInterval
(200 ms here, Apache 1000), popFromRetryProbability (20: the share of POPs that read the retry topic first),
popPollingSize (1024) and maxPopPollingSize (100000): how many POPs (and apart, NOTIFICATIONs) may wait.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from mqtools.common.message import Host, MessageExtBrokerInner
from mqtools.server.broker.pop.long_polling import (
    MAX_POP_POLLING_SIZE,
    POP_POLLING_SIZE,
    PopLongPollingService,
)
from mqtools.server.broker.pop.order import ConsumerOrderInfoManager
from mqtools.server.broker.pop.records import DEFAULT_REVIVE_QUEUE_NUM, revive_topic
from mqtools.server.broker.pop.revive import PopReviveService
from mqtools.server.store.results import PutMessageResult

if TYPE_CHECKING:
    from mqtools.server.broker.context import BrokerContext

log = logging.getLogger(__name__)


def _setting(extra: dict[str, str], key: str, default: int, lo: int, hi: int) -> int:
    raw = extra.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        log.warning("ignoring %s=%r: not a number", key, raw)
        return default
    return min(max(value, lo), hi)


class PopState:
    def __init__(self, c: BrokerContext) -> None:
        self.c = c
        extra = c.config.extra
        self.revive_topic = revive_topic(c.config.broker_cluster_name)
        self.revive_queue_num = _setting(extra, "reviveQueueNum", DEFAULT_REVIVE_QUEUE_NUM, 1, 512)
        self.retry_share = _setting(extra, "popFromRetryProbability", 20, 0, 100)
        interval_ms = _setting(extra, "reviveInterval", 200, 10, 60_000)
        self.revive = PopReviveService(
            c, self.revive_topic, self.revive_queue_num, interval_s=interval_ms / 1000
        )
        self.order = ConsumerOrderInfoManager(c.config.config_dir)
        self.order.exists = self._queue_exists
        self.order.now_ms = self.now_ms
        self.polling = PopLongPollingService(c.clock, _setting(extra, "popPollingSize", POP_POLLING_SIZE, 0, 1 << 30),
                                             _setting(extra, "maxPopPollingSize", MAX_POP_POLLING_SIZE, 0, 1 << 30))
        self._ck_numbers = itertools.count()
        self._turns: dict[tuple[str, str], int] = {}

    async def start(self) -> None:
        self.order.load()
        dropped = self.order.drop_settled(lambda topic, group, queue_id: self.c.offsets.query_offset(group, topic, queue_id))
        if dropped:
            log.info("FIFO: %d held batches the groups' offsets had passed dropped at start", dropped)
        await self.order.start()
        hold = self.polling.hold
        self.c.store.add_arrival_listener(hold.arrival_listener, hold.table.by_queue)
        await hold.start()
        await self.revive.start()

    async def shutdown(self) -> None:
        await self.polling.hold.shutdown()
        await self.revive.shutdown()
        await self.order.shutdown()

    def _queue_exists(self, topic: str, group: str, queue_id: int) -> bool:
        """Whether a FIFO batch's queue and group still exist (the table keeps none of a deleted one)."""
        tc = self.c.topics.select(topic)
        return tc is not None and queue_id < tc.read_queue_nums and group in self.c.groups.table

    @property
    def host(self) -> Host:
        return self.c.store.config.store_host

    def now_ms(self) -> int:
        return int(self.c.clock() * 1000)

    def next_revive_qid(self) -> int:
        """Checkpoints spread over the revive queues in turn (Apache: ckMessageNumber % reviveQueueNum)."""
        return next(self._ck_numbers) % self.revive_queue_num

    def turn(self, group: str, topic: str) -> int:
        """A per (group, topic) POP counter: which queue a POP starts at, and whether it reads retry first."""
        key = (group, topic)
        n = self._turns.get(key, 0)
        self._turns[key] = n + 1
        return n

    def popped_topics(self, group: str) -> set[str]:
        """The topics the group popped from on this broker since it started (GET_POP_IN_FLIGHT's `popped`)."""
        return {topic for g, topic in self._turns if g == group}

    def retry_first(self, turn: int) -> bool:
        """The fair rule that replaces Apache's random draw: every k-th POP of a group on a topic reads the
        retry topic first (k = 100 / popFromRetryProbability, so 1 in 5 by default); the others read it
        only to fill what the topic's queues left. Neither side can starve the other."""
        if self.retry_share <= 0:
            return False
        return turn % max(1, round(100 / self.retry_share)) == 0

    def put_record(self, msg: MessageExtBrokerInner) -> PutMessageResult | Awaitable[PutMessageResult]:
        """Append a checkpoint or ack to the revive topic now; what is left to wait for (flush, slave)."""
        return self.c.store.put_message_inline(msg)
