"""TransactionalMessageBridge: half messages and op messages in the store (RocketMQ's layout).

A half message is the producer's message moved to RMQ_SYS_TRANS_HALF_TOPIC queue 0, its destination
kept in REAL_TOPIC / REAL_QID and its transaction bits cleared, so it gets a queue offset there (the
"transaction state table offset" a producer ends it with) and consumers never see it. Ending one,
commit or rollback, writes an op message to RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0: tag "d", body the
half message's queue offset. The check service's progress over both queues is the consumer offset
of group CID_RMQ_SYS_TRANS, kept with every other group's offsets.

A check re-appends an open half message as a new copy, so one transaction can have several copies, and
once any copy has ended none of the others may be checked or ended again. A transaction is known by its
original half message's queue offset, which every copy carries in TRAN_PREPARED_QUEUE_OFFSET (Apache's
property) and every op in the first of its KEYS: the client's UNIQ_KEY is no identity, a client sets it
only when a message has none, so a message sent again (a retry after a rollback, a consumed message
forwarded) brings its old one. `ended` remembers the transactions ended lately (ENDED_MEMORY of them);
one it does not hold is looked up in the op topic's index (after a restart it holds nothing).
"""

from __future__ import annotations

import logging
import struct
from collections import OrderedDict
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from mqtools.common import properties as P
from mqtools.common.codec import CorruptMessageError, decode_stored
from mqtools.common.javanum import LONG_MAX
from mqtools.common.message import MessageExt, MessageExtBrokerInner
from mqtools.common.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_MASK
from mqtools.common.topics import (
    CID_RMQ_SYS_TRANS,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC,
)
from mqtools.remoting.transaction import OP_REMOVE_TAG, op_half_offsets
from mqtools.remoting.transaction import transaction_origin as origin
from mqtools.server.store.results import PutMessageResult

if TYPE_CHECKING:
    from mqtools.server.broker.context import BrokerContext

log = logging.getLogger(__name__)

HALF_TOPIC = RMQ_SYS_TRANS_HALF_TOPIC
OP_TOPIC = RMQ_SYS_TRANS_OP_HALF_TOPIC
CHECK_MAX_TIME_TOPIC = TRANS_CHECK_MAX_TIME_TOPIC
CHECK_GROUP = CID_RMQ_SYS_TRANS
QUEUE = 0
#: The properties a half message carries for its real destination.
REAL_DESTINATION = (P.REAL_TOPIC, P.REAL_QID)
#: How many ended transactions `TransactionalMessageBridge.ended` holds; older ones are looked up in the store.
ENDED_MEMORY = 65_536
#: The most op messages one lookup by a transaction's key reads (more than one only on an index hash collision).
OP_LOOKUP_MAX = 8
#: The index keeps a message's time in whole seconds: a lookup starts this much before the half message.
INDEX_TIME_GRAIN_MS = 1000


def to_half(msg: MessageExtBrokerInner) -> None:
    """In place: the producer's message as its half message (TransactionalMessageBridge.parseHalfMessageInner).
    As RocketMQ 5's broker (not 4.x's) it carries its UNIQ_KEY as TRANSACTION_ID too, which the check request and
    the committed message then carry: a 5.x client's transaction checker and the consumer see it."""
    uniq = msg.properties.get(P.UNIQ_KEY)
    if uniq:
        msg.properties[P.TRANSACTION_ID] = uniq
    msg.properties.pop(P.TRANSACTION_PREPARED_QUEUE_OFFSET, None)  # a forwarded copy's: this is a transaction of its own
    msg.properties[P.REAL_TOPIC] = msg.topic
    msg.properties[P.REAL_QID] = str(msg.queue_id)
    msg.sys_flag &= ~TRANSACTION_MASK
    msg.topic = HALF_TOPIC
    msg.queue_id = QUEUE
    msg.properties_string = P.properties_to_string(msg.properties)


def transaction_id(msg: MessageExt) -> str:
    """The client's name of a transaction (its unique key), for its check request and logs; not unique."""
    return msg.properties.get(P.UNIQ_KEY) or msg.msg_id


class TransactionalMessageBridge:
    """The store operations of transactional messages, for the processors and the check service."""

    def __init__(self, broker: BrokerContext) -> None:
        self.b = broker
        #: Transactions ended lately, oldest first: origin -> the queue offset of the copy that ended it.
        self.ended: OrderedDict[int, int] = OrderedDict()

    def put_half(self, msg: MessageExtBrokerInner) -> PutMessageResult | Awaitable[PutMessageResult]:
        to_half(msg)
        self._ensure_topics()
        return self.b.store.put_message_inline(msg)

    def _ensure_topics(self) -> None:
        """The half and op topics, as Apache's broker creates them when it first reads them (one queue)."""
        for topic in (HALF_TOPIC, OP_TOPIC):
            if self.b.topics.select(topic) is None:
                self.b.topics.create_topic_in_send_message_back_method(topic, 1)

    def half_message(self, commit_log_offset: int) -> MessageExt | None:
        """The half message stored at exactly this commitlog offset; None for anything else there (another
        topic's message, the middle of an entry, an offset outside the commitlog)."""
        store = self.b.store
        if not store.min_phy_offset <= commit_log_offset < store.max_phy_offset:
            return None
        try:
            msg = store.look_message_by_offset(commit_log_offset)
        except (CorruptMessageError, ValueError, struct.error, UnicodeDecodeError):
            return None
        if msg is None or msg.topic != HALF_TOPIC or msg.commit_log_offset != commit_log_offset:
            return None
        # the half queue's own unit for it: bytes inside another message's body can look like a half message
        cq = store.dispatcher.cq(HALF_TOPIC, QUEUE)
        unit = cq.unit(msg.queue_offset) if cq is not None and msg.queue_offset >= 0 else None
        if unit is None or unit[:2] != (commit_log_offset, msg.store_size):
            return None
        return msg

    def half_at(self, queue_offset: int) -> MessageExt | None:
        """The half message at a queue offset of the half topic."""
        return self._read(HALF_TOPIC, queue_offset)

    def op_at(self, queue_offset: int) -> MessageExt | None:
        return self._read(OP_TOPIC, queue_offset)

    def _read(self, topic: str, queue_offset: int) -> MessageExt | None:
        result = self.b.store.get_message(CHECK_GROUP, topic, QUEUE, queue_offset, 1)
        if not result.buffers:
            return None
        try:
            return decode_stored(result.buffers[0])
        except CorruptMessageError:
            log.exception("undecodable message at %s offset %d", topic, queue_offset)
            return None

    def max_offset(self, topic: str) -> int:
        return self.b.store.get_max_offset_in_queue(topic, QUEUE)

    def min_offset(self, topic: str) -> int:
        return self.b.store.get_min_offset_in_queue(topic, QUEUE)

    def progress(self, topic: str) -> int:
        """The check service's saved offset in the half or op queue (its first pass: the queue's start)."""
        offset = self.b.offsets.query_offset(CHECK_GROUP, topic, QUEUE)
        return max(offset, self.min_offset(topic))

    def save_progress(self, topic: str, offset: int) -> None:
        self.b.offsets.commit_offset("transaction-check", CHECK_GROUP, topic, QUEUE, offset)

    def remember(self, key: int, queue_offset: int) -> None:
        """The transaction `key` ended through the copy at `queue_offset`; the oldest forgotten past ENDED_MEMORY."""
        self.ended[key] = queue_offset
        if len(self.ended) > ENDED_MEMORY:
            self.ended.popitem(last=False)

    def ended_at(self, half: MessageExt) -> int | None:
        """The queue offset of the copy through which the half message's transaction ended; None while it is open.
        From the memory, else from the op topic's index (without the index, only from the memory)."""
        key = origin(half)
        at = self.ended.get(key)
        if at is None:
            at = self._op_in_store(key, half)
            if at is not None:
                self.remember(key, at)
        return at

    def _op_in_store(self, key: int, half: MessageExt) -> int | None:
        """The copy named by the op of transaction `key`, by the op's key in the index, from the time its original
        half message was stored: a hash probe per index file of that span, only when the memory misses."""
        store = self.b.store
        since = half.store_timestamp if half.queue_offset == key else store.get_message_store_timestamp(
            HALF_TOPIC, QUEUE, key)
        name = str(key)
        for op in store.query_message(OP_TOPIC, name, OP_LOOKUP_MAX, max(0, since - INDEX_TIME_GRAIN_MS), LONG_MAX):
            if op.topic == OP_TOPIC and op.tags == OP_REMOVE_TAG and op.keys[:1] == [name]:
                return max(op_half_offsets(op.body), default=key)
        return None

    def put_op(self, half: MessageExt) -> PutMessageResult | Awaitable[PutMessageResult]:
        """Mark a half message ended: an op message naming its queue offset, keyed by its transaction (then by
        the client's key, which Apache's ops lack and `mq admin txn list` reads)."""
        key = origin(half)
        self.remember(key, half.queue_offset)
        props = {P.TAGS: OP_REMOVE_TAG, P.WAIT: "false", P.KEYS: f"{key} {transaction_id(half)}"}
        now = int(self.b.clock() * 1000)
        host = (self.b.config.broker_ip1, self.b.server.port or 0)
        op = MessageExtBrokerInner(topic=OP_TOPIC, body=str(half.queue_offset).encode(), properties=props,
                                   queue_id=QUEUE, born_timestamp=now, born_host=host, store_host=host,
                                   properties_string=P.properties_to_string(props))
        return self.b.store.put_message_inline(op)

    def renew(self, half: MessageExt, properties: dict[str, str]) -> MessageExtBrokerInner:
        """A copy of a half message at the end of the half queue (a check, or a time of immunity that has not
        passed), stored with the given properties and its original's queue offset; born time kept, so the copy's
        age is the transaction's. As Apache's, its put waits for neither flush nor slave (WAIT=false, not
        stored: a commit from the copy waits as the producer asked): a wait that timed out held up the round."""
        stored = {**properties, P.TRANSACTION_PREPARED_QUEUE_OFFSET: str(origin(half))}
        return MessageExtBrokerInner(
            topic=HALF_TOPIC, body=half.body, flag=half.flag, properties={**stored, P.WAIT: "false"}, queue_id=QUEUE,
            sys_flag=half.sys_flag, born_timestamp=half.born_timestamp, born_host=half.born_host,
            store_host=half.store_host, reconsume_times=half.reconsume_times,
            properties_string=P.properties_to_string(stored))

    def committed(self, half: MessageExt) -> MessageExtBrokerInner:
        """The message for its real topic and queue (EndTransactionProcessor.endMessageTransaction): the half
        message's fields and, as Apache stores it, its whole properties string (REAL_TOPIC, REAL_QID and
        TRAN_MSG stay in it); the commit type in the sys flag; the half message as the prepared offset."""
        props = dict(half.properties)
        props.pop(P.TRANSACTION_PREPARED_QUEUE_OFFSET, None)  # the same message whichever copy is committed
        return MessageExtBrokerInner(
            topic=props.get(P.REAL_TOPIC, ""), body=half.body, flag=half.flag, properties=props,
            queue_id=int(props.get(P.REAL_QID, "0")),
            sys_flag=(half.sys_flag & ~TRANSACTION_MASK) | TRANSACTION_COMMIT_TYPE,
            born_timestamp=half.born_timestamp, born_host=half.born_host, store_host=half.store_host,
            reconsume_times=half.reconsume_times, prepared_transaction_offset=half.commit_log_offset,
            properties_string=P.properties_to_string(props))
