"""Messages between gRPC (apache.rocketmq.v2.Message) and remoting (properties, sys flag), both ways.

gRPC -> remoting follows Apache's SendMessageActivity (buildMessageProperty, buildSysFlag, the checks and
their codes); remoting -> gRPC follows GrpcConverter.buildMessage. Pure functions: `now_ms` and the peer's
address come in as arguments, so tests give bytes and fields and look at what comes out.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.common import properties as P
from mqtools.common import sysflag
from mqtools.common.message import Message, MessageExt
from mqtools.common.topics import is_system_group, is_system_topic
from mqtools.common.validation import ValidationError, check_group, check_topic
from mqtools.proxy.config import ProxyConfig
from mqtools.proxy.errors import Code, ProxyError

# MessageConst property names the common module does not name.
TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
TIMER_DELAY_MS = "TIMER_DELAY_MS"
BORN_HOST = "__BORNHOST"
BORN_TIMESTAMP = "BORN_TIMESTAMP"
TRACE_CONTEXT = "TRACE_CONTEXT"
POP_CK = "POP_CK"
DLQ_ORIGIN_TOPIC = "DLQ_ORIGIN_TOPIC"
DLQ_ORIGIN_MESSAGE_ID = "DLQ_ORIGIN_MESSAGE_ID"

#: MessageConst.STRING_HASH_SET (5.5.0): property names a client may not set as user properties, and that are not
#: handed back to a consumer as user properties (ORIGIN_GROUP: Apache 5's broker stamps it on a message its POP
#: revive service puts back for a consumer group).
SYSTEM_PROPERTIES = frozenset({
    "TRACE_ON", "MSG_REGION", "KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID", "TRAN_MSG",
    "PGROUP", "MIN_OFFSET", "MAX_OFFSET", "BUYER_ID", "ORIGIN_MESSAGE_ID", "TRANSFER_FLAG", "CORRECTION_FLAG",
    "MQ2_FLAG", "RECONSUME_TIME", "UNIQ_KEY", "MAX_RECONSUME_TIMES", "CONSUME_START_TIME", "POP_CK",
    "POP_CK_OFFSET", "1ST_POP_TIME", "TRAN_PREPARED_QUEUE_OFFSET", "DUP_INFO", "EXTEND_UNIQ_INFO", "INSTANCE_ID",
    "CORRELATION_ID", "REPLY_TO_CLIENT", "TTL", "ARRIVE_TIME", "PUSH_REPLY_TIME", "CLUSTER", "MSG_TYPE",
    "INNER_MULTI_QUEUE_OFFSET", TIMER_DELAY_MS, TIMER_DELAY_SEC, TIMER_DELIVER_MS, "TIMER_ENQUEUE_MS",
    "TIMER_DEQUEUE_MS", "TIMER_ROLL_TIMES", "TIMER_OUT_MS", "TIMER_DEL_UNIQKEY", "TIMER_DELAY_LEVEL", BORN_HOST,
    BORN_TIMESTAMP, DLQ_ORIGIN_TOPIC, DLQ_ORIGIN_MESSAGE_ID, "__CRC32#", "ORIGIN_GROUP", "_SYS_MSG_PRIORITY_",
    "__LITE_TOPIC",
})


@dataclass(slots=True)
class Outgoing:
    """One gRPC message made ready for SEND_MESSAGE_V2."""

    message: Message
    sys_flag: int
    message_group: str
    born_ms: int


def _has_control(text: str) -> bool:
    """Guava's CharMatcher.javaIsoControl: U+0000-U+001F and U+007F-U+009F."""
    return any(unicodedata.category(c) == "Cc" for c in text)


def validate_topic(name: str) -> str:
    """GrpcValidator.validateTopic: ILLEGAL_TOPIC for a malformed name or a system topic."""
    try:
        check_topic(name)
    except ValidationError as exc:
        raise ProxyError(Code.ILLEGAL_TOPIC, str(exc)) from None
    if is_system_topic(name):
        raise ProxyError(Code.ILLEGAL_TOPIC, "cannot access system topic")
    return name


def validate_group(name: str) -> str:
    """GrpcValidator.validateConsumerGroup: ILLEGAL_CONSUMER_GROUP for a malformed or system group."""
    try:
        check_group(name)
    except ValidationError as exc:
        raise ProxyError(Code.ILLEGAL_CONSUMER_GROUP, str(exc)) from None
    if is_system_group(name):
        raise ProxyError(Code.ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group")
    return name


def validate_tag(tag: str) -> None:
    if tag:
        if not tag.strip():
            raise ProxyError(Code.ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace")
        if "|" in tag:
            raise ProxyError(Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
        if _has_control(tag):
            raise ProxyError(Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")


def _validate_key(key: str) -> None:
    if key:
        if not key.strip():
            raise ProxyError(Code.ILLEGAL_MESSAGE_KEY, "key cannot be the char sequence of whitespace")
        if _has_control(key):
            raise ProxyError(Code.ILLEGAL_MESSAGE_KEY, "key cannot contain control character")


def _validate_group(group: str, config: ProxyConfig) -> None:
    if not group.strip():
        raise ProxyError(Code.ILLEGAL_MESSAGE_GROUP, "message group cannot be the char sequence of whitespace")
    limit = config.max_message_group_size
    if limit > 0 and len(group.encode()) >= limit:
        raise ProxyError(Code.ILLEGAL_MESSAGE_GROUP, f"message group exceed the max size {limit}")
    if _has_control(group):
        raise ProxyError(Code.ILLEGAL_MESSAGE_GROUP, "message group cannot contain control character")


def sys_flag_of(msg: pb.Message) -> int:
    """buildSysFlag: a GZIP body is sent compressed as it came; a transactional one as a half message."""
    flag = 0
    if msg.system_properties.body_encoding == pb.GZIP:
        flag |= sysflag.COMPRESSED_FLAG
    if msg.system_properties.message_type == pb.TRANSACTION:
        flag |= sysflag.TRANSACTION_PREPARED_TYPE
    return flag


def to_remoting(msg: pb.Message, config: ProxyConfig, *, producer_group: str, peer: str, now_ms: int) -> Outgoing:
    """The remoting message for one gRPC message (Apache's buildMessage + buildMessageProperty)."""
    body = msg.body
    if config.enable_message_body_empty_check and not body:
        raise ProxyError(Code.MESSAGE_BODY_EMPTY, "message body cannot be empty")
    if config.max_message_size > 0 and len(body) > config.max_message_size:
        raise ProxyError(Code.MESSAGE_BODY_TOO_LARGE, f"message body cannot exceed the max {config.max_message_size}")
    sysp = msg.system_properties
    user = dict(msg.user_properties)
    if len(user) > config.user_property_max_num:
        raise ProxyError(Code.MESSAGE_PROPERTIES_TOO_LARGE,
                         f"too many user properties, max is {config.user_property_max_num}")
    size = 0
    for key, value in user.items():
        if key in SYSTEM_PROPERTIES:
            raise ProxyError(Code.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property is used by system: {key}")
        if _has_control(key):
            raise ProxyError(Code.ILLEGAL_MESSAGE_PROPERTY_KEY, "the key of property cannot contain control character")
        if _has_control(value):
            raise ProxyError(Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
                             "the value of property cannot contain control character")
        size += len(key.encode()) + len(value.encode())
    props = dict(user)
    tag = sysp.tag
    validate_tag(tag)
    if tag:
        props[P.TAGS] = tag
    size += len(tag.encode())
    for key in sysp.keys:
        _validate_key(key)
        size += len(key.encode())
    if sysp.keys:
        props[P.KEYS] = " ".join(sysp.keys)
    if size > config.max_user_property_size:
        raise ProxyError(Code.MESSAGE_PROPERTIES_TOO_LARGE,
                         f"the total size of user property is too large, max is {config.max_user_property_size}")
    if not sysp.message_id.strip():
        raise ProxyError(Code.ILLEGAL_MESSAGE_ID, "message id cannot be empty")
    props[P.UNIQ_KEY] = sysp.message_id
    if sysp.message_type == pb.TRANSACTION:
        props[P.TRAN_MSG] = "true"
        if sysp.HasField("orphaned_transaction_recovery_duration"):
            seconds = sysp.orphaned_transaction_recovery_duration.seconds
            limit = config.max_transaction_recovery_second
            if limit > 0 and seconds > limit:
                raise ProxyError(Code.BAD_REQUEST,
                                 f"the max transaction recovery time of message is too large, max is {limit}")
            props[P.CHECK_IMMUNITY_TIME_IN_SECONDS] = str(seconds)
    if sysp.HasField("delivery_timestamp"):
        deliver_ms = delivery_ms(sysp.delivery_timestamp)
        limit = config.max_delay_time_mills
        if limit > 0 and deliver_ms - now_ms > limit:
            raise ProxyError(Code.ILLEGAL_DELIVERY_TIME, f"the max delay time of message is too large, max is {limit}")
        props[TIMER_DELIVER_MS] = str(deliver_ms)
    props[P.RECONSUME_TIME] = str(sysp.delivery_attempt)
    props[P.PGROUP] = producer_group
    group = sysp.message_group
    if group:
        _validate_group(group, config)
        props[P.SHARDING_KEY] = group
    if sysp.trace_context:
        props[TRACE_CONTEXT] = sysp.trace_context
    born_host = sysp.born_host if sysp.born_host.strip() else peer
    if born_host.strip():
        props[BORN_HOST] = born_host
    born_ms = now_ms
    if sysp.HasField("born_timestamp") and _valid_timestamp(sysp.born_timestamp):
        born_ms = sysp.born_timestamp.ToMilliseconds()
        props[BORN_TIMESTAMP] = str(born_ms)
    props[P.WAIT] = "true"
    return Outgoing(Message(msg.topic.name, bytes(body), 0, props), sys_flag_of(msg), group, born_ms)


#: Timestamp's valid range in seconds: years 0001 to 9999.
_MIN_SECONDS, _MAX_SECONDS = -62135596800, 253402300799


def delivery_ms(ts: object) -> int:
    """A delivery timestamp in milliseconds. The 5.1.2 Python client writes milliseconds into `seconds`; such a
    value (past year 9999 as seconds) is read as milliseconds here, where Apache's proxy refuses the message."""
    seconds = ts.seconds  # type: ignore[attr-defined]
    if seconds > _MAX_SECONDS:
        return seconds
    if not _valid_timestamp(ts):
        raise ProxyError(Code.ILLEGAL_DELIVERY_TIME, f"the delivery timestamp is not valid: seconds {seconds}")
    return ts.ToMilliseconds()  # type: ignore[attr-defined]


def duration_ms(d: object) -> int:
    """A Duration in milliseconds, without protobuf's range check (which raises on a hostile value)."""
    return d.seconds * 1000 + d.nanos // 1_000_000  # type: ignore[attr-defined]


def _valid_timestamp(ts: object) -> bool:
    """Timestamps.isValid: seconds within years 1..9999, nanos within a second."""
    seconds, nanos = ts.seconds, ts.nanos  # type: ignore[attr-defined]
    return _MIN_SECONDS <= seconds <= _MAX_SECONDS and 0 <= nanos < 1_000_000_000


def _host_text(host: tuple[str, int]) -> str:
    """NetworkUtil.socketAddress2String: `ip:port`."""
    return f"{host[0]}:{host[1]}"


def to_grpc(msg: MessageExt, *, topic: str | None = None, now_ms: int = 0) -> pb.Message:
    """The gRPC message for a stored one (GrpcConverter.buildMessage). `topic` names the topic the client
    asked for (a message popped from a retry topic is handed back under its real topic)."""
    props = msg.properties
    sysp = pb.SystemProperties()
    tag = props.get(P.TAGS)
    if tag is not None:
        sysp.tag = tag
    keys = props.get(P.KEYS)
    if keys is not None:
        sysp.keys.extend(keys.split(" "))
    sysp.message_id = props.get(P.UNIQ_KEY) or msg.msg_id
    sysp.body_digest.type = pb.MD5
    sysp.body_digest.checksum = hashlib.md5(msg.body).hexdigest().upper()
    sysp.body_encoding = pb.GZIP if msg.sys_flag & sysflag.COMPRESSED_FLAG else pb.IDENTITY
    if props.get(P.TRAN_MSG) == "true":
        sysp.message_type = pb.TRANSACTION
    elif P.DELAY in props or TIMER_DELIVER_MS in props or TIMER_DELAY_SEC in props:
        sysp.message_type = pb.DELAY
    elif P.SHARDING_KEY in props:
        sysp.message_type = pb.FIFO
    else:
        sysp.message_type = pb.NORMAL
    sysp.born_timestamp.FromMilliseconds(msg.born_timestamp)
    born_host = props.get(BORN_HOST, "").strip() or _host_text(msg.born_host)
    if born_host:
        sysp.born_host = born_host
    sysp.store_timestamp.FromMilliseconds(msg.store_timestamp)
    sysp.store_host = _host_text(msg.store_host)
    if TIMER_DELAY_SEC in props:
        sysp.delivery_timestamp.FromMilliseconds(now_ms + int(props[TIMER_DELAY_SEC]) * 1000)
    elif TIMER_DELIVER_MS in props:
        sysp.delivery_timestamp.FromMilliseconds(int(props[TIMER_DELIVER_MS]))
    if P.SHARDING_KEY in props:
        sysp.message_group = props[P.SHARDING_KEY]
    if POP_CK in props:
        sysp.receipt_handle = props[POP_CK]
    sysp.queue_id = msg.queue_id
    sysp.queue_offset = msg.queue_offset
    sysp.delivery_attempt = msg.reconsume_times + 1
    if TRACE_CONTEXT in props:
        sysp.trace_context = props[TRACE_CONTEXT]
    if DLQ_ORIGIN_TOPIC in props and DLQ_ORIGIN_MESSAGE_ID in props:
        sysp.dead_letter_queue.topic = props[DLQ_ORIGIN_TOPIC]
        sysp.dead_letter_queue.message_id = props[DLQ_ORIGIN_MESSAGE_ID]
    user = {k: v for k, v in props.items() if k not in SYSTEM_PROPERTIES}
    out = pb.Message(user_properties=user, system_properties=sysp, body=msg.body)
    out.topic.name = topic if topic is not None else msg.topic
    return out
