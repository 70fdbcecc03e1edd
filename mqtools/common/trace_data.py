"""RocketMQ's message trace records (the client's TraceDataEncoder), sans IO.

A trace message in RMQ_SYS_TRACE_TOPIC carries one or more records; each record ends with \\x02 and
its fields are separated by \\x01, in an order fixed per type:

    Pub             type, time, region, group, topic, msgId, tags, keys, storeHost, bodyLength, cost,
                    msgType, offsetMsgId, success[, clientHost]
    SubBefore       type, time, region, group, requestId, msgId, retryTimes, keys
    SubAfter        type, requestId, msgId, cost, success, keys[, contextCode[, time, group]]
    EndTransaction  type, time, region, group, topic, msgId, tags, keys, storeHost, msgType,
                    transactionId, transactionState, fromTransactionCheck

The trace message's KEYS are the traced messages' ids and keys, so a query by key on the trace topic
finds every record of a message. Java writes a missing value as the text "null"; so does this encoder.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

CONTENT_SPLITOR = "\x01"
FIELD_SPLITOR = "\x02"
DEFAULT_REGION = "DefaultRegion"


class TraceType(enum.Enum):
    Pub = "Pub"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


class MessageType(enum.IntEnum):
    """The client's MessageType, written by its ordinal."""

    Normal_Msg = 0
    Trans_Msg_Half = 1
    Trans_msg_Commit = 2
    Delay_Msg = 3


@dataclass(slots=True)
class TraceRecord:
    """One record of one message; fields a type does not carry stay None."""

    type: TraceType
    msg_id: str
    timestamp: int | None = None
    region: str | None = None
    group: str | None = None
    topic: str | None = None
    tags: str | None = None
    keys: str | None = None
    store_host: str | None = None
    body_length: int | None = None
    cost_ms: int | None = None
    msg_type: int | None = None
    offset_msg_id: str | None = None
    success: bool | None = None
    client_host: str | None = None
    request_id: str | None = None
    retry_times: int | None = None
    context_code: int | None = None
    transaction_id: str | None = None
    transaction_state: str | None = None
    from_transaction_check: bool | None = None


def _text(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def encode(record: TraceRecord) -> str:
    """One record, terminated, as the Java client writes it."""
    r = record
    match r.type:
        case TraceType.Pub:
            fields = [r.type.value, r.timestamp, r.region, r.group, r.topic, r.msg_id, r.tags, r.keys, r.store_host,
                      r.body_length, r.cost_ms, r.msg_type, r.offset_msg_id, r.success]
        case TraceType.SubBefore:
            fields = [r.type.value, r.timestamp, r.region, r.group, r.request_id, r.msg_id, r.retry_times, r.keys]
        case TraceType.SubAfter:
            fields = [r.type.value, r.request_id, r.msg_id, r.cost_ms, r.success, r.keys, r.context_code,
                      r.timestamp, r.group]
        case TraceType.EndTransaction:
            fields = [r.type.value, r.timestamp, r.region, r.group, r.topic, r.msg_id, r.tags, r.keys, r.store_host,
                      r.msg_type, r.transaction_id, r.transaction_state, r.from_transaction_check]
    return CONTENT_SPLITOR.join(_text(f) for f in fields) + FIELD_SPLITOR


def trace_keys(records: list[TraceRecord]) -> list[str]:
    """The trace message's KEYS: every record's message id and keys (TraceTransferBean.transKey)."""
    keys: dict[str, None] = {}
    for r in records:
        keys[r.msg_id] = None
        for key in (r.keys or "").split(" "):
            if key and key != "null":
                keys[key] = None
    return list(keys)


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _opt(text: str) -> str | None:
    return None if text in ("", "null") else text


def decode(data: str) -> list[TraceRecord]:
    """Every record a trace message's body holds; records of unknown types or too few fields are skipped,
    as the Java decoder skips unknown types (and fails on short ones, which a tool must not)."""
    out = []
    for raw in data.split(FIELD_SPLITOR):
        f = raw.split(CONTENT_SPLITOR)
        while f and f[-1] == "":  # Java's split drops trailing empty strings
            f.pop()
        if not f:
            continue
        kind = f[0]
        if kind == "Pub" and len(f) >= 13:
            offset_msg_id = f[12] if len(f) >= 14 else None
            success = f[13] if len(f) >= 14 else f[12]
            out.append(TraceRecord(TraceType.Pub, f[5], _int(f[1]), f[2], f[3], f[4], _opt(f[6]), _opt(f[7]),
                                   _opt(f[8]), _int(f[9]), _int(f[10]), _int(f[11]), _opt(offset_msg_id or ""),
                                   success == "true", _opt(f[14]) if len(f) >= 15 else None))
        elif kind == "SubBefore" and len(f) >= 8:
            out.append(TraceRecord(TraceType.SubBefore, f[5], _int(f[1]), f[2], f[3], request_id=f[4],
                                   retry_times=_int(f[6]), keys=_opt(f[7])))
        elif kind == "SubAfter" and len(f) >= 6:
            out.append(TraceRecord(TraceType.SubAfter, f[2], _int(f[7]) if len(f) >= 9 else None,
                                   group=f[8] if len(f) >= 9 else None, keys=_opt(f[5]), cost_ms=_int(f[3]),
                                   success=f[4] == "true", request_id=f[1],
                                   context_code=_int(f[6]) if len(f) >= 7 else None))
        elif kind == "EndTransaction" and len(f) >= 13:
            out.append(TraceRecord(TraceType.EndTransaction, f[5], _int(f[1]), f[2], f[3], f[4], _opt(f[6]),
                                   _opt(f[7]), _opt(f[8]), msg_type=_int(f[9]), transaction_id=_opt(f[10]),
                                   transaction_state=f[11], from_transaction_check=f[12] == "true"))
    return out
