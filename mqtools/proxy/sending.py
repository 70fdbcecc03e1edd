"""SendMessage and EndTransaction on the remoting side (ProducerProcessor, TransactionProcessor).

A request's messages go to one queue: the queue of their message group (Guava's consistentHash of the group's
Java hash, over the topic's writable queues, as Apache's SendMessageQueueSelector), or the next in round
robin. One attempt: the 5.x client retries with the backoff the settings answer gave it. A broker that cannot be
reached has the topic's route read again at the next half-second tick, so the sends after it skip a dead master
(the name server drops it at once); Apache's proxy keeps sending to it until its route cache refreshes (20 s).
The producer group is the topic's name, as in Apache (so a broker's CHECK_TRANSACTION_STATE names the topic the
proxy relays on).

A stored half message is remembered (TransactionDataManager: producer group + transaction id -> broker,
offsets) until its EndTransaction, or until `expire_ms` passes; a broker's check adds it again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from mqtools.client.errors import MQClientError
from mqtools.client.fault import QueueRotation
from mqtools.client.instance import ClientInstance
from mqtools.client.route import TopicRoute
from mqtools.client.types import SEND_STATUS_BY_CODE, SendStatus
from mqtools.common import properties as P
from mqtools.common import sysflag
from mqtools.common.codec import encode_batch
from mqtools.common.hashing import java_hash
from mqtools.common.ids import decode_offset_msg_id
from mqtools.common.message import Message
from mqtools.common.topics import AUTO_CREATE_TOPIC_KEY
from mqtools.proxy.convert import Outgoing
from mqtools.proxy.errors import Code, ProxyError
from mqtools.proxy.fault import SendFaultStrategy
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import QueueRequestHeader, send_v2_fields
from mqtools.remoting.transaction import COMMIT, ROLLBACK, UNKNOWN, EndTransactionRequestHeader

_MASK64 = (1 << 64) - 1


def consistent_hash(value: int, buckets: int) -> int:
    """Guava's Hashing.consistentHash(long, int): the bucket a key keeps while buckets are added."""
    state = value & _MASK64
    candidate = 0
    while True:
        state = (2862933555777941757 * state + 1) & _MASK64
        nxt = int((candidate + 1) / (((state >> 33) + 1) / 2.0 ** 31))
        if 0 <= nxt < buckets:
            candidate = nxt
        else:
            return candidate


def queue_for_group(queues: list[MessageQueue], group: str) -> MessageQueue:
    return queues[consistent_hash(java_hash(group), len(queues))]


@dataclass(frozen=True, slots=True)
class SendOutcome:
    status: SendStatus
    message_id: str
    transaction_id: str
    offset: int


@dataclass(frozen=True, slots=True)
class TransactionData:
    broker_name: str
    topic: str
    tran_state_table_offset: int
    commit_log_offset: int
    transaction_id: str
    expires_at_ms: int


class Transactions:
    """Open half messages by (producer group, transaction id), for EndTransaction to find their broker."""

    def __init__(self, expire_ms: int, clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.expire_ms = expire_ms
        self._clock_ms = clock_ms
        self._data: dict[tuple[str, str], TransactionData] = {}

    def add(self, group: str, broker_name: str, topic: str, tran_state_table_offset: int, commit_log_offset: int,
            transaction_id: str) -> TransactionData:
        self._expire()
        data = TransactionData(broker_name, topic, tran_state_table_offset, commit_log_offset, transaction_id,
                               self._clock_ms() + self.expire_ms)
        self._data[(group, transaction_id)] = data
        return data

    def poll(self, group: str, transaction_id: str) -> TransactionData | None:
        data = self._data.pop((group, transaction_id), None)
        if data is None or data.expires_at_ms <= self._clock_ms():
            return None
        return data

    def _expire(self) -> None:
        now = self._clock_ms()
        if len(self._data) > 1024:
            for key in [k for k, d in self._data.items() if d.expires_at_ms <= now]:
                del self._data[key]

    def __len__(self) -> int:
        return len(self._data)


class Sender:
    """Sends converted messages to the brokers and ends transactions there."""

    def __init__(self, instance: ClientInstance, transactions: Transactions, *, timeout: float = 3.0,
                 fault: SendFaultStrategy | None = None) -> None:
        self.instance = instance
        self.transactions = transactions
        self.timeout = timeout
        self.fault = fault or SendFaultStrategy()
        self._rotations: dict[str, QueueRotation] = {}

    def _rotation(self, route: TopicRoute) -> QueueRotation:
        rotation = self._rotations.get(route.topic)
        if rotation is None or rotation.queues != route.publish:
            rotation = self._rotations[route.topic] = QueueRotation(route.publish)
        return rotation

    async def send(self, topic: str, items: list[Outgoing]) -> list[SendOutcome]:
        route = self.instance.routes.get(topic) or await self.instance.route(topic)
        if route is None:  # no auto-creation through TBW102 here, as Apache's proxy creates none
            raise ProxyError(Code.TOPIC_NOT_FOUND, f"topic {topic} does not exist")
        if not route.publish:
            raise ProxyError(Code.FORBIDDEN, "no writable queue")
        group = items[0].message_group if len(items) == 1 else ""
        mq = queue_for_group(route.publish, group) if group else self.fault.select(self._rotation(route))
        addr = self.instance.broker_addr(mq.broker_name, any_node=False)
        if addr is None:
            raise ProxyError(Code.FORBIDDEN, f"the broker {mq.broker_name} has no master")
        first = items[0]
        if len(items) == 1:
            body, props = first.message.body, P.properties_to_string(first.message.properties)
            ext = send_v2_fields(topic, topic, AUTO_CREATE_TOPIC_KEY, "4", mq.queue_id, first.sys_flag, first.born_ms, 0,
                                 props)
            cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)
        else:
            batch = Message(topic, encode_batch([i.message for i in items]))
            batch.properties[P.UNIQ_KEY] = ",".join(i.message.properties[P.UNIQ_KEY] for i in items)
            ext = send_v2_fields(topic, topic, AUTO_CREATE_TOPIC_KEY, "4", mq.queue_id, first.sys_flag, first.born_ms,
                                 0, P.properties_to_string(batch.properties), batch=True)
            cmd = RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, ext, batch.body)
        started = time.monotonic()
        try:
            resp = await self.instance.invoke_routed(topic, addr, cmd, self.timeout, ok=SEND_STATUS_BY_CODE)
        except MQClientError:
            self.fault.update(mq.broker_name, (time.monotonic() - started) * 1000, failed=True)
            raise
        self.fault.update(mq.broker_name, (time.monotonic() - started) * 1000, failed=False)
        status = SEND_STATUS_BY_CODE[resp.code]  # type: ignore[index]
        offset_ids = (resp.ext_fields.get("msgId") or "").split(",")
        queue_offset = int(resp.ext_fields.get("queueOffset", -1))
        outcomes = []
        for i, item in enumerate(items):
            uniq = item.message.properties[P.UNIQ_KEY]
            tid = resp.ext_fields.get("transactionId") or uniq
            outcomes.append(SendOutcome(status, uniq, tid, queue_offset + i))
            if status is SendStatus.SEND_OK and item.sys_flag & sysflag.TRANSACTION_PREPARED_TYPE:
                offset_id = offset_ids[i] if i < len(offset_ids) else ""
                try:
                    commit_log_offset = decode_offset_msg_id(offset_id)[1]
                except (ValueError, IndexError):
                    commit_log_offset = -1
                self.transactions.add(topic, mq.broker_name, topic, queue_offset + i, commit_log_offset, tid)
        return outcomes

    async def detect(self, timeout_ms: int) -> None:
        """One detector round (startDetectorEnable): each broker on record whose check is due is asked the max
        offset of queue 0 of a topic it serves, on its master; an answer within `timeout_ms` makes it reachable
        again. A broker whose master no route names any more is forgotten (Apache's resolver finds none)."""
        for name in self.fault.due_for_detection():
            addr = self.instance.broker_addr(name, any_node=False)
            topic = next((t for t, r in self.instance.routes.items() if name in r.broker_addrs), None)
            if addr is None or topic is None:
                self.fault.forget(name)
                continue
            cmd = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, QueueRequestHeader(topic, 0).to_ext())
            try:
                await self.instance.invoke(addr, cmd, timeout_ms / 1000)
            except MQClientError:
                continue
            self.fault.detected(name)

    async def end_transaction(self, topic: str, transaction_id: str, message_id: str, resolution: int,
                              from_check: bool) -> None:
        """END_TRANSACTION (oneway) to the master of the broker that holds the half message."""
        data = self.transactions.poll(topic, transaction_id)
        if data is None:
            raise ProxyError(Code.INVALID_TRANSACTION_ID, "cannot found transaction data")
        header = EndTransactionRequestHeader(
            producer_group=topic, tran_state_table_offset=data.tran_state_table_offset,
            commit_log_offset=data.commit_log_offset, commit_or_rollback={1: COMMIT, 2: ROLLBACK}.get(resolution, UNKNOWN),
            msg_id=message_id, from_transaction_check=from_check, transaction_id=transaction_id)
        ext = header.to_ext()
        ext["topic"] = topic
        addr = self.instance.broker_addr(data.broker_name, any_node=False)
        if addr is None:
            try:
                await self.instance.route(topic, refresh=True)
            except MQClientError:
                pass
            addr = self.instance.broker_addr(data.broker_name, any_node=False)
        if addr is None:
            raise ProxyError(Code.INTERNAL_SERVER_ERROR, f"the broker {data.broker_name} has no master")
        await self.instance.invoke_oneway(addr, RemotingCommand.request(RequestCode.END_TRANSACTION, ext, oneway=True))
