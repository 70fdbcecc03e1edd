"""PopReviveService: tails the revive topic's queues and puts back what was popped and never acknowledged.

One `ReviveLedger` (the sans-IO decisions) per revive queue. Each round reads every queue to its end,
then revives the checkpoints whose invisible time is over: each unacknowledged message is read from its
queue and put to the POP retry topic with reconsumeTimes + 1 (or to the group's DLQ past its
retryMaxTimes), and the progress is committed as the consumer offset of CID_RMQ_SYS_REVIVE_GROUP on the
revive topic, persisted with the other offsets (consumerOffset.json), as Apache does.

After a restart the first round reads from the stored progress; every checkpoint it meets also raises its
group's POP offset to past the checkpoint's messages. Offsets reach the disk every few seconds, so a
broker killed between a POP (checkpoint written, offset moved in memory) and the next offset flush would
otherwise hand out again messages already popped, and acknowledged ones among them.

Runs on a master only (a slave promoted by the controllers starts reviving then); the loop ticks every `interval_s` (reviveInterval, 200 ms here so short invisible
times come back promptly; Apache's default is 1 s).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from mqtools.common import properties as P
from mqtools.common.codec import CorruptMessageError, decode_stored
from mqtools.common.javanum import INT_MAX
from mqtools.common.loop import PUTS_PER_TURN, wait_event
from mqtools.common.message import MessageExt, reput_copy
from mqtools.common.perm import PERM_RW
from mqtools.common.topics import is_retry_topic
from mqtools.remoting.bodies import TopicConfig
from mqtools.remoting.pop import FIRST_POP_TIME, normal_topic
from mqtools.server.broker.pop.ledger import ReviveLedger, destination
from mqtools.server.broker.pop.records import (
    REVIVE_CLIENT_HOST,
    REVIVE_GROUP,
    PopCheckPoint,
    ck_message,
    parse_record,
)
from mqtools.server.lifecycle import cancel_and_wait
from mqtools.server.store.results import STORED, GetMessageStatus, PutMessageResult

if TYPE_CHECKING:
    from mqtools.server.broker.context import BrokerContext

log = logging.getLogger(__name__)

READ_BATCH = 32
#: Batches a round reads before it lets the loop turn: a round meets every ack and checkpoint written since
#: the last one (thousands under load), and reading them in one go held POPs and ACKs back for milliseconds.
BATCHES_PER_TURN = 4
#: Checkpoints a round carries (writes again further on) per revive queue at most.
CARRY_PER_ROUND = 256
_SKIP = {
    GetMessageStatus.OFFSET_TOO_SMALL,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY,
    GetMessageStatus.OFFSET_FOUND_NULL,
}


class PopReviveService:
    """The revive loop over `queue_num` revive queues of `topic`."""

    def __init__(
        self,
        c: BrokerContext,
        topic: str,
        queue_num: int,
        *,
        interval_s: float = 0.2,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.c = c
        self.topic = topic
        self.queue_num = queue_num
        self.interval_s = interval_s
        self.clock = clock or c.clock
        self.ledgers: dict[int, ReviveLedger] = {}
        #: Messages put back after their invisible time since start (to retry, or past the limit to the DLQ),
        #: per group (GET_POP_IN_FLIGHT).
        self.revived: dict[str, int] = {}
        self._catching_up = True
        self._task: asyncio.Task | None = None
        self._kick = asyncio.Event()

    # ------------------------------------------------------------------ lifecycle

    def ensure_topic(self) -> None:
        """The revive topic exists with its queues (Apache creates it with the broker)."""
        if self.c.topics.select(self.topic) is None:
            self.c.topics.update(TopicConfig(self.topic, self.queue_num, self.queue_num, perm=PERM_RW))

    async def start(self) -> None:
        """Catch up now when this broker is a master (before it registers and serves); a slave waits, and
        takes over reviving when it becomes a master (controller mode), from the progress it then has."""
        if not self.c.config.is_slave:
            self.activate()
        self._task = asyncio.create_task(self._loop(), name="pop-revive")

    def activate(self) -> None:
        self._take_over()
        self.catch_up()

    def _take_over(self) -> None:
        """Ledgers from the revive progress this broker has; the POP offsets are restored as the queues are read
        to their end."""
        self.ensure_topic()
        name = self.c.config.broker_name
        self.ledgers = {
            q: ReviveLedger(name, self.c.offsets.query_offset(REVIVE_GROUP, self.topic, q))
            for q in range(self.queue_num)
        }
        self._catching_up = True

    def catch_up(self) -> None:
        """Read the revive queues to their end: the pending checkpoints and, on the first pass after
        (re)activation, the POP offsets they restore."""
        for qid, ledger in self.ledgers.items():
            self._read(qid, ledger)
        self._catching_up = False

    async def shutdown(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    def kick(self) -> None:
        """Run a round soon (a change of invisible time, a test)."""
        self._kick.set()

    async def _loop(self) -> None:
        while True:
            try:
                await self.run_once()
            except Exception:  # one bad round must not end reviving
                log.exception("POP revive round failed")
            await wait_event(self._kick, self.interval_s)  # not wait_for: it can swallow a shutdown's cancel
            self._kick.clear()

    # ------------------------------------------------------------------ one round

    async def run_once(self) -> int:
        """Read every revive queue to its end (letting the loop turn between a few batches), revive what is
        due; the number of messages put back."""
        revived = 0
        if self.c.config.is_slave:
            self.ledgers = {}  # a slave does not revive; a master it becomes starts from its progress then
            return 0
        if not self.ledgers:
            self._take_over()  # a slave made master: its catch-up is this round's read, the loop turning
        for qid, ledger in list(self.ledgers.items()):
            while not self._read(qid, ledger, BATCHES_PER_TURN):
                await asyncio.sleep(0)
        self._catching_up = False
        now_ms = int(self.clock() * 1000)
        turned = 0
        for qid, ledger in self.ledgers.items():
            for ck in ledger.due(now_ms):
                if revived - turned >= PUTS_PER_TURN:  # a put under ASYNC_FLUSH never suspends
                    turned = revived
                    await asyncio.sleep(0)
                try:
                    count = await self._revive(ck, ledger)
                except Exception:  # one checkpoint must not hold back every later one, round after round
                    log.exception("POP revive: dropping checkpoint of %s/%s:%d at %d, which could not be revived",
                                  ck.cid, ck.topic, ck.queue_id, ck.start_offset)
                    count = 0
                if count < 0:
                    break  # retried next round; the progress stays before it
                revived += count
                ledger.done(ck)
            self._carry(qid, ledger, now_ms)
            self._commit(qid, ledger)
        return revived

    def _carry(self, qid: int, ledger: ReviveLedger, now_ms: int) -> None:
        """Write again at the end of the queue the checkpoints that hold its progress far back (ReviveLedger.to_carry);
        the next round reads them there and the progress moves past the first records."""
        for ck in ledger.to_carry(now_ms)[:CARRY_PER_ROUND]:
            put = self.c.store.put_message_inline(ck_message(self.topic, qid, ck, now_ms,
                                                             self.c.store.config.store_host))
            if isinstance(put, PutMessageResult) and put.status.name not in STORED:
                return  # the store refuses (a slave now, a full disk): the progress waits, nothing is lost

    def _read(self, qid: int, ledger: ReviveLedger, batches: float = math.inf) -> bool:
        """Read the queue on from the ledger's offset, to its end or for `batches` reads: whether it reached
        the end."""
        store = self.c.store
        while batches > 0:
            batches -= 1
            offset = ledger.read_offset + 1
            result = store.get_message(REVIVE_GROUP, self.topic, qid, offset, READ_BATCH)
            if result.status in _SKIP and result.next_begin_offset > offset:
                ledger.skip_to(result.next_begin_offset)
                continue
            if not result.buffers:
                if result.next_begin_offset > offset:
                    ledger.skip_to(result.next_begin_offset)
                    continue
                return True
            for buf in result.buffers:
                try:
                    msg = decode_stored(buf)
                    record = parse_record(msg.tags, msg.body)
                except (CorruptMessageError, ValueError) as exc:
                    log.warning("skipping unreadable revive record in %s:%d: %s", self.topic, qid, exc)
                    ledger.skip_to(offset + 1)
                    offset += 1
                    continue
                if record is None:
                    ledger.skip_to(msg.queue_offset + 1)
                else:
                    ledger.add(record, msg.queue_offset)
                    if self._catching_up and isinstance(record, PopCheckPoint):
                        self._restore_pop_offset(record)
                offset = msg.queue_offset + 1
            ledger.skip_to(result.next_begin_offset)
        return False

    def _restore_pop_offset(self, ck: PopCheckPoint) -> None:
        offsets = self.c.offsets
        if offsets.query_offset(ck.cid, ck.topic, ck.queue_id) < ck.end_offset:
            offsets.commit_offset(REVIVE_CLIENT_HOST, ck.cid, ck.topic, ck.queue_id, ck.end_offset)

    def _commit(self, qid: int, ledger: ReviveLedger) -> None:
        value = ledger.commit_offset()
        if value >= 0 and value != self.c.offsets.query_offset(REVIVE_GROUP, self.topic, qid):
            self.c.offsets.commit_offset(REVIVE_CLIENT_HOST, REVIVE_GROUP, self.topic, qid, value)

    # ------------------------------------------------------------------ putting back

    async def _revive(self, ck: PopCheckPoint, ledger: ReviveLedger) -> int:
        """Put back the checkpoint's unacknowledged messages: how many, or -1 when a put failed."""
        c = self.c
        # auto-created where the broker allows it, as Apache's findSubscriptionGroupConfig does: a slave promoted
        # by the controllers may not have synced a group first seen by its old master a moment before it died
        group_cfg = c.groups.find(ck.cid)
        if group_cfg is None or c.topics.select(normal_topic(ck.topic, ck.cid)) is None:
            log.warning("dropping POP checkpoint of %s/%s: group or topic gone", ck.cid, ck.topic)
            return 0
        count = 0
        for offset in ledger.unacked(ck):
            result = c.store.get_message(REVIVE_GROUP, ck.topic, ck.queue_id, offset, 1)
            if not result.buffers:
                log.warning("POP revive: %s:%d offset %d is gone", ck.topic, ck.queue_id, offset)
                continue
            try:
                msg = decode_stored(result.buffers[0])
            except CorruptMessageError as exc:
                log.warning("POP revive: unreadable %s:%d offset %d: %s", ck.topic, ck.queue_id, offset, exc)
                continue
            if not await self._put_back(ck, msg, group_cfg.retry_max_times):
                return -1
            count += 1
            self.revived[ck.cid] = self.revived.get(ck.cid, 0) + 1
        return count

    async def _put_back(self, ck: PopCheckPoint, msg: MessageExt, max_times: int) -> bool:
        c = self.c
        where = destination(ck, msg.reconsume_times, max_times)
        props = dict(msg.properties)
        if msg.reconsume_times == 0 or FIRST_POP_TIME not in props:
            props[FIRST_POP_TIME] = str(ck.pop_time)
        if where.dead:
            props.setdefault(P.RETRY_TOPIC, normal_topic(ck.topic, ck.cid))
            if not props.get(P.ORIGIN_MESSAGE_ID):
                props[P.ORIGIN_MESSAGE_ID] = props.get(P.UNIQ_KEY) or msg.msg_id
        created = c.topics.select(where.topic) is None
        tc = c.topics.create_topic_in_send_message_back_method(where.topic, 1, PERM_RW)
        if tc is None:
            return False
        if (
            created
            and not where.dead
            and is_retry_topic(where.topic)
            and c.offsets.query_offset(ck.cid, where.topic, 0) < 0
        ):
            c.offsets.commit_offset(REVIVE_CLIENT_HOST, ck.cid, where.topic, 0, 0)
        reconsume = min(msg.reconsume_times + 1, INT_MAX)
        inner = reput_copy(msg, where.topic, 0, props, reconsume_times=reconsume)
        inner.store_host = None  # this broker stores it
        result = await c.store.put_message(inner)
        if result.status.name not in STORED:
            log.warning("POP revive put to %s failed: %s %s", where.topic, result.status.name, result.remark)
            return False
        return True
