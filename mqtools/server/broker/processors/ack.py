"""ACK_MESSAGE and BATCH_ACK_MESSAGE with Apache 5.5's semantics (AckMessageProcessor).

An ack of a normal POP writes an ``ack`` record (a batch ack one ``bAck`` record per checkpoint) to the
revive queue named in the message's extra info; the revive service matches it to the checkpoint, and a
fully acknowledged checkpoint is never revived. The answer goes out once the record is in the store
(after its flush under SYNC_FLUSH), so an acknowledged message does not come back after a broker crash.
An ack of an orderly POP (revive queue 999) moves the group's offset past the acknowledged prefix of the
batch and releases the queue once the whole batch is acknowledged.

Refusals as Apache's: TOPIC_NOT_EXIST, MESSAGE_ILLEGAL for a bad queue id, NO_MESSAGE for an offset outside
the queue (and for a batch ack without acks); an extra info that does not parse is SYSTEM_ERROR.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.pop import (
    POP_ORDER_REVIVE_QUEUE,
    AckMessageRequestHeader,
    BatchAckMessageRequestBody,
    ExtraInfo,
    real_topic,
)
from mqtools.server.broker.pop.order import NOT_IN_BATCH
from mqtools.server.broker.pop.records import AckMsg, BatchAckMsg, ack_message
from mqtools.server.broker.processors.pop import PopProcessor, register_both
from mqtools.server.store.results import STORED, PutMessageResult

if TYPE_CHECKING:
    from mqtools.remoting.server import RemotingServer
    from mqtools.remoting.transport import RemotingConnection


class AckProcessor:
    def __init__(self, pop: PopProcessor) -> None:
        self.pop = pop
        self.c = pop.c
        self.s = pop.s

    def ack(
        self, conn: RemotingConnection, req: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        h = AckMessageRequestHeader.from_ext(req.ext_fields)
        refusal = self.pop.receipt_refusal(req, h.topic, h.queue_id, h.offset, max_included=True)
        if refusal is not None:
            return refusal
        try:
            extra = ExtraInfo.parse(h.extra_info)
        except ValueError as exc:
            return req.response(ResponseCode.SYSTEM_ERROR, f"bad extraInfo: {exc}")
        if extra.is_order:
            return self.ack_orderly(
                conn, req, h.consumer_group, h.topic, h.queue_id, h.offset, extra.pop_time
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
        return self._write(req, extra.revive_qid, ack)

    def batch_ack(
        self, conn: RemotingConnection, req: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        body = BatchAckMessageRequestBody.from_json(req.body)
        if not body.acks:
            return req.response(ResponseCode.NO_MESSAGE, "no ack in the batch")
        store = self.c.store
        writes: list[tuple[int, AckMsg]] = []
        for b in body.acks:
            try:
                topic = real_topic(b.topic, b.consumer_group, b.retry)
            except ValueError as exc:
                return req.response(ResponseCode.SYSTEM_ERROR, str(exc))
            lo, hi = (
                store.get_min_offset_in_queue(topic, b.queue_id),
                store.get_max_offset_in_queue(topic, b.queue_id),
            )
            offsets = [b.start_offset + i for i in b.indexes if lo <= b.start_offset + i <= hi]
            if b.revive_queue_id == POP_ORDER_REVIVE_QUEUE:
                for offset in offsets:
                    resp = self.ack_orderly(
                        conn, req, b.consumer_group, topic, b.queue_id, offset, b.pop_time
                    )
                    if resp.code != ResponseCode.SUCCESS:
                        return resp
                continue
            if offsets:
                writes.append(
                    (
                        b.revive_queue_id,
                        BatchAckMsg(
                            -1,
                            b.start_offset,
                            b.consumer_group,
                            topic,
                            b.queue_id,
                            b.pop_time,
                            body.broker_name or None,
                            ack_offset_list=offsets,
                        ),
                    )
                )
        pending = []
        for rqid, ack in writes:
            put = self._put(req, rqid, ack)
            if isinstance(put, RemotingCommand):
                return put
            if put is not None:
                pending.append(put)
        resp = req.response(ResponseCode.SUCCESS)
        return self._after(req, pending, resp) if pending else resp

    def _put(
        self, req: RemotingCommand, revive_qid: int, ack: AckMsg
    ) -> RemotingCommand | Awaitable[PutMessageResult] | None:
        """Append the record: a refusal, what is left to wait for, or None when it is stored."""
        s = self.s
        if not 0 <= revive_qid < s.revive_queue_num:
            return req.response(
                ResponseCode.MESSAGE_ILLEGAL,
                f"revive queue {revive_qid} is illegal (reviveQueueNum {s.revive_queue_num})",
            )
        put = s.put_record(ack_message(s.revive_topic, revive_qid, ack, s.now_ms(), s.host))
        if isinstance(put, PutMessageResult):
            if put.status.name not in STORED:
                return req.response(
                    ResponseCode.SYSTEM_ERROR, f"put ack msg error: {put.status.name} {put.remark}"
                )
            return None
        return put

    def _write(
        self, req: RemotingCommand, revive_qid: int, ack: AckMsg
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        put = self._put(req, revive_qid, ack)
        if isinstance(put, RemotingCommand):
            return put
        resp = req.response(ResponseCode.SUCCESS)
        return resp if put is None else self._after(req, [put], resp)

    @staticmethod
    async def _after(
        req: RemotingCommand, pending: list[Awaitable[PutMessageResult]], resp: RemotingCommand
    ) -> RemotingCommand:
        for put in pending:
            result = await put
            if result.status.name not in STORED:
                return req.response(ResponseCode.SYSTEM_ERROR, f"put ack msg error: {result.status.name}")
        return resp

    def ack_orderly(
        self,
        conn: RemotingConnection,
        req: RemotingCommand,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        pop_time: int,
    ) -> RemotingCommand:
        """AckMessageProcessor.ackOrderly: commit the acknowledged prefix, release the queue when done."""
        c = self.c
        if offset < c.offsets.query_offset(group, topic, queue_id):
            return req.response(ResponseCode.SUCCESS)  # already past it
        next_offset = self.s.order.ack((topic, group, queue_id), offset, pop_time)
        if next_offset >= 0:
            c.offsets.commit_offset(conn.peer, group, topic, queue_id, next_offset)
            if not self.s.order.blocked((topic, group, queue_id), self.s.now_ms()):
                self.s.polling.notify(topic, queue_id)
        elif next_offset == NOT_IN_BATCH:
            return req.response(
                ResponseCode.MESSAGE_ILLEGAL,
                f"offset is illegal, key:{topic}@{group}@{queue_id}, "
                f"commit:{offset}, not in the batch in flight",
            )
        return req.response(ResponseCode.SUCCESS)


def register(server: RemotingServer, pop: PopProcessor) -> AckProcessor:
    proc = AckProcessor(pop)
    register_both(server, RequestCode.ACK_MESSAGE, proc.ack)
    register_both(server, RequestCode.BATCH_ACK_MESSAGE, proc.batch_ack)
    return proc
