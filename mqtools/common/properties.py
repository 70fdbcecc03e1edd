"""Message property keys and the properties string codec (``name\\x01value\\x02...``)."""

from __future__ import annotations

from mqtools.common import speedups

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"

KEYS = "KEYS"
TAGS = "TAGS"
WAIT = "WAIT"
DELAY = "DELAY"
RETRY_TOPIC = "RETRY_TOPIC"
REAL_TOPIC = "REAL_TOPIC"
REAL_QID = "REAL_QID"
TRAN_MSG = "TRAN_MSG"
PGROUP = "PGROUP"
MIN_OFFSET = "MIN_OFFSET"
MAX_OFFSET = "MAX_OFFSET"
BUYER_ID = "BUYER_ID"
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
TRANSFER_FLAG = "TRANSFER_FLAG"
CORRECTION_FLAG = "CORRECTION_FLAG"
MQ2_FLAG = "MQ2_FLAG"
RECONSUME_TIME = "RECONSUME_TIME"
MSG_REGION = "MSG_REGION"
TRACE_SWITCH = "TRACE_ON"
UNIQ_KEY = "UNIQ_KEY"
MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
CONSUME_START_TIMESTAMP = "CONSUME_START_TIME"
CLUSTER = "CLUSTER"
TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
#: RocketMQ 5's TransactionalMessageUtil.TRANSACTION_ID: a half message's UNIQ_KEY, stamped by the broker.
TRANSACTION_ID = "__transactionId__"
#: MessageConst.PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET: a check's copy of a half message names its original.
TRANSACTION_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
SHARDING_KEY = "__SHARDINGKEY"
INSTANCE_ID = "INSTANCE_ID"
# timer messages (RIP-43, RocketMQ 5's MessageConst): what a producer asks for ...
TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
TIMER_DELAY_MS = "TIMER_DELAY_MS"
# ... and what the broker's timer writes
TIMER_OUT_MS = "TIMER_OUT_MS"
TIMER_ENQUEUE_MS = "TIMER_ENQUEUE_MS"
TIMER_DEQUEUE_MS = "TIMER_DEQUEUE_MS"
TIMER_ROLL_TIMES = "TIMER_ROLL_TIMES"
TIMER_DEL_UNIQKEY = "TIMER_DEL_UNIQKEY"

def properties_to_string(props: dict[str, str] | None) -> str:
    """Encode as RocketMQ does: every pair ends with \\x02; None values are skipped."""
    if not props:
        return ""
    return "".join(f"{k}\x01{v}\x02" for k, v in props.items() if v is not None)


def string_to_properties(text: str | None) -> dict[str, str]:
    """Decode a properties string; pieces without a separator or shorter than 3 chars are ignored."""
    props: dict[str, str] = {}
    if not text:
        return props
    for item in text.split(PROPERTY_SEPARATOR):
        if len(item) < 3:
            continue
        name, sep, value = item.partition(NAME_VALUE_SEPARATOR)
        if sep:
            props[name] = value
    return props


def drop_property(text: str, name: str, value: str) -> str:
    """`text` without its `name` item (whose decoded value is `value`), the rest left byte for byte: how
    a broker leaves WAIT out of the string it stores without decoding and re-encoding the whole map."""
    item = f"{name}{NAME_VALUE_SEPARATOR}{value}"
    at = 0 if text.startswith(item) else text.find(f"{PROPERTY_SEPARATOR}{item}") + 1
    end = at + len(item)
    if text[at:end] == item and text[end:end + 1] in ("", PROPERTY_SEPARATOR):
        return text[:at] + text[end + 1:]
    props = string_to_properties(text)
    props.pop(name, None)
    return properties_to_string(props)


def message_keys(props: dict[str, str]) -> list[str]:
    """The business keys (KEYS split on single spaces, blanks dropped)."""
    return [k for k in props.get(KEYS, "").split(" ") if k]


_TAGS_MARK = b"\x02" + TAGS.encode() + b"\x01"
_KEYS_MARK = b"\x02" + KEYS.encode() + b"\x01"
_UNIQ_MARK = b"\x02" + UNIQ_KEY.encode() + b"\x01"


def dispatch_values(encoded: bytes) -> tuple[str | None, str | None, str | None]:
    """(TAGS, KEYS, UNIQ_KEY) straight from an encoded properties string, without building a dict:
    the hot path of batch puts. Same result as string_to_properties for these keys (last one wins)."""
    data = b"\x02" + encoded + b"\x02"
    i = data.rfind(_TAGS_MARK)
    tags = data[i + 6:data.find(b"\x02", i + 6)].decode() if i >= 0 else None
    i = data.rfind(_KEYS_MARK)
    keys = data[i + 6:data.find(b"\x02", i + 6)].decode() if i >= 0 else None
    i = data.rfind(_UNIQ_MARK)
    n = len(_UNIQ_MARK)
    uniq = data[i + n:data.find(b"\x02", i + n)].decode() if i >= 0 else None
    return tags, keys, uniq


_compiled = speedups.compiled()
if _compiled is not None:
    dispatch_values = _compiled.dispatch_values
