"""POP_MESSAGE with Apache 5.5's semantics (PopMessageProcessor); PEEK_MESSAGE and NOTIFICATION are in pop_peek.py.

A POP takes up to maxMsgNums (<= 32) messages for a consumer group from any queue of the topic (queueId
-1) or one queue, and from the group's POP retry topic (``%RETRY%group_topic``; the ``+`` form too when
it exists). Queues are read in turn starting at a queue that moves on with every POP of the group, so
more consumers than queues all receive; every 5th POP reads the retry topic first (state.py's fair rule
in place of Apache's 20% random draw), the others fill from it what the topic left.

Per queue read, a normal POP writes a checkpoint to the revive topic and moves the group's offset past
what it read, in one step on the event loop (no other POP can read the same messages in between); the
answer waits for the checkpoint's flush when the store flushes synchronously. An orderly POP (order=true)
writes no checkpoint: the queue is held until its batch is acknowledged or its invisible time ends
(pop/order.py), and the answer's orderCountInfo carries the delivery counts.

The answer is the stored messages as a pull gives them; messages from a retry topic are re-encoded under
the requested topic with their POP_CK extra info, as Apache does. Clients build the others' extra info
from startOffsetInfo / msgOffsetInfo. Nothing found: with pollTime > 0 the request is parked on every
queue it looked at (pop/long_polling.py) and runs again when a message arrives, a FIFO queue is
released, or the poll time ends (then POLLING_TIMEOUT, as Apache answers); POLLING_FULL at once when as many wait
already as the broker allows (pop/long_polling.py).

Codes are registered twice: 200050 and the 16-bit form the ROCKETMQ header serializer makes of it (3442).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mqtools.common.codec import decode_stored, encode_stored
from mqtools.common.perm import is_readable
from mqtools.common.topics import is_retry_topic
from mqtools.remoting.bodies import TopicConfig
from mqtools.remoting.codes import GROUP_CONSUME_DISABLED, RequestCode, ResponseCode, java_short
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.pop import (
    INIT_MODE_MIN,
    POP_CK,
    POP_ORDER_REVIVE_QUEUE,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    build_extra_info,
    format_msg_offset_info,
    format_order_count_info,
    format_start_offset_info,
    pop_retry_topic_v1,
    pop_retry_topic_v2,
)
from mqtools.server.broker.context import BrokerContext
from mqtools.server.broker.pop.long_polling import TagFilter, Wait
from mqtools.server.broker.pop.records import PopCheckPoint, ck_message
from mqtools.server.broker.pop.state import PopState
from mqtools.server.broker.processors.pull import SubscriptionParseError, build_subscription, tag_filter_of
from mqtools.server.store.results import STORED, GetMessageStatus, PutMessageResult

if TYPE_CHECKING:
    from mqtools.remoting.server import RemotingServer
    from mqtools.remoting.transport import RemotingConnection

MAX_POP_NUMS = 32
#: PopMessageRequestHeader.isTimeoutTooMuch: a request older than its poll time by this much is refused.
TIMEOUT_TOO_MUCH_MS = 500
#: mq's bound on invisible and poll times (a year): a checkpoint's revive time must stay a Java long.
MAX_INVISIBLE_MS = 365 * 24 * 3600 * 1000
_MOVED = {
    GetMessageStatus.OFFSET_TOO_SMALL,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY,
    GetMessageStatus.OFFSET_FOUND_NULL,
}


@dataclass(slots=True)
class QueueRead:
    """What one queue gave a POP: where its checkpoint starts and the messages' queue offsets."""

    topic: str
    queue_id: int
    start: int
    offsets: list[int]
    buffers: list[memoryview]
    counts: dict[int, int] = field(default_factory=dict)


@dataclass(slots=True)
class PopOutcome:
    reads: list[QueueRead] = field(default_factory=list)
    rest: int = 0
    waits: list[Wait] = field(default_factory=list)
    pending: list[Awaitable[PutMessageResult]] = field(default_factory=list)
    #: FIFO queues held by a batch, and when (epoch ms) each batch's invisible time ends.
    held: list[tuple[str, int, int]] = field(default_factory=list)
    #: Queues this POP leaves messages in, with their max offset: another POP of the group waiting is woken.
    left: list[tuple[str, int, int]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(len(r.offsets) for r in self.reads)


def queue_offset_of(buf: memoryview) -> int:
    """The QUEUEOFFSET field of a stored message (bytes 20..28)."""
    return int.from_bytes(buf[20:28], "big", signed=True)


class PopProcessor:
    def __init__(self, c: BrokerContext) -> None:
        self.c = c
        self.s = PopState(c)

    # ------------------------------------------------------------------ checks shared with PEEK / NOTIFICATION

    def refusal(
        self, req: RemotingCommand, group: str, topic: str, queue_id: int
    ) -> RemotingCommand | TopicConfig:
        c = self.c
        ip = c.config.broker_ip1
        if not is_readable(c.config.broker_permission):
            return req.response(ResponseCode.NO_PERMISSION, f"the broker[{ip}] pop message is forbidden")
        tc = c.topics.select(topic)
        if tc is None:
            return req.response(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!"
            )
        if not is_readable(tc.perm):
            return req.response(
                ResponseCode.NO_PERMISSION, f"the topic[{topic}] peeking message is forbidden"
            )
        if queue_id >= tc.read_queue_nums:
            return req.response(
                ResponseCode.INVALID_PARAMETER,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                f"[{tc.read_queue_nums}]",
            )
        group_cfg = c.groups.find(group)
        if group_cfg is None:
            return req.response(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group [{group}] does not exist"
            )
        if not group_cfg.consume_enable:
            return req.response(ResponseCode.NO_PERMISSION, GROUP_CONSUME_DISABLED + group)
        return tc

    def receipt_refusal(
        self, req: RemotingCommand, topic: str, queue_id: int, offset: int, *, max_included: bool
    ) -> RemotingCommand | None:
        """The checks an ack and a change of invisible time share: the topic, the queue id, the offset
        within the queue (Apache's ack takes the queue's max offset itself, its change of invisible time
        does not)."""
        tc = self.c.topics.select(topic)
        if tc is None:
            return req.response(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!"
            )
        if not 0 <= queue_id < tc.read_queue_nums:
            return req.response(
                ResponseCode.MESSAGE_ILLEGAL,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] "
                f"topicConfig.readQueueNums:[{tc.read_queue_nums}]",
            )
        lo = self.c.store.get_min_offset_in_queue(topic, queue_id)
        hi = self.c.store.get_max_offset_in_queue(topic, queue_id)
        if not lo <= offset <= (hi if max_included else hi - 1):
            return req.response(
                ResponseCode.NO_MESSAGE,
                f"offset is illegal, key:{topic}@{queue_id}, commit:{offset}, store:{lo}~{hi}",
            )
        return None

    def sources(self, group: str, tc: TopicConfig, queue_id: int, order: bool) -> list[tuple[str, int]]:
        turn = self.s.turn(group, tc.topic_name)
        n = max(tc.read_queue_nums, 1)
        qids = [queue_id] if queue_id >= 0 else [(turn + i) % n for i in range(tc.read_queue_nums)]
        normal = [(tc.topic_name, q) for q in qids]
        if order:
            return normal
        retry = []
        for name in (pop_retry_topic_v1(tc.topic_name, group), pop_retry_topic_v2(tc.topic_name, group)):
            rtc = self.c.topics.select(name)
            if rtc is not None:
                retry.extend((name, q) for q in range(rtc.read_queue_nums))
        return retry + normal if self.s.retry_first(turn) else normal + retry

    def _future_retry(self, group: str, topic: str, order: bool) -> list[Wait]:
        """The group's POP retry topic when it does not exist yet: the revive creates it (one queue) with the
        first message it puts back, which must wake a POP parked now, as Apache's arrival notice does
        (notifyMessageArrivingWithRetryTopic), not leave it to its poll time."""
        retry = pop_retry_topic_v1(topic, group)
        return [] if order or self.c.topics.select(retry) is not None else [(retry, 0, 0)]

    def pop_offset(
        self, group: str, topic: str, queue_id: int, init_mode: int, *, commit: bool = True
    ) -> int:
        """The group's next offset on the queue; a group new to it starts as PopMessageProcessor.getInitOffset
        says (MIN: the first message; MAX: the last one, or 0 on a young queue still in memory)."""
        offset = self.c.offsets.query_offset(group, topic, queue_id)
        if offset >= 0:
            return offset
        store = self.c.store
        lo, hi = (
            store.get_min_offset_in_queue(topic, queue_id),
            store.get_max_offset_in_queue(topic, queue_id),
        )
        if init_mode == INIT_MODE_MIN or is_retry_topic(topic):
            offset = lo
        elif lo <= 0 < hi and not store.check_in_disk_by_consume_offset(topic, queue_id, 0):
            offset = 0
        else:
            offset = max(hi - 1, 0)
        if commit:
            self.c.offsets.commit_offset("getPopOffset", group, topic, queue_id, offset)
        return offset

    # ------------------------------------------------------------------ POP_MESSAGE

    def pop(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand | None | Awaitable:
        return self.process_pop(conn, req, None)

    def process_pop(
        self, conn: RemotingConnection, req: RemotingCommand, deadline: float | None
    ) -> RemotingCommand | None | Awaitable:
        c = self.c
        h = PopMessageRequestHeader.from_ext(req.ext_fields)
        now_ms = self.s.now_ms()
        ip = c.config.broker_ip1
        if deadline is None and h.born_time > 0 and now_ms - h.born_time - h.poll_time > TIMEOUT_TOO_MUCH_MS:
            return req.response(
                ResponseCode.POLLING_TIMEOUT, f"the broker[{ip}] pop message is timeout too much"
            )
        if h.max_msg_nums > MAX_POP_NUMS:
            return req.response(
                ResponseCode.INVALID_PARAMETER,
                f"the broker[{ip}] pop message's num is greater than {MAX_POP_NUMS}",
            )
        if (
            h.max_msg_nums <= 0
            or not 0 <= h.invisible_time <= MAX_INVISIBLE_MS
            or not 0 <= h.poll_time <= MAX_INVISIBLE_MS
        ):
            return req.response(
                ResponseCode.INVALID_PARAMETER,
                f"maxMsgNums {h.max_msg_nums}, invisibleTime {h.invisible_time} and pollTime "
                f"{h.poll_time} must be positive (times at most {MAX_INVISIBLE_MS} ms)",
            )
        tc = self.refusal(req, h.consumer_group, h.topic, h.queue_id)
        if isinstance(tc, RemotingCommand):
            return tc
        try:
            sub = build_subscription(h.topic, h.exp, h.exp_type) if h.exp else None
        except SubscriptionParseError:
            return req.response(
                ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"
            )
        tag_filter = tag_filter_of(sub)
        order = bool(h.order)
        revive_qid = POP_ORDER_REVIVE_QUEUE if order else self.s.next_revive_qid()
        out = PopOutcome()
        for topic, qid in self.sources(h.consumer_group, tc, h.queue_id, order):
            if out.count >= h.max_msg_nums:
                hi = c.store.get_max_offset_in_queue(topic, qid)
                rest = hi - self.pop_offset(h.consumer_group, topic, qid, h.init_mode, commit=False)
                if rest > 0:
                    out.rest += rest
                    out.left.append((topic, qid, hi))
                continue
            self._pop_queue(conn, h, topic, qid, tag_filter, now_ms, revive_qid, out)
        if out.reads:
            for topic, qid, hi in out.left:  # an arrival wakes one POP of a group: what it leaves, the next
                self.s.polling.notify(topic, qid, hi)
            return self._found(req, h, out, now_ms, revive_qid)
        c.stats.on_get(h.consumer_group, h.topic, 0, 0)
        code = ResponseCode.POLLING_TIMEOUT
        if h.poll_time > 0:
            until = deadline if deadline is not None else c.clock() + h.poll_time / 1000
            if c.clock() < until:
                if self.s.polling.park(conn, req, until,
                                       out.waits + self._future_retry(h.consumer_group, tc.topic_name, order),
                                       tag_filter, self.process_pop):
                    self.s.polling.wake_at_release(out.held, now_ms, until)
                    return None
                code = ResponseCode.POLLING_FULL
        header = PopMessageResponseHeader(now_ms, h.invisible_time, revive_qid, out.rest, "", "")
        return req.response(code, GetMessageStatus.NO_MESSAGE_IN_QUEUE.name, header.to_ext())

    def _pop_queue(
        self,
        conn: RemotingConnection,
        h: PopMessageRequestHeader,
        topic: str,
        qid: int,
        tag_filter: TagFilter,
        now_ms: int,
        revive_qid: int,
        out: PopOutcome,
    ) -> None:
        """Read one queue into `out`: messages, checkpoint or FIFO batch, the group's offset moved."""
        c, s = self.c, self.s
        group = h.consumer_group
        offset = self.pop_offset(group, topic, qid, h.init_mode)
        key = (topic, group, qid)
        if h.order and s.order.blocked(key, now_ms, h.attempt_id):
            out.waits.append((topic, qid, offset))
            out.held.append((topic, qid, s.order.batches[key].invisible_until))
            return
        want = h.max_msg_nums - out.count
        max_bytes = c.config.max_transfer_bytes_on_message_in_memory
        result = c.store.get_message(group, topic, qid, offset, want, tag_filter, max_bytes)
        if result.status in _MOVED and result.next_begin_offset != offset:
            offset = result.next_begin_offset
            c.offsets.commit_offset(conn.peer, group, topic, qid, offset)
            result = c.store.get_message(group, topic, qid, offset, want, tag_filter, max_bytes)
        if not result.buffers:
            if result.next_begin_offset > offset and result.status not in _MOVED:
                c.offsets.commit_offset(conn.peer, group, topic, qid, result.next_begin_offset)
            out.rest += max(result.max_offset - result.next_begin_offset, 0)
            out.waits.append((topic, qid, max(offset, result.next_begin_offset)))
            return
        offsets = [queue_offset_of(b) for b in result.buffers]
        read = QueueRead(topic, qid, offset, offsets, list(result.buffers))
        if h.order:
            read.counts = s.order.on_pop(key, now_ms, h.invisible_time, offsets, result.next_begin_offset,
                                         h.attempt_id)
            c.offsets.commit_offset(conn.peer, group, topic, qid, offset)
        else:
            ck = PopCheckPoint(
                topic=topic,
                cid=group,
                queue_id=qid,
                start_offset=offset,
                pop_time=now_ms,
                invisible_time=h.invisible_time,
                num=len(offsets),
                broker_name=c.config.broker_name,
                queue_offset_diff=[o - offset for o in offsets],
            )
            put = s.put_record(ck_message(s.revive_topic, revive_qid, ck, now_ms, s.host))
            if isinstance(put, PutMessageResult):
                if put.status.name not in STORED:
                    out.rest += max(result.max_offset - offset, 0)
                    return
            else:
                out.pending.append(put)
            c.offsets.commit_offset(conn.peer, group, topic, qid, result.next_begin_offset)
        if result.max_offset > result.next_begin_offset:
            out.rest += result.max_offset - result.next_begin_offset
            if not h.order:  # a FIFO queue is held by this batch: no other POP could take the rest now
                out.left.append((topic, qid, result.max_offset))
        out.reads.append(read)

    def _found(
        self,
        req: RemotingCommand,
        h: PopMessageRequestHeader,
        out: PopOutcome,
        pop_time: int,
        revive_qid: int,
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        broker = self.c.config.broker_name
        parts: list[bytes | memoryview] = []
        counts = []
        for read in out.reads:
            if is_retry_topic(read.topic):
                for buf in read.buffers:
                    msg = decode_stored(buf)
                    msg.properties.setdefault(
                        POP_CK,
                        build_extra_info(
                            read.start,
                            pop_time,
                            h.invisible_time,
                            revive_qid,
                            read.topic,
                            broker,
                            msg.queue_id,
                            msg.queue_offset,
                        ),
                    )
                    msg.topic = h.topic
                    parts.append(encode_stored(msg))
            else:
                parts.extend(read.buffers)
            counts.append((read.topic, read.queue_id, [(o, read.counts.get(o, 0)) for o in read.offsets]))
        body = b"".join(parts)
        header = PopMessageResponseHeader(
            pop_time,
            h.invisible_time,
            revive_qid,
            out.rest,
            format_start_offset_info([(r.topic, r.queue_id, r.start) for r in out.reads]),
            format_msg_offset_info([(r.topic, r.queue_id, r.offsets) for r in out.reads]),
            format_order_count_info(counts) if h.order else None,
        )
        self.c.stats.on_get(h.consumer_group, h.topic, out.count, len(body))
        resp = req.response(ResponseCode.SUCCESS, GetMessageStatus.FOUND.name, header.to_ext(), body)
        if not out.pending:
            return resp
        return self._after(out.pending, resp)

    @staticmethod
    async def _after(pending: list[Awaitable[PutMessageResult]], resp: RemotingCommand) -> RemotingCommand:
        """Answer once the checkpoints are flushed (SYNC_FLUSH) or replicated (SYNC_MASTER)."""
        for put in pending:
            await put
        return resp


def register_both(server: RemotingServer, code: int, handler: Callable) -> None:
    """Serve a RocketMQ 5 code under its number and under the 16-bit form binary headers carry."""
    server.register(code, handler)
    server.register(java_short(code), handler)


def register(server: RemotingServer, controller: BrokerContext) -> PopProcessor:
    proc = PopProcessor(controller)
    register_both(server, RequestCode.POP_MESSAGE, proc.pop)
    server.add_close_hook(proc.s.polling.connection_closed)
    return proc
