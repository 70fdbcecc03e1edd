"""END_TRANSACTION (RocketMQ's EndTransactionProcessor): a producer commits or rolls back a half message.

The half message is found by its commitlog offset and must match what the producer says of it: its
producer group, its half queue offset and its commitlog offset (Apache's checks and remarks). A commit
puts the message on its real topic and queue with the commit type in its sys flag; both ends write an
op message, so the check service never asks about it again. A pending answer (neither commit nor
rollback) gets no response, as Apache gives none.

The committed message is timed (TIMER_* properties) or delayed (a delay level) from the commit, as Apache's
put hook times it (schedule_hook.py).

Where mq goes further than Apache: a transaction that has already ended (through this copy or another
the check service made, before a restart too) is refused with a remark instead of being committed a
second time, and every refusal is one rate-limited log line. The end is decided in the step that reads
the request: the check, the commit's append and the op (which marks it ended) happen before any await,
so of two ENDs read together (the producer's own and its answer to a check) the second is refused; only
the commit's wait for the flush or a slave is awaited, after. The half message must be one the half
queue holds at that commitlog offset (a look-alike inside a message body is not), and a commit must go
to one of its real topic's queues. Producers send END_TRANSACTION oneway, so a refusal is seen in the
broker's log, or by a tool that sends the request two-way.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from mqtools.common import properties as P
from mqtools.common.log_limiter import LimitedLog
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.transaction import COMMIT, ROLLBACK, EndTransactionRequestHeader
from mqtools.server.broker.context import BrokerContext
from mqtools.server.broker.schedule_hook import handle_schedule
from mqtools.server.broker.transaction.bridge import TransactionalMessageBridge, origin, transaction_id
from mqtools.server.store.results import STORED, PutMessageResult

if TYPE_CHECKING:
    from mqtools.common.message import MessageExt
    from mqtools.remoting.server import RemotingServer
    from mqtools.remoting.transport import RemotingConnection

log = logging.getLogger(__name__)

class EndTransactionProcessor:
    def __init__(self, broker: BrokerContext, bridge: TransactionalMessageBridge) -> None:
        self.b = broker
        self.bridge = bridge
        self.refusals = LimitedLog(log, broker.clock)

    def end_transaction(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand | Awaitable | None:
        if self.b.config.is_slave:
            return self._refuse(conn, req, ResponseCode.SLAVE_NOT_AVAILABLE,
                                "the broker is a slave: end transaction is forbidden")
        h = EndTransactionRequestHeader.from_ext(req.ext_fields)
        if h.commit_or_rollback not in (COMMIT, ROLLBACK):
            return None  # the producer does not know yet; the check service will ask
        half = self.bridge.half_message(h.commit_log_offset)
        problem = self._mismatch(half, h)
        if problem is not None or half is None:
            return self._refuse(conn, req, ResponseCode.SYSTEM_ERROR, problem or "")
        ended = self.bridge.ended_at(half)
        if ended is not None:
            return self._refuse(conn, req, ResponseCode.SYSTEM_ERROR,
                                f"the transaction {transaction_id(half)} (half message at queue offset "
                                f"{origin(half)}) has already ended (through queue offset {ended})")
        if h.commit_or_rollback == ROLLBACK:
            return self._after_op(req, self.bridge.put_op(half))
        return self._commit(conn, req, half)

    def _mismatch(self, half: MessageExt | None, h: EndTransactionRequestHeader) -> str | None:
        """Apache's checkPrepareMessage: its remark for a request that does not match the half message."""
        if half is None:
            return "Find prepared transaction message failed"
        if half.properties.get(P.PGROUP) != h.producer_group:
            return "The producer group wrong"
        if half.queue_offset != h.tran_state_table_offset:
            return "The transaction state table offset wrong"
        if P.REAL_TOPIC not in half.properties or not half.properties.get(P.REAL_QID, "").isdigit():
            return "The half message has no real topic and queue"
        return None

    def _refuse(self, conn: RemotingConnection, req: RemotingCommand, code: int, remark: str) -> RemotingCommand:
        self.refusals.warning("end-transaction", "END_TRANSACTION from %s refused: %s (%s)", conn.peer, remark,
                              {k: req.ext_fields.get(k) for k in ("producerGroup", "commitLogOffset",
                                                                  "tranStateTableOffset", "msgId")})
        return req.response(code, remark)

    def _commit(self, conn: RemotingConnection, req: RemotingCommand, half: MessageExt
                ) -> RemotingCommand | Awaitable[RemotingCommand]:
        """The committed message appended and the op written now; only their waits are left to await."""
        topic, queue_id = half.properties[P.REAL_TOPIC], int(half.properties[P.REAL_QID])
        tc = self.b.topics.select(topic)
        if tc is None:
            return self._refuse(conn, req, ResponseCode.SYSTEM_ERROR, f"topic[{topic}] not exist")
        if queue_id >= max(tc.read_queue_nums, tc.write_queue_nums):  # never a queue the topic does not have
            return self._refuse(conn, req, ResponseCode.SYSTEM_ERROR, f"request queueId[{queue_id}] is illegal, {tc}")
        committed = self.bridge.committed(half)
        refused = handle_schedule(self.b, committed)  # timer or delay level: from the commit, as Apache
        if refused is not None:
            return self._refuse_commit(req, *refused)
        put = self.b.store.put_message_inline(committed)
        if isinstance(put, PutMessageResult) and put.status.name not in STORED:
            return req.response(ResponseCode.SYSTEM_ERROR, f"putting the committed message failed: {put.status.name}")
        op = self.bridge.put_op(half)  # appended: a wait still to come ends in a stored status
        if isinstance(put, PutMessageResult):
            return self._after_op(req, op)
        return self._committed(req, put, op)

    async def _committed(self, req: RemotingCommand, put: Awaitable[PutMessageResult],
                         op: PutMessageResult | Awaitable[PutMessageResult]) -> RemotingCommand:
        result = await put
        if result.status.name not in STORED:
            return req.response(ResponseCode.SYSTEM_ERROR, f"putting the committed message failed: {result.status.name}")
        return await self._op_written(req, op)

    def _refuse_commit(self, req: RemotingCommand, code: int, remark: str) -> RemotingCommand:
        """The committed message cannot be put (a timer value not legal now): no op message, so the half
        message stays and the check service asks again, as Apache leaves it."""
        self.refusals.warning("end-transaction", "commit of %s refused: %s", req.ext_fields.get("msgId"), remark)
        return req.response(code, remark)

    def _after_op(self, req: RemotingCommand, put: PutMessageResult | Awaitable[PutMessageResult]
                  ) -> RemotingCommand | Awaitable[RemotingCommand]:
        if isinstance(put, PutMessageResult):
            return self._op_answer(req, put)
        return self._op_written(req, put)

    async def _op_written(self, req: RemotingCommand, put: PutMessageResult | Awaitable[PutMessageResult]
                          ) -> RemotingCommand:
        return self._op_answer(req, put if isinstance(put, PutMessageResult) else await put)

    @staticmethod
    def _op_answer(req: RemotingCommand, put: PutMessageResult) -> RemotingCommand:
        if put.status.name not in STORED:
            log.warning("writing the op message of an ended transaction failed: %s", put.status.name)
        return req.response()


def register(server: RemotingServer, broker: BrokerContext, bridge: TransactionalMessageBridge
             ) -> EndTransactionProcessor:
    proc = EndTransactionProcessor(broker, bridge)
    server.register(RequestCode.END_TRANSACTION, proc.end_transaction)
    return proc
