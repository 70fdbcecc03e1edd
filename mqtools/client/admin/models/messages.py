"""Typed results about messages: where a message was consumed, a queue span to read, a DLQ resend, its trace;
the documents of messages, their traces and a send."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.presentation import Column, Unreachable, View, renders, when
from mqtools.common.trace_data import TraceRecord
from mqtools.remoting.bodies import MessageQueue

if TYPE_CHECKING:
    from mqtools.client.types import SendResult
    from mqtools.common.message import MessageExt


@dataclass(frozen=True, slots=True)
class MessageTrack:
    """Whether one consumer group has consumed a message (RocketMQ's MessageTrack)."""

    group: str
    track_type: str
    """CONSUMED, CONSUMED_BUT_FILTERED, NOT_CONSUME_YET, NOT_ONLINE, PULL or UNKNOWN."""
    exception_desc: str | None = None


@dataclass(frozen=True, slots=True)
class MessageTracks:
    """For each group consuming a message's topic, whether it has consumed the message (a group that could
    not be asked has an UNKNOWN or NOT_ONLINE track saying why), and what could not be read: the sets of the
    topic's route no replica answered for (a group consuming only there has no track), the set that stored the
    message where a track needed its offsets, or the store host when its set could not be told (those tracks
    UNKNOWN)."""

    tracks: list[MessageTrack]
    unreachable: list[Unreachable] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class MessageDetail:
    """One message and its tracks: partial when the groups of some set could not be read."""

    message: MessageExt
    tracks: MessageTracks


@dataclass(frozen=True, slots=True)
class MessageHits:
    """What an index query found, oldest first, and the broker sets no replica answered for (their
    messages, if any, are not in the list)."""

    messages: list[MessageExt]
    unreachable: list[Unreachable] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class QueueSpan:
    """The offsets of a queue to read: [begin, end)."""

    queue: MessageQueue
    begin: int
    end: int
    broker_id: int = MASTER_ID
    """The node of the queue's set the offsets came from, and the pulls go to (a slave while the master cannot)."""


@dataclass(frozen=True, slots=True)
class TopicSpans:
    """What reading a whole topic reads: each queue's span, and the broker sets no replica answered for."""

    spans: list[QueueSpan]
    unreachable: list[Unreachable] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Resend:
    """The outcome of putting one dead message back for its group."""

    msg_id: str
    topic: str | None
    """The topic the message was first sent to; None when the id was not found in the DLQ."""
    queue: MessageQueue | None
    """Where the resent copy was stored; None when it was not resent."""
    offset_msg_id: str | None
    error: str | None
    """Why it was not resent; None when it was."""


@dataclass(frozen=True, slots=True)
class TraceEntry:
    """One trace record of a message, with the host that wrote it (the trace message's born host)."""

    record: TraceRecord
    client_host: str | None


@dataclass(frozen=True, slots=True)
class MessageTrace:
    """What the trace topic holds about one message: its send, each consumer's deliveries, its
    transaction's end; in time order (records without a time last)."""

    msg_id: str
    trace_topic: str
    entries: list[TraceEntry]
    unreachable: list[Unreachable] = field(default_factory=list)
    """Sets of the trace topic no replica answered for: records there are missing."""


@renders("DlqResend")
def dlq_resend_view(group: str, results: list[Resend]) -> View:
    """Each dead message put back (or not) on the group's retry topic."""
    rows = [[r.msg_id, r.topic, "resent" if r.error is None else "failed",
             r.queue.broker_name if r.queue else None, r.queue.queue_id if r.queue else None,
             r.offset_msg_id, r.error] for r in results]
    data = {"group": group, "results": [
        {"msgId": r.msg_id, "topic": r.topic, "resent": r.error is None,
         "brokerName": r.queue.broker_name if r.queue else None, "queueId": r.queue.queue_id if r.queue else None,
         "offsetMsgId": r.offset_msg_id, "error": r.error} for r in results]}
    done = sum(1 for r in results if r.error is None)
    return View("DlqResend", [Column("MSG ID"), Column("TOPIC"), Column("RESULT"), Column("BROKER"),
                              Column("QID", True), Column("NEW OFFSET MSG ID"), Column("ERROR")], rows, data,
                footer=[f"{done} of {len(results)} resent to %RETRY%{group}"])


BODY_PREVIEW = 48
"""Characters of a body a message list shows."""
LIST_COLUMNS = [Column("MSG ID"), Column("TOPIC"), Column("STORE HOST"), Column("QID", True), Column("OFFSET", True),
                Column("TAGS"), Column("KEYS"), Column("STORED"), Column("RECONSUME", True), Column("BODY")]


def _host(h: tuple[str, int]) -> str:
    return f"{h[0]}:{h[1]}"


def _msg_id(m: MessageExt) -> str:
    """The id users see: the client unique key when the producer set one, else the offset id."""
    return m.unique_key or m.msg_id


def message_json(m: MessageExt) -> dict[str, Any]:
    return {
        "msgId": _msg_id(m), "offsetMsgId": m.msg_id, "topic": m.topic, "tags": m.tags, "keys": m.keys,
        "queueId": m.queue_id, "queueOffset": m.queue_offset, "commitLogOffset": m.commit_log_offset,
        "reconsumeTimes": m.reconsume_times, "bornTimestamp": m.born_timestamp or None,
        "storeTimestamp": m.store_timestamp or None, "bornHost": _host(m.born_host), "storeHost": _host(m.store_host),
        "sysFlag": m.sys_flag, "properties": dict(m.properties), "bodySize": len(m.body),
        "body": m.body.decode("utf-8", errors="replace"),
    }


def _message_row(m: MessageExt) -> list[Any]:
    body = m.body.decode("utf-8", errors="replace").replace("\n", " ")
    return [_msg_id(m), m.topic, _host(m.store_host), m.queue_id, m.queue_offset, m.tags,
            " ".join(m.keys) or None, when(m.store_timestamp), m.reconsume_times,
            body if len(body) <= BODY_PREVIEW else body[:BODY_PREVIEW - 3] + "..."]


@renders("MessageList")
def message_list_view(topic: str, messages: list[MessageExt] | MessageHits, footer: list[str] | None = None) -> View:
    """One row per message, its body cut to a preview; the document has every field. Hits of an index query
    carry the sets that could not be asked: the list is then partial."""
    unreachable = messages.unreachable if isinstance(messages, MessageHits) else []
    found = messages.messages if isinstance(messages, MessageHits) else messages
    return View("MessageList", LIST_COLUMNS, [_message_row(m) for m in found],
                {"topic": topic, "count": len(found), "messages": [message_json(m) for m in found]},
                footer=footer or [], unreachable=unreachable)


@renders("Message")
def message_view(detail: MessageDetail) -> View:
    """Every field of one message, a row each, and whether each consuming group has consumed it."""
    m, tracks = detail.message, detail.tracks.tracks
    doc = message_json(m)
    shown = {**doc, "keys": " ".join(m.keys) or None, "bornTimestamp": when(m.born_timestamp),
             "storeTimestamp": when(m.store_timestamp)}
    rows = [[k, v] for k, v in shown.items() if k != "properties"]
    rows += [[f"property {k}", v] for k, v in sorted(m.properties.items())]
    footer = [f"group {t.group}: {t.track_type}" + (f" ({t.exception_desc})" if t.exception_desc else "")
              for t in tracks] or ["no consumer group consumes this topic"]
    tracks_json = [{"group": t.group, "trackType": t.track_type, "exceptionDesc": t.exception_desc} for t in tracks]
    return View("Message", [Column("FIELD"), Column("VALUE")], rows, {"message": doc, "tracks": tracks_json},
                footer=footer, unreachable=detail.tracks.unreachable)


@renders("MessageTrace")
def message_trace_view(trace: MessageTrace) -> View:
    """A message's trace as a timeline: its send, each delivery (before and after the listener), its
    transaction's end."""
    rows, records = [], []
    for entry in trace.entries:
        r = entry.record
        if r.type.value in ("Pub", "SubAfter"):
            status = None if r.success is None else "success" if r.success else "failed"
        elif r.type.value == "SubBefore":
            status = "delivered"
        else:
            status = r.transaction_state
        detail = {
            "Pub": f"topic {r.topic}, stored on {r.store_host}, {r.body_length} bytes",
            "SubBefore": f"reconsume {r.retry_times}, request {r.request_id}",
            "SubAfter": f"request {r.request_id}, return code {r.context_code}",
            "EndTransaction": f"transaction {r.transaction_id}" + (" (answering a check)" if r.from_transaction_check
                                                                   else ""),
        }[r.type.value]
        rows.append([r.type.value, r.group, entry.client_host, when(r.timestamp), r.cost_ms, status, detail])
        records.append({
            "type": r.type.value, "group": r.group, "clientHost": entry.client_host, "timestamp": r.timestamp,
            "costMs": r.cost_ms, "success": r.success, "region": r.region, "topic": r.topic, "tags": r.tags,
            "keys": r.keys, "storeHost": r.store_host, "bodyLength": r.body_length, "msgType": r.msg_type,
            "offsetMsgId": r.offset_msg_id, "requestId": r.request_id, "retryTimes": r.retry_times,
            "contextCode": r.context_code, "transactionId": r.transaction_id,
            "transactionState": r.transaction_state, "fromTransactionCheck": r.from_transaction_check,
        })
    return View("MessageTrace", [Column("TYPE"), Column("GROUP"), Column("CLIENT HOST"), Column("TIME"),
                                 Column("COST MS", True), Column("STATUS"), Column("DETAIL")], rows,
                {"msgId": trace.msg_id, "traceTopic": trace.trace_topic, "records": records},
                footer=[f"{len(rows)} trace records in {trace.trace_topic}"], unreachable=trace.unreachable)


@renders("SendResult")
def send_result_view(topic: str, r: SendResult) -> View:
    """Where one sent message was stored."""
    row = [r.queue.broker_name, r.queue.queue_id, r.queue_offset, r.status.value, r.msg_id, r.offset_msg_id]
    return View("SendResult", [Column("BROKER"), Column("QID", True), Column("OFFSET", True), Column("STATUS"),
                               Column("MSG ID"), Column("OFFSET MSG ID")], [row],
                {"topic": topic, "brokerName": r.queue.broker_name, "queueId": r.queue.queue_id,
                 "queueOffset": r.queue_offset, "status": r.status.value, "msgId": r.msg_id,
                 "offsetMsgId": r.offset_msg_id})
