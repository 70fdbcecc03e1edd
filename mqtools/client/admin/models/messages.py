"""Typed results about messages: where a message was consumed, a queue span to read, a DLQ resend, its trace."""

from __future__ import annotations

from dataclasses import dataclass

from mqtools.common.presentation import Column, View, renders
from mqtools.common.trace_data import TraceRecord
from mqtools.remoting.bodies import MessageQueue


@dataclass(frozen=True, slots=True)
class MessageTrack:
    """Whether one consumer group has consumed a message (RocketMQ's MessageTrack)."""

    group: str
    track_type: str
    """CONSUMED, CONSUMED_BUT_FILTERED, NOT_CONSUME_YET, NOT_ONLINE, PULL or UNKNOWN."""
    exception_desc: str | None = None


@dataclass(frozen=True, slots=True)
class QueueSpan:
    """The offsets of a queue to read: [begin, end)."""

    queue: MessageQueue
    begin: int
    end: int


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
