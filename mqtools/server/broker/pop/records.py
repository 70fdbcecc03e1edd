"""The POP checkpoint and ack records of the revive topic, byte for byte as Apache 5.5 writes them.

A POP writes one checkpoint (tag ``ck``) per queue it read; an ack writes an ``ack`` record, a batch ack a
``bAck`` record; all go to ``rmq_sys_REVIVE_LOG_<cluster>``, queue = the pop's revive queue id. The bodies
are fastjson2's output of Apache's PopCheckPoint, AckMsg and BatchAckMsg: short field names, keys sorted,
a computed ``reviveTime`` on the checkpoint. A store handed to Apache (or taken from it) is revived the
same way, because both sides read these bodies and match them by the same merge key.

mq puts the records straight into the revive topic; Apache routes them through its timer so they appear
in the revive queue near their revive time (TIMER_DELIVER_MS = revive time - 1 s for a checkpoint, the
revive time for an ack). Apache's revive service takes the largest TIMER_DELIVER_MS it has read as its
clock, and never revives without one. mq's records carry the time they were written, which is when they
reached the revive queue: an Apache broker reading an mq store so revives nothing early and nothing
never. mq's revive service goes by the checkpoints' own revive times and needs none of this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from mqtools.common import properties as P
from mqtools.common.message import Host, MessageExtBrokerInner

#: PopAckConstants: the revive topic prefix, its consumer group (whose offset is the revive progress), tags.
REVIVE_TOPIC_PREFIX = "rmq_sys_REVIVE_LOG_"
REVIVE_GROUP = "CID_RMQ_SYS_REVIVE_GROUP"
REVIVE_CLIENT_HOST = "127.0.0.1"
CK_TAG = "ck"
ACK_TAG = "ack"
BATCH_ACK_TAG = "bAck"
SPLIT = "@"
#: BrokerConfig.reviveQueueNum's default.
DEFAULT_REVIVE_QUEUE_NUM = 8
#: The most messages one checkpoint holds: one bit each of its 32-bit bitMap (Apache's num is a byte, and a POP
#: takes at most 32).
CK_MAX_NUM = 32


def revive_topic(cluster: str) -> str:
    return REVIVE_TOPIC_PREFIX + cluster


def merge_key(
    topic: str, group: str, queue_id: int, start_offset: int, pop_time: int, broker_name: str
) -> str:
    """What PopReviveService matches acks to checkpoints by (plain concatenation, as Apache does)."""
    return f"{topic}{group}{queue_id}{start_offset}{pop_time}{broker_name}"


def _dumps(obj: dict[str, Any]) -> bytes:
    return orjson.dumps({k: obj[k] for k in sorted(obj) if obj[k] is not None})


def _get(obj: dict[str, Any], short: str, long: str, default: Any = None) -> Any:
    value = obj.get(short)
    return obj.get(long, default) if value is None else value


@dataclass(slots=True)
class PopCheckPoint:
    """The messages one POP took from one queue: offsets start_offset + diff[i], bit i set once acked."""

    topic: str
    cid: str
    queue_id: int
    start_offset: int
    pop_time: int
    invisible_time: int
    num: int
    broker_name: str | None = None
    bit_map: int = 0
    queue_offset_diff: list[int] = field(default_factory=list)
    revive_offset: int = 0
    re_put_times: str | None = None
    suspend: bool = False

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    def key(self, own_broker: str) -> str:
        return merge_key(
            self.topic,
            self.cid,
            self.queue_id,
            self.start_offset,
            self.pop_time,
            self.broker_name or own_broker,
        )

    def offset_at(self, index: int) -> int:
        """PopCheckPoint.ackOffsetByIndex (old checkpoints without diffs are consecutive)."""
        if not self.queue_offset_diff:
            return self.start_offset + index
        return self.start_offset + self.queue_offset_diff[index]

    def index_of(self, ack_offset: int) -> int:
        """PopCheckPoint.indexOfAck: -1 when the offset is not one of this checkpoint's."""
        if ack_offset < self.start_offset:
            return -1
        if not self.queue_offset_diff:
            return ack_offset - self.start_offset if ack_offset - self.start_offset < self.num else -1
        try:
            return self.queue_offset_diff.index(ack_offset - self.start_offset)
        except ValueError:
            return -1

    @property
    def end_offset(self) -> int:
        """One past the last offset this checkpoint covers."""
        return self.offset_at(self.num - 1) + 1 if self.num > 0 else self.start_offset

    def to_json(self) -> bytes:
        return _dumps(
            {
                "bm": self.bit_map,
                "bn": self.broker_name,
                "c": self.cid,
                "d": self.queue_offset_diff or None,
                "it": self.invisible_time,
                "n": self.num,
                "pt": self.pop_time,
                "q": self.queue_id,
                "reviveTime": self.revive_time,
                "ro": self.revive_offset,
                "rp": self.re_put_times,
                "so": self.start_offset,
                "sp": self.suspend,
                "t": self.topic,
            }
        )

    @classmethod
    def from_json(cls, data: bytes | memoryview) -> PopCheckPoint:
        """ValueError when the body is not a checkpoint: no topic or group, more messages than a checkpoint holds, or
        offset diffs that are not one a message. Anyone allowed to send to the revive topic can write one, and reviving
        it must neither fail every round (offsets it does not have) nor build a list of a billion offsets."""
        obj = orjson.loads(bytes(data))
        if not isinstance(obj, dict):
            raise TypeError("checkpoint body is not an object")
        topic, cid = _get(obj, "t", "topic"), _get(obj, "c", "cid")
        if topic is None or cid is None:
            raise ValueError("checkpoint without topic or group")
        num = int(_get(obj, "n", "num", 0))
        diffs = [int(d) for d in _get(obj, "d", "queueOffsetDiff", None) or []]
        if not 0 <= num <= CK_MAX_NUM:
            raise ValueError(f"checkpoint of {num} messages (at most {CK_MAX_NUM})")
        if diffs and len(diffs) != num:
            raise ValueError(f"checkpoint of {num} messages with {len(diffs)} offset diffs")
        rp = _get(obj, "rp", "rePutTimes")
        return cls(
            topic=str(topic),
            cid=str(cid),
            queue_id=int(_get(obj, "q", "queueId", 0)),
            start_offset=int(_get(obj, "so", "startOffset", 0)),
            pop_time=int(_get(obj, "pt", "popTime", 0)),
            invisible_time=int(_get(obj, "it", "invisibleTime", 0)),
            num=num,
            broker_name=_get(obj, "bn", "brokerName"),
            bit_map=int(_get(obj, "bm", "bitMap", 0)),
            queue_offset_diff=diffs,
            revive_offset=int(_get(obj, "ro", "reviveOffset", 0)),
            re_put_times=None if rp is None else str(rp),
            suspend=bool(_get(obj, "sp", "suspend", False)),
        )


@dataclass(slots=True)
class AckMsg:
    """One acknowledged offset of a checkpoint (the checkpoint is named by start offset and pop time)."""

    ack_offset: int
    start_offset: int
    consumer_group: str
    topic: str
    queue_id: int
    pop_time: int
    broker_name: str | None = None

    def key(self, own_broker: str) -> str:
        return merge_key(
            self.topic,
            self.consumer_group,
            self.queue_id,
            self.start_offset,
            self.pop_time,
            self.broker_name or own_broker,
        )

    @property
    def offsets(self) -> list[int]:
        return [self.ack_offset]

    def _obj(self) -> dict[str, Any]:
        return {
            "ao": self.ack_offset,
            "bn": self.broker_name,
            "c": self.consumer_group,
            "pt": self.pop_time,
            "q": self.queue_id,
            "so": self.start_offset,
            "t": self.topic,
        }

    def to_json(self) -> bytes:
        return _dumps(self._obj())

    @classmethod
    def _fields(cls, obj: Any) -> dict[str, Any]:
        if not isinstance(obj, dict):
            raise TypeError("ack body is not an object")
        return {
            "ack_offset": int(_get(obj, "ao", "ackOffset", 0)),
            "start_offset": int(_get(obj, "so", "startOffset", 0)),
            "consumer_group": str(_get(obj, "c", "consumerGroup", "")),
            "topic": str(_get(obj, "t", "topic", "")),
            "queue_id": int(_get(obj, "q", "queueId", 0)),
            "pop_time": int(_get(obj, "pt", "popTime", 0)),
            "broker_name": _get(obj, "bn", "brokerName"),
        }

    @classmethod
    def from_json(cls, data: bytes | memoryview) -> AckMsg:
        return cls(**cls._fields(orjson.loads(bytes(data))))

    def unique_id(self) -> str:
        """PopMessageProcessor.genAckUniqueId: the record's UNIQ_KEY."""
        return SPLIT.join(
            [
                self.topic,
                str(self.queue_id),
                str(self.ack_offset),
                self.consumer_group,
                str(self.pop_time),
                str(self.broker_name),
                ACK_TAG,
            ]
        )


@dataclass(slots=True)
class BatchAckMsg(AckMsg):
    """Several acknowledged offsets of one checkpoint (BATCH_ACK_MESSAGE); ack_offset is -1."""

    ack_offset_list: list[int] = field(default_factory=list)

    @property
    def offsets(self) -> list[int]:
        return list(self.ack_offset_list)

    def _obj(self) -> dict[str, Any]:
        return {**AckMsg._obj(self), "aol": self.ack_offset_list}

    @classmethod
    def from_json(cls, data: bytes | memoryview) -> BatchAckMsg:
        obj = orjson.loads(bytes(data))
        fields = cls._fields(obj)
        return cls(**fields, ack_offset_list=[int(o) for o in _get(obj, "aol", "ackOffsetList", None) or []])

    def unique_id(self) -> str:
        """PopMessageProcessor.genBatchAckUniqueId (Java's List.toString of the offsets)."""
        offsets = "[" + ", ".join(map(str, self.ack_offset_list)) + "]"
        return SPLIT.join(
            [self.topic, str(self.queue_id), offsets, self.consumer_group, str(self.pop_time), BATCH_ACK_TAG]
        )


def ck_unique_id(ck: PopCheckPoint) -> str:
    """PopMessageProcessor.genCkUniqueId."""
    return SPLIT.join(
        [
            ck.topic,
            str(ck.queue_id),
            str(ck.start_offset),
            ck.cid,
            str(ck.pop_time),
            str(ck.broker_name),
            CK_TAG,
        ]
    )


def _record(
    topic: str, queue_id: int, tag: str, uniq: str, body: bytes, now_ms: int, host: Host
) -> MessageExtBrokerInner:
    props = {P.TAGS: tag, P.UNIQ_KEY: uniq, P.TIMER_DELIVER_MS: str(now_ms)}
    return MessageExtBrokerInner(
        topic=topic,
        body=body,
        properties=props,
        queue_id=queue_id,
        born_timestamp=now_ms,
        born_host=host,
        store_host=host,
        properties_string=P.properties_to_string(props),
    )


def ck_message(
    topic: str, revive_qid: int, ck: PopCheckPoint, now_ms: int, host: Host
) -> MessageExtBrokerInner:
    """The revive-topic message that carries a checkpoint."""
    return _record(topic, revive_qid, CK_TAG, ck_unique_id(ck), ck.to_json(), now_ms, host)


def ack_message(topic: str, revive_qid: int, ack: AckMsg, now_ms: int, host: Host) -> MessageExtBrokerInner:
    """The revive-topic message that carries an ack or a batch ack."""
    tag = BATCH_ACK_TAG if isinstance(ack, BatchAckMsg) else ACK_TAG
    return _record(topic, revive_qid, tag, ack.unique_id(), ack.to_json(), now_ms, host)


def parse_record(tag: str | None, body: bytes | memoryview) -> PopCheckPoint | AckMsg | None:
    """A revive-topic message's record; None for other tags. ValueError when the body is malformed."""
    try:
        if tag == CK_TAG:
            return PopCheckPoint.from_json(body)
        if tag == ACK_TAG:
            return AckMsg.from_json(body)
        if tag == BATCH_ACK_TAG:
            return BatchAckMsg.from_json(body)
    except (orjson.JSONDecodeError, TypeError) as exc:
        raise ValueError(f"malformed {tag} record: {exc}") from None
    return None
