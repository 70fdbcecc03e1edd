"""Open transactions: half messages no END_TRANSACTION has settled yet, per broker, read as the broker's
check service reads them.

A broker keeps half messages in RMQ_SYS_TRANS_HALF_TOPIC queue 0 and settles them with op messages in
RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0 (body: the half queue offset); its check service's progress is
group CID_RMQ_SYS_TRANS's offset in both. A half message past that progress whose offset no op names,
and whose transaction (client msgId) no op settled through another copy, is open. Works on any broker
that keeps this layout: mq's, and Apache's 4.x and 5.x.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import suppress

from mqtools.client.admin.base import NO_MASTER, AdminService, broker_sets
from mqtools.client.admin.models.transactions import BrokerTransactions, OpenTransaction
from mqtools.client.client_api import queue_offset
from mqtools.client.errors import MQClientError
from mqtools.client.types import PullStatus, message_id
from mqtools.common import properties as P
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.message import MessageExt
from mqtools.common.topics import CID_RMQ_SYS_TRANS, RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import OffsetResponseHeader, QueryConsumerOffsetRequestHeader
from mqtools.remoting.transaction import op_half_offsets, transaction_origin

#: The most half (and op) messages read per broker; past it the answer says it was cut.
MAX_SCAN = 10_000


class TransactionAdmin(AdminService):
    async def open_transactions(self) -> list[BrokerTransactions]:
        """Each master's open transactions, oldest first; [] when no broker ever stored a half message. A set
        without a master is listed with its first slave's address and the error that says so: the check
        service that settles its transactions is the master's, and nothing of it was read."""
        try:
            sets = broker_sets(await self.admin._route(RMQ_SYS_TRANS_HALF_TOPIC))
        except MQClientError:
            return []
        with suppress(MQClientError):
            await self.admin.instance.route(RMQ_SYS_TRANS_OP_HALF_TOPIC, refresh=True)
        masters = {name: addrs[MASTER_ID] for name, addrs in sets.items() if MASTER_ID in addrs}
        read = dict(zip(sorted(masters), await asyncio.gather(*(self._broker(n, masters[n]) for n in sorted(masters))),
                        strict=True))
        for name, addrs in sets.items():
            if name not in read and addrs:
                read[name] = BrokerTransactions(name, addrs[min(addrs)], [], 0, False, error=NO_MASTER)
        return [read[n] for n in sorted(read)]

    async def _broker(self, name: str, addr: str) -> BrokerTransactions:
        try:
            return await self._read_broker(name, addr)
        except MQClientError as exc:  # one broker (an ACL broker, a dead one) must not hide the others
            return BrokerTransactions(name, addr, [], 0, False, error=str(exc))

    async def _read_broker(self, name: str, addr: str) -> BrokerTransactions:
        half_mq, op_mq = MessageQueue(RMQ_SYS_TRANS_HALF_TOPIC, name, 0), MessageQueue(RMQ_SYS_TRANS_OP_HALF_TOPIC, name, 0)
        half_from = await self._progress(addr, half_mq)
        try:
            ops, _ = await self._read(op_mq, await self._progress(addr, op_mq))
        except MQClientError:  # no op topic yet: nothing has ended
            ops = []
        ended_offsets = {offset for op in ops for offset in op_half_offsets(op.body)}
        halves, cut = await self._read(half_mq, half_from)
        # a transaction is its original half message (every copy names it); an op of mq's names it first in KEYS
        ended = {transaction_origin(h) for h in halves if h.queue_offset in ended_offsets}
        ended.update(int(op.keys[0]) for op in ops if op.keys and op.keys[0].isdigit())
        newest: dict[int, MessageExt] = {}
        for half in halves:
            if half.queue_offset not in ended_offsets:
                newest[transaction_origin(half)] = half
        now = int(time.time() * 1000)
        open_ = [OpenTransaction(
            broker_name=name, producer_group=h.properties.get(P.PGROUP), topic=h.properties.get(P.REAL_TOPIC),
            msg_id=message_id(h), born_timestamp=h.born_timestamp, age_ms=max(0, now - h.born_timestamp),
            checks=int(h.properties[P.TRANSACTION_CHECK_TIMES]) if h.properties.get(
                P.TRANSACTION_CHECK_TIMES, "").isdigit() else 0)
            for key, h in newest.items() if key not in ended]
        open_.sort(key=lambda t: t.born_timestamp)
        return BrokerTransactions(name, addr, open_, scanned=len(halves), cut=cut)

    async def _progress(self, addr: str, mq: MessageQueue) -> int:
        """The check service's offset in the queue; the queue's first offset when it has none yet."""
        ext = QueryConsumerOffsetRequestHeader(CID_RMQ_SYS_TRANS, mq.topic, mq.queue_id, set_zero_if_not_found=False).to_ext()
        resp = await self.admin.call(addr, RequestCode.QUERY_CONSUMER_OFFSET, ext,
                                     ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND))
        offset = OffsetResponseHeader.from_ext(resp.ext_fields).offset if resp.code == ResponseCode.SUCCESS else -1
        if offset >= 0:
            return offset
        return await queue_offset(self.admin.instance, mq, RequestCode.GET_MIN_OFFSET)

    async def _read(self, mq: MessageQueue, begin: int) -> tuple[list[MessageExt], bool]:
        """The queue's messages from `begin` (at most MAX_SCAN) and whether more were left unread."""
        end = await queue_offset(self.admin.instance, mq, RequestCode.GET_MAX_OFFSET)
        found: list[MessageExt] = []
        async for result in self.admin.messages.read_span(mq, begin, min(end, begin + MAX_SCAN)):
            if result.status is PullStatus.FOUND:
                found += result.messages
        return found, end > begin + MAX_SCAN
