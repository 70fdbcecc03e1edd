"""CHANGE_MESSAGE_INVISIBLETIME with Apache 5.5's semantics (ChangeInvisibleTimeProcessor).

For a normal POP: a new one-message checkpoint (popTime = now, the new invisible time) goes to the same
revive queue first, then an ack of the message under its old checkpoint; the answer gives the new pop
time, so the client's new receipt (extra info) names the new checkpoint. A crash between the two writes
leaves both checkpoints: the message may come back twice, never not at all. For an orderly POP the held
batch's invisible end moves instead.

The new checkpoint's pop time is never the old one's: a change in the millisecond of its POP (a proxy making
a message its client left visible again at once does that) would give the new checkpoint the old one's merge
key (topic, group, queue, start offset, pop time), so the revive would take it for the old one and the ack that
follows for an ack of both: the message, and the rest of its batch, would never come back. Apache's broker has
the same key and is not guarded; its slower proxy seldom meets it, mq's in 2 of 27 such receives.

Refusals as Apache's: TOPIC_NOT_EXIST, MESSAGE_ILLEGAL (queue id), NO_MESSAGE (offset outside the queue);
an extra info that does not parse is SYSTEM_ERROR. mq also answers NO_MESSAGE for an offset the group has not
popped (at or past its offset): mq restores POP offsets from the checkpoints at start (revive.py), so a
checkpoint for such an offset would skip the group's messages before it; Apache's revive moves no group offset.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.pop import (
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    ExtraInfo,
)
from mqtools.server.broker.pop.records import AckMsg, PopCheckPoint, ack_message, ck_message
from mqtools.server.broker.processors.pop import MAX_INVISIBLE_MS, PopProcessor, register_both
from mqtools.server.store.results import STORED, PutMessageResult

if TYPE_CHECKING:
    from mqtools.remoting.server import RemotingServer
    from mqtools.remoting.transport import RemotingConnection


class ChangeInvisibleTimeProcessor:
    def __init__(self, pop: PopProcessor) -> None:
        self.pop = pop
        self.c = pop.c
        self.s = pop.s

    def change(
        self, conn: RemotingConnection, req: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        h = ChangeInvisibleTimeRequestHeader.from_ext(req.ext_fields)
        s = self.s
        refusal = self.pop.receipt_refusal(req, h.topic, h.queue_id, h.offset, max_included=False)
        if refusal is not None:
            return refusal
        if not 0 <= h.invisible_time <= MAX_INVISIBLE_MS:
            return req.response(
                ResponseCode.INVALID_PARAMETER,
                f"invisibleTime {h.invisible_time} is outside [0, {MAX_INVISIBLE_MS}]",
            )
        try:
            extra = ExtraInfo.parse(h.extra_info)
        except ValueError as exc:
            return req.response(ResponseCode.SYSTEM_ERROR, f"bad extraInfo: {exc}")
        now = s.now_ms()
        if extra.is_order:
            return self._orderly(req, h, extra, now)
        if not 0 <= extra.revive_qid < s.revive_queue_num:
            return req.response(ResponseCode.MESSAGE_ILLEGAL, f"revive queue {extra.revive_qid} is illegal")
        if h.offset >= self.c.offsets.query_offset(h.consumer_group, h.topic, h.queue_id):
            # not popped by the group (a POP moves its offset past what it gives): a checkpoint for it would move
            # the group's offset past the messages before it when a restart restores offsets from checkpoints
            return req.response(ResponseCode.NO_MESSAGE, f"offset {h.offset} of {h.topic}:{h.queue_id} was not "
                                                         f"popped by {h.consumer_group}")
        # never the old checkpoint's key (above), and never a time taken from the receipt, which a client can set
        pop_time = now + 1 if extra.pop_time == now else now
        ck = PopCheckPoint(
            topic=h.topic,
            cid=h.consumer_group,
            queue_id=h.queue_id,
            start_offset=h.offset,
            pop_time=pop_time,
            invisible_time=h.invisible_time,
            num=1,
            broker_name=extra.broker_name,
            queue_offset_diff=[0],
        )
        ack = AckMsg(
            h.offset,
            extra.ck_queue_offset,
            h.consumer_group,
            h.topic,
            h.queue_id,
            extra.pop_time,
            extra.broker_name,
        )
        pending = []
        for record in (
            ck_message(s.revive_topic, extra.revive_qid, ck, now, s.host),
            ack_message(s.revive_topic, extra.revive_qid, ack, now, s.host),
        ):
            put = s.put_record(record)
            if isinstance(put, PutMessageResult):
                if put.status.name not in STORED:
                    return req.response(ResponseCode.SYSTEM_ERROR, f"change invisible: {put.status.name}")
            else:
                pending.append(put)
        header = ChangeInvisibleTimeResponseHeader(pop_time, h.invisible_time, extra.revive_qid)
        resp = req.response(ResponseCode.SUCCESS, None, header.to_ext())
        return self._after(req, pending, resp) if pending else resp

    def _orderly(
        self, req: RemotingCommand, h: ChangeInvisibleTimeRequestHeader, extra: ExtraInfo, now: int
    ) -> RemotingCommand:
        if h.offset < self.c.offsets.query_offset(h.consumer_group, h.topic, h.queue_id):
            return req.response(ResponseCode.SUCCESS)
        key = (h.topic, h.consumer_group, h.queue_id)
        until = self.s.order.change_invisible(key, h.offset, extra.pop_time, now + h.invisible_time)
        header = ChangeInvisibleTimeResponseHeader(
            extra.pop_time, (until or now + h.invisible_time) - extra.pop_time, extra.revive_qid
        )
        return req.response(ResponseCode.SUCCESS, None, header.to_ext())

    @staticmethod
    async def _after(
        req: RemotingCommand, pending: list[Awaitable[PutMessageResult]], resp: RemotingCommand
    ) -> RemotingCommand:
        for put in pending:
            result = await put
            if result.status.name not in STORED:
                return req.response(ResponseCode.SYSTEM_ERROR, f"change invisible: {result.status.name}")
        return resp


def register(server: RemotingServer, pop: PopProcessor) -> ChangeInvisibleTimeProcessor:
    proc = ChangeInvisibleTimeProcessor(pop)
    register_both(server, RequestCode.CHANGE_MESSAGE_INVISIBLETIME, proc.change)
    return proc
