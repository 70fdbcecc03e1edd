"""RocketMQ 5's POP consumption on the wire: headers, the batch-ack body, the extra-info string and retry names.

Client and broker both need these (the client builds acks from what the broker wrote), so they live here,
beside the other headers, as Apache keeps them in its remoting module (PopMessageRequestHeader, ExtraInfoUtil,
KeyBuilder, BatchAckMessageRequestBody). Formats are Apache 5.5's:

* the extra info a popped message carries in its ``POP_CK`` property and an ack sends back is
  ``ckQueueOffset popTime invisibleTime reviveQid retryMark brokerName queueId [queueOffset]``, space
  separated; retryMark is 0 (normal topic), 1 (``%RETRY%group_topic``) or 2 (``%RETRY%group+topic``);
* a POP answer's ``startOffsetInfo`` is ``mark qid start;...``, ``msgOffsetInfo`` is ``mark qid o1,o2;...``
  and ``orderCountInfo`` is ``mark qid count`` or ``mark qo<qid>%<offset> count`` items;
* a batch ack's bit set travels as base64 of Java's ``BitSet.toByteArray()`` (little-endian bytes).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import orjson

from mqtools.common.javanum import INT_RANGE, LONG_RANGE
from mqtools.common.topics import RETRY_GROUP_TOPIC_PREFIX
from mqtools.remoting.errors import BodyError
from mqtools.remoting.headers import Header

#: MessageConst.PROPERTY_POP_CK: the extra info of a popped message; PROPERTY_FIRST_POP_TIME.
POP_CK = "POP_CK"
FIRST_POP_TIME = "1ST_POP_TIME"
KEY_SEPARATOR = " "
#: KeyBuilder.POP_ORDER_REVIVE_QUEUE: the revive queue id that marks an orderly (FIFO) pop.
POP_ORDER_REVIVE_QUEUE = 999
#: PopMessageRequestHeader.initMode (ConsumeInitMode): where a group with no offset starts.
INIT_MODE_MIN = 0
INIT_MODE_MAX = 1

NORMAL_MARK, RETRY_MARK_V1, RETRY_MARK_V2 = "0", "1", "2"


# ---------------------------------------------------------------- retry topic names (KeyBuilder)


def pop_retry_topic_v1(topic: str, group: str) -> str:
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}_{topic}"


def pop_retry_topic_v2(topic: str, group: str) -> str:
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}+{topic}"


def is_pop_retry_topic_v2(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and "+" in topic


def retry_mark(topic: str) -> str:
    """The retry mark of ExtraInfoUtil.getRetry: which kind of topic a message was popped from."""
    if is_pop_retry_topic_v2(topic):
        return RETRY_MARK_V2
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return RETRY_MARK_V1
    return NORMAL_MARK


def real_topic(topic: str, group: str, mark: str) -> str:
    """The topic a message with this retry mark really sits in (ExtraInfoUtil.getRealTopic)."""
    if mark == NORMAL_MARK:
        return topic
    if mark == RETRY_MARK_V1:
        return pop_retry_topic_v1(topic, group)
    if mark == RETRY_MARK_V2:
        return pop_retry_topic_v2(topic, group)
    raise ValueError(f"bad retry mark {mark!r}")


def normal_topic(topic: str, group: str) -> str:
    """KeyBuilder.parseNormalTopic: the topic a POP retry topic of `group` serves."""
    for sep in ("+", "_"):
        prefix = f"{RETRY_GROUP_TOPIC_PREFIX}{group}{sep}"
        if topic.startswith(prefix):
            return topic[len(prefix) :]
    return topic


# ---------------------------------------------------------------- extra info (ExtraInfoUtil)


def _number(text: str, bounds: range) -> int:
    """A Java int or long field; ValueError otherwise."""
    value = int(text)
    if value not in bounds:
        raise ValueError(f"field {text[:24]!r} is out of range")
    return value


@dataclass(frozen=True, slots=True)
class ExtraInfo:
    """One popped message's receipt: which checkpoint it belongs to and where it sits."""

    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: str
    broker_name: str
    queue_id: int
    queue_offset: int | None = None

    @classmethod
    def parse(cls, text: str | None) -> ExtraInfo:
        """ValueError when the string is not an extra info (too short, or a field not a number)."""
        if text is None:
            raise ValueError("extraInfo is null")
        parts = text.split(KEY_SEPARATOR)
        if len(parts) < 7:
            raise ValueError(f"extraInfo has {len(parts)} fields, 7 or 8 expected: {text[:80]!r}")
        if parts[4] not in (NORMAL_MARK, RETRY_MARK_V1, RETRY_MARK_V2):
            raise ValueError(f"extraInfo has a bad retry mark {parts[4][:8]!r}")
        longs = [_number(p, LONG_RANGE) for p in (parts[0], parts[1], parts[2])]
        return cls(
            *longs,
            _number(parts[3], INT_RANGE),
            parts[4],
            parts[5],
            _number(parts[6], INT_RANGE),
            _number(parts[7], LONG_RANGE) if len(parts) > 7 else None,
        )

    def format(self) -> str:
        fields = [
            self.ck_queue_offset,
            self.pop_time,
            self.invisible_time,
            self.revive_qid,
            self.retry,
            self.broker_name,
            self.queue_id,
        ]
        if self.queue_offset is not None:
            fields.append(self.queue_offset)
        return KEY_SEPARATOR.join(str(f) for f in fields)

    @property
    def is_order(self) -> bool:
        return self.revive_qid == POP_ORDER_REVIVE_QUEUE

    def topic_of(self, topic: str, group: str) -> str:
        return real_topic(topic, group, self.retry)


def build_extra_info(
    ck_queue_offset: int,
    pop_time: int,
    invisible_time: int,
    revive_qid: int,
    topic: str,
    broker_name: str,
    queue_id: int,
    queue_offset: int | None = None,
) -> str:
    """ExtraInfoUtil.buildExtraInfo: `topic` is the topic the message was read from (its retry mark)."""
    return ExtraInfo(
        ck_queue_offset,
        pop_time,
        invisible_time,
        revive_qid,
        retry_mark(topic),
        broker_name,
        queue_id,
        queue_offset,
    ).format()


def queue_key(topic: str, queue_id: int) -> str:
    """ExtraInfoUtil.getStartOffsetInfoMapKey: ``mark@queueId``."""
    return f"{retry_mark(topic)}@{queue_id}"


def offset_key(topic: str, queue_id: int, offset: int) -> str:
    """ExtraInfoUtil.getQueueOffsetMapKey: ``mark@qo<queueId>%<offset>``."""
    return f"{retry_mark(topic)}@qo{queue_id}%{offset}"


def _items(text: str | None) -> list[list[str]]:
    if not text:
        return []
    out = []
    for one in text.split(";"):
        parts = one.split(KEY_SEPARATOR)
        if len(parts) != 3:
            raise ValueError(f"bad POP offset info item {one[:80]!r}")
        out.append(parts)
    return out


def _keyed(text: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for mark, qid, value in _items(text):
        key = f"{mark}@{qid}"
        if key in out:
            raise ValueError(f"duplicate POP offset info key {key}")
        out[key] = value
    return out


def format_start_offset_info(items: list[tuple[str, int, int]]) -> str:
    """(topic read, queue id, start offset) per queue read."""
    return ";".join(f"{retry_mark(t)} {q} {o}" for t, q, o in items)


def parse_start_offset_info(text: str | None) -> dict[str, int]:
    return {k: int(v) for k, v in _keyed(text).items()}


def format_msg_offset_info(items: list[tuple[str, int, list[int]]]) -> str:
    """(topic read, queue id, the offsets of the messages returned) per queue read."""
    return ";".join(f"{retry_mark(t)} {q} {','.join(map(str, offs))}" for t, q, offs in items)


def parse_msg_offset_info(text: str | None) -> dict[str, list[int]]:
    return {k: [int(x) for x in v.split(",")] for k, v in _keyed(text).items()}


def format_order_count_info(items: list[tuple[str, int, list[tuple[int, int]]]]) -> str:
    """(topic, queue id, (queue offset, times delivered before) per message) per queue read, as Apache's broker
    writes it: an entry per message delivered before, then the queue's with the fewest times (the form clients
    before per-message counts read, and what the others take for a message with no entry)."""
    out = []
    for t, q, counts in items:
        mark = retry_mark(t)
        out.extend(f"{mark} qo{q}%{o} {c}" for o, c in counts if c > 0)
        out.append(f"{mark} {q} {min((c for _, c in counts), default=0)}")
    return ";".join(out)


def parse_order_count_info(text: str | None) -> dict[str, int]:
    return {k: int(v) for k, v in _keyed(text).items()}


# ---------------------------------------------------------------- headers


@dataclass(slots=True)
class PopMessageRequestHeader(Header):
    consumer_group: str
    topic: str
    queue_id: int
    max_msg_nums: int
    invisible_time: int
    poll_time: int
    born_time: int
    init_mode: int
    exp_type: str | None = None
    exp: str | None = None
    order: bool | None = None
    attempt_id: str | None = None


@dataclass(slots=True)
class PopMessageResponseHeader(Header):
    pop_time: int
    invisible_time: int
    revive_qid: int
    rest_num: int
    start_offset_info: str | None = None
    msg_offset_info: str | None = None
    order_count_info: str | None = None


@dataclass(slots=True)
class AckMessageRequestHeader(Header):
    consumer_group: str
    topic: str
    queue_id: int
    extra_info: str
    offset: int


@dataclass(slots=True)
class ChangeInvisibleTimeRequestHeader(Header):
    consumer_group: str
    topic: str
    queue_id: int
    extra_info: str
    offset: int
    invisible_time: int


@dataclass(slots=True)
class ChangeInvisibleTimeResponseHeader(Header):
    pop_time: int
    invisible_time: int
    revive_qid: int


@dataclass(slots=True)
class PeekMessageRequestHeader(Header):
    consumer_group: str
    topic: str
    queue_id: int
    max_msg_nums: int


@dataclass(slots=True)
class NotificationRequestHeader(Header):
    consumer_group: str
    topic: str
    queue_id: int
    poll_time: int
    born_time: int
    order: bool | None = None
    attempt_id: str | None = None


@dataclass(slots=True)
class NotificationResponseHeader(Header):
    has_msg: bool = False
    polling_full: bool = False


# ---------------------------------------------------------------- batch ack body


def bitset_to_b64(indexes: list[int]) -> str:
    """Java's BitSet.toByteArray() (little-endian, no trailing zero bytes), base64 as fastjson writes it."""
    value = 0
    for i in indexes:
        value |= 1 << i
    raw = value.to_bytes((value.bit_length() + 7) // 8, "little")
    return base64.b64encode(raw).decode()


#: The most bits a batch ack's bit set may have (a checkpoint holds at most 32 messages; Apache sets no limit).
MAX_BITSET_BITS = 1 << 16


def bitset_from_b64(text: str) -> list[int]:
    """ValueError when it is not base64 or longer than MAX_BITSET_BITS."""
    raw = base64.b64decode(text, validate=True)
    if len(raw) * 8 > MAX_BITSET_BITS:
        raise ValueError(f"batch ack bit set of {len(raw) * 8} bits")
    value = int.from_bytes(raw, "little")
    out, i = [], 0
    while value:
        if value & 1:
            out.append(i)
        value >>= 1
        i += 1
    return out


@dataclass(slots=True)
class BatchAck:
    """One checkpoint's acks in a BATCH_ACK_MESSAGE: `indexes` are offsets relative to start_offset."""

    consumer_group: str
    topic: str
    retry: str
    start_offset: int
    queue_id: int
    revive_queue_id: int
    pop_time: int
    invisible_time: int
    indexes: list[int] = field(default_factory=list)

    def to_obj(self) -> dict[str, Any]:
        return {
            "c": self.consumer_group,
            "t": self.topic,
            "r": self.retry,
            "so": self.start_offset,
            "q": self.queue_id,
            "rq": self.revive_queue_id,
            "pt": self.pop_time,
            "it": self.invisible_time,
            "b": bitset_to_b64(self.indexes),
        }

    @classmethod
    def from_obj(cls, obj: dict[str, Any]) -> BatchAck:
        def get(short: str, long: str, default: Any = None) -> Any:
            return obj.get(short, obj.get(long, default))

        def num(short: str, long: str, bounds: range) -> int:
            return _number(str(int(get(short, long, 0))), bounds)

        bits = get("b", "bitSet", "")
        return cls(
            str(get("c", "consumerGroup", "")),
            str(get("t", "topic", "")),
            str(get("r", "retry", "0")),
            num("so", "startOffset", LONG_RANGE),
            num("q", "queueId", INT_RANGE),
            num("rq", "reviveQueueId", INT_RANGE),
            num("pt", "popTime", LONG_RANGE),
            num("it", "invisibleTime", LONG_RANGE),
            bitset_from_b64(str(bits)) if bits else [],
        )


@dataclass(slots=True)
class BatchAckMessageRequestBody:
    broker_name: str
    acks: list[BatchAck]

    def to_json(self) -> bytes:
        return orjson.dumps(
            {"acks": [a.to_obj() for a in self.acks], "brokerName": self.broker_name},
            option=orjson.OPT_SORT_KEYS,
        )

    @classmethod
    def from_json(cls, data: bytes | None) -> BatchAckMessageRequestBody:
        """BodyError when the body is not a batch ack."""
        try:
            obj = orjson.loads(data or b"")
            acks = [BatchAck.from_obj(a) for a in obj.get("acks") or []]
            return cls(str(obj.get("brokerName") or ""), acks)
        except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError) as exc:
            raise BodyError(f"bad BATCH_ACK_MESSAGE body: {exc}") from None
