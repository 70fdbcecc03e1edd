"""TransactionalMessageBridge: half messages and op messages in the store (RocketMQ's layout).

A half message is the producer's message moved to RMQ_SYS_TRANS_HALF_TOPIC queue 0, its destination
kept in REAL_TOPIC / REAL_QID and its transaction bits cleared, so it gets a queue offset there (the
"transaction state table offset" a producer ends it with) and consumers never see it. Ending one,
commit or rollback, writes an op message to RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0: tag "d", body the
half message's queue offset. The check service's progress over both queues is the consumer offset
of group CID_RMQ_SYS_TRANS, kept with every other group's offsets.

`ended` remembers which transactions (by the client's unique key) have ended since the op queue's
saved offset: a check re-appends an open half message as a new copy, so one transaction can have
several copies, and once any copy has ended none of the others may be checked or ended again.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from mqtools.common import properties as P
from mqtools.common.codec import CorruptMessageError, decode_stored
from mqtools.common.message import MessageExt, MessageExtBrokerInner
from mqtools.common.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_MASK
from mqtools.common.topics import (
    CID_RMQ_SYS_TRANS,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC,
)
from mqtools.remoting.transaction import OP_REMOVE_TAG
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


def to_half(msg: MessageExtBrokerInner) -> None:
    """In place: the producer's message as its half message (TransactionalMessageBridge.parseHalfMessageInner).
    As RocketMQ 5's broker (not 4.x's) it carries its UNIQ_KEY as TRANSACTION_ID too, which the check request and
    the committed message then carry: a 5.x client's transaction checker and the consumer see it."""
    uniq = msg.properties.get(P.UNIQ_KEY)
    if uniq:
        msg.properties[P.TRANSACTION_ID] = uniq
    msg.properties[P.REAL_TOPIC] = msg.topic
    msg.properties[P.REAL_QID] = str(msg.queue_id)
    msg.sys_flag &= ~TRANSACTION_MASK
    msg.topic = HALF_TOPIC
    msg.queue_id = QUEUE
    msg.properties_string = P.properties_to_string(msg.properties)


def transaction_id(msg: MessageExt) -> str:
    """A transaction's identity across the copies of its half message: the client's unique key."""
    return msg.properties.get(P.UNIQ_KEY) or msg.msg_id


class TransactionalMessageBridge:
    """The store operations of transactional messages, for the processors and the check service."""

    def __init__(self, broker: BrokerContext) -> None:
        self.b = broker
        #: Transactions ended since the op queue's saved offset: unique key -> half queue offset.
        self.ended: dict[str, int] = {}

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

    def put_op(self, half: MessageExt) -> PutMessageResult | Awaitable[PutMessageResult]:
        """Mark a half message ended: an op message naming its queue offset."""
        self.ended[transaction_id(half)] = half.queue_offset
        props = {P.TAGS: OP_REMOVE_TAG, P.WAIT: "false", P.KEYS: transaction_id(half)}
        now = int(self.b.clock() * 1000)
        host = (self.b.config.broker_ip1, self.b.server.port or 0)
        op = MessageExtBrokerInner(topic=OP_TOPIC, body=str(half.queue_offset).encode(), properties=props,
                                   queue_id=QUEUE, born_timestamp=now, born_host=host, store_host=host,
                                   properties_string=P.properties_to_string(props))
        return self.b.store.put_message_inline(op)

    def renew(self, half: MessageExt, properties: dict[str, str]) -> MessageExtBrokerInner:
        """A copy of a half message at the end of the half queue (a check, or a time of immunity that has not
        passed), with the given properties; born time kept, so the copy's age is the transaction's."""
        return MessageExtBrokerInner(
            topic=HALF_TOPIC, body=half.body, flag=half.flag, properties=properties, queue_id=QUEUE,
            sys_flag=half.sys_flag, born_timestamp=half.born_timestamp, born_host=half.born_host,
            store_host=half.store_host, reconsume_times=half.reconsume_times,
            properties_string=P.properties_to_string(properties))

    def committed(self, half: MessageExt) -> MessageExtBrokerInner:
        """The message for its real topic and queue (EndTransactionProcessor.endMessageTransaction): the half
        message's fields and, as Apache stores it, its whole properties string (REAL_TOPIC, REAL_QID and
        TRAN_MSG stay in it); the commit type in the sys flag; the half message as the prepared offset."""
        props = dict(half.properties)
        return MessageExtBrokerInner(
            topic=props.get(P.REAL_TOPIC, ""), body=half.body, flag=half.flag, properties=props,
            queue_id=int(props.get(P.REAL_QID, "0")),
            sys_flag=(half.sys_flag & ~TRANSACTION_MASK) | TRANSACTION_COMMIT_TYPE,
            born_timestamp=half.born_timestamp, born_host=half.born_host, store_host=half.store_host,
            reconsume_times=half.reconsume_times, prepared_transaction_offset=half.commit_log_offset,
            properties_string=P.properties_to_string(props))
