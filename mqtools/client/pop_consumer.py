"""A POP consumer (RocketMQ 5's SimpleConsumer at the remoting level): receive, ack, change invisible time.

No queue assignment and no offsets on the client: each `pop` asks one broker of the topic (in turn) for up
to `max_nums` messages of any of its queues; each message then stays invisible to the group for
`invisible_ms` and comes back (reconsumeTimes + 1) unless it is acknowledged. A popped message carries
its receipt in the POP_CK property, as Apache's client sets it (built from the answer's start and message
offset infos when the broker did not put it there itself); `ack` and `change_invisible_time` send it back.

`order=True` pops FIFO: a queue is held by one batch until it is acknowledged or its invisible time ends,
and a batch delivered again carries its count in reconsumeTimes.
"""

from __future__ import annotations

import enum
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from mqtools.client.client_api import ConsumerBase, decode_pull_body
from mqtools.client.errors import MQClientError, TopicNotExistError
from mqtools.client.instance import ClientInstance
from mqtools.client.sync import _Blocking
from mqtools.common.message import MessageExt
from mqtools.common.security import ClientSecurity
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.pop import (
    FIRST_POP_TIME,
    INIT_MODE_MIN,
    POP_CK,
    AckMessageRequestHeader,
    BatchAck,
    BatchAckMessageRequestBody,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    ExtraInfo,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    build_extra_info,
    offset_key,
    parse_order_count_info,
    parse_start_offset_info,
    queue_key,
)

#: What a POP that found nothing is answered with (PopStatus.POLLING_NOT_FOUND / POLLING_FULL in Apache).
_EMPTY = (ResponseCode.POLLING_TIMEOUT, ResponseCode.PULL_NOT_FOUND, ResponseCode.POLLING_FULL)


class PopStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    POLLING_FULL = "POLLING_FULL"
    POLLING_NOT_FOUND = "POLLING_NOT_FOUND"


@dataclass(slots=True)
class PopResult:
    status: PopStatus
    messages: list[MessageExt] = field(default_factory=list)
    rest_num: int = 0
    pop_time: int = 0
    invisible_time: int = 0


def receipt(msg: MessageExt) -> ExtraInfo:
    """The message's POP receipt; MQClientError when it was not popped."""
    text = msg.properties.get(POP_CK)
    if not text:
        raise MQClientError(f"message {msg.msg_id} has no {POP_CK} property: it was not popped")
    try:
        return ExtraInfo.parse(text)
    except ValueError as exc:
        raise MQClientError(f"bad {POP_CK} of message {msg.msg_id}: {exc}") from None


def stamp_receipts(
    msgs: list[MessageExt], header: PopMessageResponseHeader, broker_name: str, order: bool
) -> None:
    """MQClientAPIImpl.processPopResponse: POP_CK (and, FIFO, reconsumeTimes) from the answer's infos."""
    starts = parse_start_offset_info(header.start_offset_info)
    counts = parse_order_count_info(header.order_count_info) if order else {}
    for msg in msgs:
        if POP_CK not in msg.properties:
            key = queue_key(msg.topic, msg.queue_id)
            msg.properties[POP_CK] = build_extra_info(
                starts.get(key, msg.queue_offset),
                header.pop_time,
                header.invisible_time,
                header.revive_qid,
                msg.topic,
                broker_name,
                msg.queue_id,
                msg.queue_offset,
            )
            count = counts.get(offset_key(msg.topic, msg.queue_id, msg.queue_offset), counts.get(key, 0))
            if count > 0:
                msg.reconsume_times = count
        msg.properties.setdefault(FIRST_POP_TIME, str(header.pop_time))


class PopConsumer(ConsumerBase):
    """`async with PopConsumer("g", namesrv=ns) as c: r = await c.pop("T", 16, 30_000, 5_000); await c.ack(m)`."""

    def __init__(
        self,
        group: str,
        *,
        namesrv: str | list[str] | None = None,
        instance: ClientInstance | None = None,
        security: ClientSecurity | None = None,
        init_mode: int = INIT_MODE_MIN,
    ) -> None:
        super().__init__(group, namesrv, instance, security)
        self.init_mode = init_mode
        self._turn = itertools.count()

    async def _broker_for(self, topic: str, broker_name: str | None) -> tuple[str, str]:
        route = await self.instance.route(topic)
        if route is None or not route.subscribe:
            route = await self.instance.route(topic, refresh=True)
        if route is None or not route.subscribe:
            raise TopicNotExistError(ResponseCode.TOPIC_NOT_EXIST, f"No route info of this topic: {topic}")
        if broker_name is None:
            return self._next_master(topic, sorted({mq.broker_name for mq in route.subscribe}))
        addr = self.instance.broker_addr(broker_name, any_node=False)
        if addr is None:
            raise MQClientError(f"The broker[{broker_name}] has no master in the route of {topic}")
        return broker_name, addr

    def _next_master(self, topic: str, names: list[str]) -> tuple[str, str]:
        """The next of the topic's groups in turn among those whose master is known: a POP needs the master, and
        a group without one (down, or a failover under way) would fail every Nth call that a healthy one serves."""
        masters = [(name, addr) for name in names if (addr := self.instance.broker_addr(name, any_node=False))]
        if not masters:
            raise MQClientError(f"no broker set of topic {topic} has its master in the route ({', '.join(names)})")
        return masters[next(self._turn) % len(masters)]

    async def pop(
        self,
        topic: str,
        max_nums: int = 32,
        invisible_ms: int = 60_000,
        poll_ms: int = 0,
        *,
        expression: str = "*",
        queue_id: int = -1,
        order: bool = False,
        broker_name: str | None = None,
    ) -> PopResult:
        """One POP_MESSAGE to one broker of the topic (each call the next broker, unless named); with poll_ms
        the broker holds it until a message comes or that time ends."""
        name, addr = await self._broker_for(topic, broker_name)
        header = PopMessageRequestHeader(
            consumer_group=self.group,
            topic=topic,
            queue_id=queue_id,
            max_msg_nums=max_nums,
            invisible_time=invisible_ms,
            poll_time=poll_ms,
            born_time=int(time.time() * 1000),
            init_mode=self.init_mode,
            exp_type="TAG",
            exp=expression,
            order=order,
        )
        cmd = RemotingCommand.request(RequestCode.POP_MESSAGE, header.to_ext())
        resp = await self.instance.invoke(
            addr, cmd, self.instance.timeout + poll_ms / 1000, ok=(ResponseCode.SUCCESS, *_EMPTY)
        )
        if resp.code != ResponseCode.SUCCESS:  # may come without a header ("timeout too much")
            status = (
                PopStatus.POLLING_FULL
                if resp.code == ResponseCode.POLLING_FULL
                else PopStatus.POLLING_NOT_FOUND
            )
            return PopResult(status, rest_num=int(resp.ext_fields.get("restNum", 0)))
        rh = PopMessageResponseHeader.from_ext(resp.ext_fields)
        msgs = decode_pull_body(resp.body)
        stamp_receipts(msgs, rh, name, order)
        for msg in msgs:
            msg.topic = topic
        return PopResult(PopStatus.FOUND, msgs, rh.rest_num, rh.pop_time, rh.invisible_time)

    def _addr(self, extra: ExtraInfo) -> str:
        addr = self.instance.broker_addr(extra.broker_name, any_node=False)
        if addr is None:
            raise MQClientError(f"The broker[{extra.broker_name}] of this receipt is not in any known route")
        return addr

    async def ack(self, msg: MessageExt) -> None:
        """ACK_MESSAGE: the message will not come back (NoMessageError and the like when refused)."""
        extra = receipt(msg)
        offset = extra.queue_offset if extra.queue_offset is not None else msg.queue_offset
        header = AckMessageRequestHeader(
            self.group, extra.topic_of(msg.topic, self.group), extra.queue_id, msg.properties[POP_CK], offset
        )
        await self.instance.invoke(
            self._addr(extra), RemotingCommand.request(RequestCode.ACK_MESSAGE, header.to_ext())
        )

    async def batch_ack(self, msgs: list[MessageExt]) -> None:
        """BATCH_ACK_MESSAGE: one request per broker, one entry per checkpoint."""
        by_broker: dict[str, dict[tuple, BatchAck]] = {}
        for msg in msgs:
            extra = receipt(msg)
            offset = extra.queue_offset if extra.queue_offset is not None else msg.queue_offset
            key = (extra.retry, extra.queue_id, extra.ck_queue_offset, extra.pop_time, extra.revive_qid)
            acks = by_broker.setdefault(extra.broker_name, {})
            entry = acks.get(key)
            if entry is None:
                entry = acks[key] = BatchAck(
                    self.group,
                    msg.topic,
                    extra.retry,
                    extra.ck_queue_offset,
                    extra.queue_id,
                    extra.revive_qid,
                    extra.pop_time,
                    extra.invisible_time,
                )
            entry.indexes.append(offset - extra.ck_queue_offset)
        for name, acks in by_broker.items():
            addr = self.instance.broker_addr(name, any_node=False)
            if addr is None:
                raise MQClientError(f"The broker[{name}] of these receipts is not in any known route")
            body = BatchAckMessageRequestBody(name, list(acks.values())).to_json()
            await self.instance.invoke(
                addr, RemotingCommand.request(RequestCode.BATCH_ACK_MESSAGE, body=body)
            )

    async def change_invisible_time(self, msg: MessageExt, invisible_ms: int) -> None:
        """CHANGE_MESSAGE_INVISIBLETIME: the message comes back `invisible_ms` from now unless acknowledged;
        its receipt is renewed in place (ack it with the new one)."""
        extra = receipt(msg)
        offset = extra.queue_offset if extra.queue_offset is not None else msg.queue_offset
        real = extra.topic_of(msg.topic, self.group)
        header = ChangeInvisibleTimeRequestHeader(
            self.group, real, extra.queue_id, msg.properties[POP_CK], offset, invisible_ms
        )
        resp = await self.instance.invoke(
            self._addr(extra),
            RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext()),
        )
        rh = ChangeInvisibleTimeResponseHeader.from_ext(resp.ext_fields)
        ck_offset = extra.ck_queue_offset if extra.is_order else offset
        msg.properties[POP_CK] = build_extra_info(
            ck_offset,
            rh.pop_time,
            rh.invisible_time,
            rh.revive_qid,
            real,
            extra.broker_name,
            extra.queue_id,
            offset,
        )


class SyncPopConsumer(_Blocking):
    """The blocking twin: `with SyncPopConsumer("g", namesrv=ns) as c: c.pop("T")`."""

    def __init__(self, group: str, **options: Any) -> None:
        super().__init__()
        self.consumer: PopConsumer = self._build(PopConsumer, group, **options)

    def start(self) -> None:
        self._loop.run(self.consumer.start())

    def shutdown(self) -> None:
        self._loop.run(self.consumer.shutdown())
        self._loop.close()

    def pop(
        self, topic: str, max_nums: int = 32, invisible_ms: int = 60_000, poll_ms: int = 0, **kwargs: Any
    ) -> PopResult:
        return self._loop.run(self.consumer.pop(topic, max_nums, invisible_ms, poll_ms, **kwargs))

    def ack(self, msg: MessageExt) -> None:
        self._loop.run(self.consumer.ack(msg))

    def batch_ack(self, msgs: list[MessageExt]) -> None:
        self._loop.run(self.consumer.batch_ack(msgs))

    def change_invisible_time(self, msg: MessageExt, invisible_ms: int) -> None:
        self._loop.run(self.consumer.change_invisible_time(msg, invisible_ms))
