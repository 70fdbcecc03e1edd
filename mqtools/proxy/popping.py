"""ReceiveMessage, AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue on the remoting side:
the brokers' POP (ConsumerProcessor, ProducerProcessor.forwardMessageToDeadLetterQueue, and the client's
processPopResponse that turns a POP answer into messages with their receipts).

A POP answer's body is a run of stored messages; each gets its receipt (POP_CK) built from the answer's
header (startOffsetInfo, msgOffsetInfo, orderCountInfo) when the broker did not put one in, then the proxy's
handle (receipt + commit log offset). Messages whose tag the subscription does not match are acked at once; those
delivered maxAttempts times or more go to the DLQ (PopMessageResultFilterImpl).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

from mqtools.client.errors import MQBrokerError, MQClientError
from mqtools.client.instance import ClientInstance
from mqtools.common import properties as P
from mqtools.common.codec import CorruptMessageError, decode_entries
from mqtools.common.message import MessageExt
from mqtools.proxy.errors import Code, ProxyError
from mqtools.proxy.receipt import ReceiptHandle, create_handle
from mqtools.remoting import pop as wire
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import ConsumerSendMsgBackRequestHeader

FOUND, NO_NEW_MSG, POLLING_FULL, POLLING_NOT_FOUND = "FOUND", "NO_NEW_MSG", "POLLING_FULL", "POLLING_NOT_FOUND"
#: ProxyUtils.MAX_MSG_NUMS_FOR_POP_REQUEST
MAX_MSG_NUMS = 32
_POP_ANSWERS = (ResponseCode.SUCCESS, ResponseCode.POLLING_FULL, ResponseCode.POLLING_TIMEOUT,
                ResponseCode.PULL_NOT_FOUND)


@dataclass(slots=True)
class PopResult:
    status: str
    messages: list[MessageExt] = field(default_factory=list)


def tags_of(expression: str) -> set[str]:
    """A TAG expression's tag set (FilterAPI.build): empty for `*` or nothing, i.e. every tag."""
    text = expression.strip()
    if not text or text == "*":
        return set()
    return {t.strip() for t in text.split("||") if t.strip()}


def tag_matched(tags: set[str], msg_tag: str | None) -> bool:
    return not tags or (msg_tag is not None and msg_tag in tags)


def _sorted_key(m: MessageExt) -> str:
    """buildQueueOffsetSortedMap's key: the retry mark of the message's POP_CK where the broker put one in (a
    message from a POP retry topic, its topic rewritten to the one asked for), else of its topic. Keyed by topic
    alone, retry queue 0's messages counted among the normal queue 0's, and the normal ones got the offsets of
    later messages in their receipts, so their acks acknowledged others (and came back as duplicates)."""
    ck = m.properties.get(wire.POP_CK)
    if ck:
        try:
            return f"{wire.ExtraInfo.parse(ck).retry}@{m.queue_id}"
        except ValueError:
            pass
    return wire.queue_key(m.topic, m.queue_id)


def apply_receipts(msgs: list[MessageExt], header: wire.PopMessageResponseHeader, topic: str, broker_name: str,
                   order: bool) -> None:
    """processPopResponse: POP_CK, reconsume times of an orderly pop, FIRST_POP_TIME, topic back to `topic`."""
    start = wire.parse_start_offset_info(header.start_offset_info) if header.start_offset_info else None
    offsets = wire.parse_msg_offset_info(header.msg_offset_info) if header.msg_offset_info else {}
    counts = wire.parse_order_count_info(header.order_count_info) if header.order_count_info else None
    seen: dict[str, list[int]] = {}
    for m in msgs:
        seen.setdefault(_sorted_key(m), []).append(m.queue_offset)
    first: dict[str, str] = {}
    for m in msgs:
        if start is None:
            key = f"{m.topic}{m.queue_id}"
            if key not in first:
                first[key] = wire.build_extra_info(m.queue_offset, header.pop_time, header.invisible_time,
                                                   header.revive_qid, m.topic, broker_name, m.queue_id)
            m.properties[wire.POP_CK] = f"{first[key]} {m.queue_offset}"
        elif wire.POP_CK not in m.properties:
            qkey = wire.queue_key(m.topic, m.queue_id)
            okey = wire.offset_key(m.topic, m.queue_id, m.queue_offset)
            listed = offsets.get(qkey) or [m.queue_offset]
            index = seen[qkey].index(m.queue_offset)
            queue_offset = listed[index] if index < len(listed) else m.queue_offset
            m.properties[wire.POP_CK] = wire.build_extra_info(
                start.get(qkey, m.queue_offset), header.pop_time, header.invisible_time, header.revive_qid, m.topic,
                broker_name, m.queue_id, queue_offset)
            if order and counts is not None:
                count = counts.get(okey, counts.get(qkey))
                if count:
                    m.reconsume_times = count
        m.properties.setdefault(wire.FIRST_POP_TIME, str(header.pop_time))
        m.topic = topic


class Popper:
    """The consumer half of the proxy's remoting side."""

    def __init__(self, instance: ClientInstance, *, timeout: float = 3.0) -> None:
        self.instance = instance
        self.timeout = timeout

    def _master(self, broker_name: str) -> str:
        addr = self.instance.broker_addr(broker_name, any_node=False)
        if addr is None:
            raise ProxyError(Code.FORBIDDEN, f"the broker {broker_name} has no master")
        return addr

    async def _handle_master(self, broker_name: str) -> str:
        """The master of the broker a receipt handle names (resolveBrokerAddrInReceiptHandle). A broker no cached
        route names (a proxy restarted since the receive, or that never routed the topic) is looked up as the route
        of the topic named after it, which every broker registers; one not found so is INVALID_RECEIPT_HANDLE, as
        Apache answers it, rather than losing a valid handle's ack to a refusal."""
        if not self.instance.broker_nodes(broker_name):
            with contextlib.suppress(MQClientError):
                await self.instance.route(broker_name)
            if not self.instance.broker_nodes(broker_name):
                raise ProxyError(Code.INVALID_RECEIPT_HANDLE, f"cannot find broker {broker_name}")
        return self._master(broker_name)

    async def pop(self, *, broker_name: str, group: str, topic: str, queue_id: int, max_nums: int, invisible_ms: int,
                  poll_ms: int, exp_type: str, exp: str, fifo: bool, attempt_id: str | None, timeout_s: float
                  ) -> PopResult:
        header = wire.PopMessageRequestHeader(
            consumer_group=group, topic=topic, queue_id=queue_id, max_msg_nums=min(max_nums, MAX_MSG_NUMS),
            invisible_time=invisible_ms, poll_time=poll_ms, born_time=int(time.time() * 1000),
            init_mode=wire.INIT_MODE_MAX, exp_type=exp_type, exp=exp, order=fifo, attempt_id=attempt_id)
        cmd = RemotingCommand.request(RequestCode.POP_MESSAGE, header.to_ext())
        resp = await self.instance.invoke_routed(topic, self._master(broker_name), cmd, timeout_s, ok=_POP_ANSWERS)
        if resp.code == ResponseCode.POLLING_FULL:
            return PopResult(POLLING_FULL)
        if resp.code != ResponseCode.SUCCESS:
            return PopResult(POLLING_NOT_FOUND)
        try:
            msgs = decode_entries(resp.body or b"")
            answer = wire.PopMessageResponseHeader.from_ext(resp.ext_fields)
            apply_receipts(msgs, answer, topic, broker_name, fifo)
        except (CorruptMessageError, ValueError) as exc:
            raise ProxyError(Code.INTERNAL_SERVER_ERROR, f"unreadable POP answer from {broker_name}: {exc}") from None
        for m in msgs:
            if not m.properties.get(P.UNIQ_KEY):
                m.properties[P.UNIQ_KEY] = m.msg_id
            m.properties[wire.POP_CK] = create_handle(m.properties[wire.POP_CK], m.commit_log_offset)
        return PopResult(FOUND, msgs)

    @staticmethod
    def check(handle: ReceiptHandle) -> None:
        """validateReceiptHandle: an expired handle is refused before asking a broker."""
        if handle.expired(int(time.time() * 1000)):
            raise ProxyError(Code.INVALID_RECEIPT_HANDLE, "receipt handle is expired")

    async def ack(self, handle: ReceiptHandle, group: str, topic: str) -> None:
        self.check(handle)
        header = wire.AckMessageRequestHeader(consumer_group=group, topic=handle.real_topic(topic, group),
                                              queue_id=handle.queue_id, extra_info=handle.text, offset=handle.offset)
        await self.instance.invoke(await self._handle_master(handle.broker_name),
                                   RemotingCommand.request(RequestCode.ACK_MESSAGE, header.to_ext()), self.timeout)

    async def change_invisible(self, handle: ReceiptHandle, group: str, topic: str, invisible_ms: int) -> str:
        """The new receipt handle."""
        self.check(handle)
        real = handle.real_topic(topic, group)
        header = wire.ChangeInvisibleTimeRequestHeader(consumer_group=group, topic=real, queue_id=handle.queue_id,
                                                       extra_info=handle.text, offset=handle.offset,
                                                       invisible_time=invisible_ms)
        resp = await self.instance.invoke(await self._handle_master(handle.broker_name), RemotingCommand.request(
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext()), self.timeout)
        answer = wire.ChangeInvisibleTimeResponseHeader.from_ext(resp.ext_fields)
        extra = wire.build_extra_info(handle.offset, answer.pop_time, answer.invisible_time, answer.revive_qid, real,
                                      handle.broker_name, handle.queue_id, handle.offset)
        return create_handle(extra, handle.commit_log_offset)

    async def to_dead_letter(self, handle: ReceiptHandle, group: str, topic: str, message_id: str
                             ) -> tuple[int, str | None]:
        """CONSUMER_SEND_MSG_BACK with maxReconsumeTimes 0 (straight to the DLQ), then the ack; the broker's
        answer (code, remark)."""
        if handle.commit_log_offset < 0:
            raise ProxyError(Code.INVALID_RECEIPT_HANDLE, "commit log offset is empty")
        header = ConsumerSendMsgBackRequestHeader(offset=handle.commit_log_offset, group=group, delay_level=-1,
                                                  origin_msg_id=message_id,
                                                  origin_topic=handle.real_topic(topic, group), max_reconsume_times=0)
        try:
            resp = await self.instance.invoke(await self._handle_master(handle.broker_name), RemotingCommand.request(
                RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext()), self.timeout)
        except MQBrokerError as exc:
            return exc.code, exc.remark
        try:
            await self.ack(handle, group, topic)
        except (MQClientError, ProxyError):
            pass  # the message is in the DLQ; the checkpoint revives a copy at worst
        return resp.code, resp.remark
