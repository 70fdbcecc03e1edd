"""SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE.

The checks run in RocketMQ's order (SendMessageProcessor.msgCheck): broker write
permission, topic name rules, topics clients may not send to, topic lookup with
auto-creation from the template topic (TBW102) when allowed, topic write permission,
queue id range. Then: sends to a %RETRY% topic past the group's retry limit go to the
%DLQ% topic, a DELAY property moves the message to SCHEDULE_TOPIC_XXXX (the store's
ScheduleMessageService), a TRAN_MSG send is stored as a half message (mqtools/server/broker/transaction),
and the store's put status maps to RocketMQ's response codes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from mqtools.common import properties as P
from mqtools.common import speedups
from mqtools.common import topics as T
from mqtools.common.javanum import INT_MAX, INT_MIN, INT_RANGE, LONG_MAX, LONG_MIN, LONG_RANGE
from mqtools.common.message import MessageExtBatch, MessageExtBrokerInner
from mqtools.common.perm import PERM_READ, PERM_WRITE, is_writeable
from mqtools.common.validation import ValidationError, check_topic
from mqtools.remoting.bodies import TopicConfig
from mqtools.remoting.codes import RequestCode, ResponseCode, SerializeType
from mqtools.remoting.command import FLAG_ONEWAY, RemotingCommand
from mqtools.remoting.errors import RemotingConnectionClosed
from mqtools.remoting.headers import SendMessageRequestHeader, parse_send_v2
from mqtools.server.broker.context import BrokerContext
from mqtools.server.broker.schedule_hook import handle_schedule
from mqtools.server.store.results import STORED, AppendMessageResult, PutMessageResult, PutMessageStatus

if TYPE_CHECKING:
    from mqtools.remoting.server import RemotingServer
    from mqtools.remoting.transport import RemotingConnection

DLQ_NUMS_PER_GROUP = 1
#: Topics RocketMQ's TopicValidator.isNotAllowedSendTopic refuses from producers.
NOT_ALLOWED_SEND_TOPICS = frozenset({T.SCHEDULE_TOPIC, T.RMQ_SYS_TRANS_HALF_TOPIC, T.RMQ_SYS_TRANS_OP_HALF_TOPIC,
                                     T.TRANS_CHECK_MAX_TIME_TOPIC, "CHECK_TRANSACTION_STATE_TOPIC"})

#: Header fields the stored message layout keeps in 4 or 8 bytes (the queue id is checked against the
#: topic). Checked here because parse_send_v2, the fast path, converts numbers without range checks.
_FIELD_RANGES = (("flag", INT_RANGE), ("sys_flag", INT_RANGE), ("reconsume_times", INT_RANGE),
                 ("max_reconsume_times", INT_RANGE), ("born_timestamp", LONG_RANGE))
#: The common SEND_MESSAGE_V2 compiled (_csend.pyx), when it was built and the pure path is not asked for.
_compiled = speedups.compiled("mqtools.server.broker.processors._csend")
#: Its SUCCESS answer frame (a JSON request's), for a send answered once its slave has it.
_answer_frame = None if _compiled is None else _compiled.answer_frame
#: Its processor's type, and its store of a front worker's record of a plain send (front/relay.py).
SendV2 = None if _compiled is None else _compiled.SendV2
send_record = None if _compiled is None else _compiled.send_record
_ILLEGAL = ("the message is illegal, maybe msg body or properties length not matched. msg body length limit 128k, "
            "msg properties length limit 32k.")
_UNAVAILABLE = ("service not available now. It may be caused by one of the following reasons: the broker's disk is "
                "full, messages are put to the slave, message store has been shut down, etc.")
_PUT_STATUS = {
    "PUT_OK": (ResponseCode.SUCCESS, None),
    "FLUSH_DISK_TIMEOUT": (ResponseCode.FLUSH_DISK_TIMEOUT, None),
    "FLUSH_SLAVE_TIMEOUT": (ResponseCode.FLUSH_SLAVE_TIMEOUT, None),
    "SLAVE_NOT_AVAILABLE": (ResponseCode.SLAVE_NOT_AVAILABLE, None),
    "CREATE_MAPPED_FILE_FAILED": (ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."),
    "MESSAGE_ILLEGAL": (ResponseCode.MESSAGE_ILLEGAL, _ILLEGAL),
    "PROPERTIES_SIZE_EXCEEDED": (ResponseCode.MESSAGE_ILLEGAL, _ILLEGAL),
    "SERVICE_NOT_AVAILABLE": (ResponseCode.SERVICE_NOT_AVAILABLE, _UNAVAILABLE),
    "OS_PAGE_CACHE_BUSY": (ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"),
    "UNKNOWN_ERROR": (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
    "IN_SYNC_REPLICAS_NOT_ENOUGH": (ResponseCode.SYSTEM_ERROR, "in-sync replicas not enough"),
}


def _in_ranges(h: SendMessageRequestHeader) -> bool:
    """All of _FIELD_RANGES' fields in range, checked as chained comparisons: the loop over them with getattr
    cost every send about a microsecond; it only runs now to name the field that is not."""
    times, max_times = h.reconsume_times, h.max_reconsume_times
    try:
        return (INT_MIN <= h.flag <= INT_MAX and INT_MIN <= h.sys_flag <= INT_MAX
                and LONG_MIN <= h.born_timestamp <= LONG_MAX
                and (times is None or INT_MIN <= times <= INT_MAX)
                and (max_times is None or INT_MIN <= max_times <= INT_MAX))
    except TypeError:  # a None where a number belongs: the loop tells which
        return False


@functools.lru_cache(maxsize=4096)
def topic_error(topic: str) -> str | None:
    """check_topic's remark for a bad name, None for a good one (cached: topics repeat)."""
    try:
        check_topic(topic)
    except ValidationError as exc:
        return str(exc)
    return None


@functools.lru_cache(maxsize=4096)
def split_host(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    try:
        return host or addr, int(port)
    except ValueError:
        return addr, 0


class SendProcessor:
    #: What the compiled path (_csend.pyx) asks of this module, so that it has one source.
    topic_error = staticmethod(topic_error)
    split_host = staticmethod(split_host)
    not_allowed = NOT_ALLOWED_SEND_TOPICS | {T.AUTO_CREATE_TOPIC_KEY}

    def __init__(self, controller: BrokerContext) -> None:
        self.c = controller
        #: SEND_MESSAGE_V2's processor: compiled (_csend.SendV2, which hands what it does not take to
        #: send_checked) where built, else send_message.
        self.send_v2 = self.send_message if _compiled is None else _compiled.SendV2(self)

    # ------------------------------------------------------------------ checks

    def _header(self, req: RemotingCommand) -> SendMessageRequestHeader:
        """SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE carry the short V2 names, always (RocketMQ's
        parseRequestHeader): a header without them is refused as undecodable (SYSTEM_ERROR naming the
        missing field), never read by its long names, which neither ACL checks for these codes."""
        if req.code == RequestCode.SEND_MESSAGE:
            return SendMessageRequestHeader.from_ext(req.ext_fields)
        return parse_send_v2(req.ext_fields)

    def _busy(self, req: RemotingCommand) -> RemotingCommand | None:
        """Fast failure's refusal, asked once a send (it also records the send's wait)."""
        busy = self.c.fast_failure.refusal()
        return None if busy is None else req.response(ResponseCode.SYSTEM_BUSY, busy)

    def _check(self, conn: RemotingConnection, req: RemotingCommand, h: SendMessageRequestHeader
               ) -> RemotingCommand | TopicConfig:
        """RocketMQ's msgCheck (after its fast failure, _busy): the error response, or the topic's config."""
        cfg = self.c.config
        if cfg.is_slave:
            return req.response(ResponseCode.SERVICE_NOT_AVAILABLE, "the broker is a slave, sending is refused")
        if not is_writeable(cfg.broker_permission):
            return req.response(ResponseCode.NO_PERMISSION,
                                f"the broker[{cfg.broker_ip1}] sending message is forbidden")
        bad_topic = topic_error(h.topic)
        if bad_topic is not None:
            return req.response(ResponseCode.SYSTEM_ERROR, bad_topic)
        if not _in_ranges(h):
            for name, allowed in _FIELD_RANGES:
                value = getattr(h, name)
                if value is not None and value not in allowed:
                    return req.response(ResponseCode.SYSTEM_ERROR,
                                        f"the custom field <{name}> is out of range: {value}")
        if h.topic in self.not_allowed:
            return req.response(ResponseCode.NO_PERMISSION, f"Sending message to topic[{h.topic}] is forbidden.")
        tc = self.c.topics.select(h.topic)
        if tc is None:
            tc = self.c.topics.create_topic_in_send_message_method(
                h.topic, h.default_topic, h.default_topic_queue_nums)
            if tc is None and T.is_retry_topic(h.topic):
                tc = self.c.topics.create_topic_in_send_message_back_method(
                    h.topic, 1, PERM_READ | PERM_WRITE)
            if tc is None:
                return req.response(
                    ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist, apply first please!")
        if not is_writeable(tc.perm):
            return req.response(ResponseCode.NO_PERMISSION,
                                f"the topic[{h.topic}] sending message is forbidden")
        max_q = max(tc.read_queue_nums, tc.write_queue_nums)
        if h.queue_id >= max_q:
            return req.response(ResponseCode.SYSTEM_ERROR,
                                f"request queueId[{h.queue_id}] is illegal, {tc} Producer: {conn.peer}")
        if len(req.body or b"") > cfg.max_message_size:
            return req.response(ResponseCode.MESSAGE_ILLEGAL,
                                f"the message body size over max value, MAX: {cfg.max_message_size}")
        return tc

    def _retry_or_dlq(self, req: RemotingCommand, h: SendMessageRequestHeader, msg: MessageExtBrokerInner
                      ) -> RemotingCommand | None:
        """A producer-side send to %RETRY%group past the retry limit goes to %DLQ%group."""
        if not T.is_retry_topic(h.topic):
            return None
        group = h.topic[len(T.RETRY_GROUP_TOPIC_PREFIX):]
        gcfg = self.c.groups.find(group)
        if gcfg is None:
            return req.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                f"subscription group not exist, {group}")
        max_times = h.max_reconsume_times if h.max_reconsume_times is not None else gcfg.retry_max_times
        if (h.reconsume_times or 0) >= max_times:
            dlq = T.dlq_topic(group)
            tc = self.c.topics.create_topic_in_send_message_back_method(
                dlq, DLQ_NUMS_PER_GROUP, PERM_READ | PERM_WRITE)
            if tc is None:
                return req.response(ResponseCode.SYSTEM_ERROR, f"topic[{dlq}] not exist")
            msg.topic = dlq
            msg.queue_id = random.randrange(DLQ_NUMS_PER_GROUP)
        return None

    # ------------------------------------------------------------------ message building

    def _props_string(self, raw: str | None, props: dict[str, str]) -> str:
        """The properties string as RocketMQ stores it: the client's, with CLUSTER set and WAIT left out
        (WAIT only says whether the producer waits for the store, and Apache's broker drops it to save
        nine bytes a message; `props` keeps it for that). The client's string is kept as it came where it
        can be, rather than re-rendering the whole map."""
        cluster = self.c.config.broker_cluster_name
        if P.CLUSTER in props:
            stored = {k: v for k, v in props.items() if k != P.WAIT}
            stored[P.CLUSTER] = props[P.CLUSTER] = cluster
            return P.properties_to_string(stored)
        props[P.CLUSTER] = cluster
        raw = raw or ""
        wait = props.get(P.WAIT)
        if wait is not None:
            raw = P.drop_property(raw, P.WAIT, wait)
        if raw and not raw.endswith(P.PROPERTY_SEPARATOR):
            raw += P.PROPERTY_SEPARATOR
        return f"{raw}{P.CLUSTER}{P.NAME_VALUE_SEPARATOR}{cluster}{P.PROPERTY_SEPARATOR}"

    def _fields(self, conn: RemotingConnection, h: SendMessageRequestHeader, body: bytes, tc: TopicConfig
                ) -> tuple[tuple, str]:
        """What a message and a batch are built from alike: their first ten fields in order (the header's
        fields, the properties with CLUSTER, the queue, a random writable one when the producer left it to
        us, and both hosts), and the properties string. Positional: this runs once per message."""
        props = P.string_to_properties(h.properties)
        return (h.topic, body, h.flag, props,
                h.queue_id if h.queue_id >= 0 else random.randrange(max(1, tc.write_queue_nums)),
                h.sys_flag, h.born_timestamp, split_host(conn.peer), split_host(self.c.broker_addr),
                h.reconsume_times or 0), self._props_string(h.properties, props)

    def _inner(self, conn: RemotingConnection, h: SendMessageRequestHeader, body: bytes, tc: TopicConfig
               ) -> MessageExtBrokerInner:
        head, props_string = self._fields(conn, h, body, tc)
        return MessageExtBrokerInner(*head, 0, props_string)  # then prepared_transaction_offset, properties_string

    def _batch(self, conn: RemotingConnection, h: SendMessageRequestHeader, body: bytes, tc: TopicConfig
               ) -> MessageExtBatch:
        """The batch, whose properties string the store appends to each of its messages; without the
        batch's own UNIQ_KEY (5.x clients give a batch one), which would otherwise stand last in every
        message's properties and give them all one message id."""
        head, props_string = self._fields(conn, h, body, tc)
        uniq = head[3].get(P.UNIQ_KEY)
        if uniq is not None:
            props_string = P.drop_property(props_string, P.UNIQ_KEY, uniq)
        return MessageExtBatch(*head, properties_string=props_string)

    # ------------------------------------------------------------------ processors

    def send_message(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand | Awaitable:
        busy = self._busy(req)
        if busy is not None:
            return busy
        return self.send_checked(conn, req)

    def send_checked(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand | Awaitable:
        """send_message once fast failure has taken the send: what the compiled SEND_MESSAGE_V2 hands on."""
        h = self._header(req)
        tc = self._check(conn, req, h)
        if isinstance(tc, RemotingCommand):
            return tc
        body = bytes(req.body or b"")
        msg = self._inner(conn, h, body, tc)
        err = self._retry_or_dlq(req, h, msg)
        if err is not None:
            return err
        queue_id = msg.queue_id
        if msg.properties.get(P.TRAN_MSG) == "true":
            if self.c.config.reject_transaction_message:
                return req.response(ResponseCode.NO_PERMISSION,
                                    f"the broker[{self.c.config.broker_ip1}] sending transaction message is forbidden")
            # answered as Apache does: the producer's queue id, the half queue's offset, stats of the half topic
            # and, as Apache, the message's UNIQ_KEY as transactionId (a 5.x proxy ends the transaction by it)
            return self._finish(conn, req, T.RMQ_SYS_TRANS_HALF_TOPIC, self.c.transactions.put_half(msg), queue_id,
                                msg.properties.get(P.UNIQ_KEY))
        refused = handle_schedule(self.c, msg)  # timer messages (RIP-43), or a delay level
        if refused is not None:
            return req.response(*refused)
        return self._finish(conn, req, h.topic, self.c.store.put_message_inline(msg), queue_id)


    def send_batch(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand | Awaitable:
        busy = self._busy(req)
        if busy is not None:
            return busy
        h = self._header(req)
        tc = self._check(conn, req, h)
        if isinstance(tc, RemotingCommand):
            return tc
        if T.is_retry_topic(h.topic):
            return req.response(ResponseCode.MESSAGE_ILLEGAL,
                                f"batch message is not supported for retry topic {h.topic}")
        if not req.body:
            return req.response(ResponseCode.MESSAGE_ILLEGAL, "the batch body is empty")
        batch = self._batch(conn, h, bytes(req.body), tc)
        put = self.c.store.put_messages_inline(batch, defer_dispatch=conn.last_of_read)
        return self._finish(conn, req, h.topic, put, batch.queue_id)

    def _finish(self, conn: RemotingConnection, req: RemotingCommand, topic: str,
                put: PutMessageResult | Awaitable[PutMessageResult], queue_id: int,
                transaction_id: str | None = None) -> RemotingCommand | Awaitable:
        """Answer inline when the put completes without waiting (ASYNC_FLUSH, no slave wait) and no topic
        change is being written: no coroutine or task per message. A put that waits is answered later (_later):
        from a callback (a SYNC_MASTER's wait for its slave), or as a task (group commit, or a send while a topic
        it may have auto-created is written, processors/durable.py)."""
        if isinstance(put, PutMessageResult) and self.c.topics.unwritten is None:
            return self._response(req, topic, put, queue_id, transaction_id)
        return self._later(conn, req, topic, put, queue_id, transaction_id)

    def _later(self, conn: RemotingConnection, req: RemotingCommand, topic: str,
               put: PutMessageResult | Awaitable[PutMessageResult], queue_id: int,
               transaction_id: str | None) -> Awaitable[RemotingCommand | None]:
        """The answer of a put that waits. A put the store answers by a future (a SYNC_MASTER's wait for its
        slave) is answered by a callback on it, with no task or coroutine per send; the rest as a coroutine."""
        if isinstance(put, asyncio.Future) and self.c.topics.unwritten is None:
            answer: asyncio.Future[RemotingCommand | None] = put.get_loop().create_future()
            put.add_done_callback(functools.partial(self._answer, answer, conn, req, topic, queue_id, transaction_id))
            return answer
        return self._awaited(req, topic, put, queue_id, transaction_id)

    def _answer(self, answer: asyncio.Future[RemotingCommand | None], conn: RemotingConnection, req: RemotingCommand,
                topic: str, queue_id: int, transaction_id: str | None, put: asyncio.Future[PutMessageResult]) -> None:
        """Settle ``answer`` from the put: the common SUCCESS written here as the compiled send writes it (the
        frame without a RemotingCommand; None tells the server it is answered), any other as a response."""
        if put.cancelled():
            answer.cancel()
            return
        if (exc := put.exception()) is not None:
            answer.set_exception(exc)
            return
        result = put.result()
        try:
            if (_answer_frame is not None and (append := _plain(result, transaction_id)) is not None
                    and req.serialize_type is SerializeType.JSON and not req.flag & FLAG_ONEWAY
                    and (frame := _answer_frame(req.opaque, append.msg_id, queue_id, append.logics_offset))):
                self.c.stats.on_put(topic, append.msg_num, append.wrote_bytes)
                with contextlib.suppress(RemotingConnectionClosed):  # the producer left: nobody to tell
                    conn.send_frame(frame)
                answer.set_result(None)
            else:
                answer.set_result(self._response(req, topic, result, queue_id, transaction_id))
        except Exception as exc:  # noqa: BLE001 - the server answers it as any processor failure
            answer.set_exception(exc)

    async def _awaited(self, req: RemotingCommand, topic: str, put: PutMessageResult | Awaitable[PutMessageResult],
                       queue_id: int, transaction_id: str | None) -> RemotingCommand:
        result = put if isinstance(put, PutMessageResult) else await put
        await self.c.topics.until_written()
        return self._response(req, topic, result, queue_id, transaction_id)

    def _response(self, req: RemotingCommand, topic: str, result: Any, queue_id: int,
                  transaction_id: str | None = None) -> RemotingCommand:
        if (append := _plain(result, transaction_id)) is not None:
            # the common answer, without the status table (an Enum's .name is a descriptor call per send)
            self.c.stats.on_put(topic, append.msg_num, append.wrote_bytes)
            return req.response(ResponseCode.SUCCESS, None, {
                "msgId": append.msg_id, "queueId": str(queue_id), "queueOffset": str(append.logics_offset)})
        name = result.status.name
        code, remark = _PUT_STATUS.get(name, (ResponseCode.SYSTEM_ERROR, name))
        if name not in STORED or result.append is None:
            return req.response(code, remark)
        append = result.append
        self.c.stats.on_put(topic, append.msg_num, append.wrote_bytes)
        msg_id = ",".join(append.msg_ids) if len(append.phys_offsets) > 1 else append.msg_id
        ext = {"msgId": msg_id, "queueId": str(queue_id), "queueOffset": str(append.logics_offset)}
        if transaction_id is not None:
            ext["transactionId"] = transaction_id
        return req.response(code, remark, ext)


def _plain(result: PutMessageResult, transaction_id: str | None) -> AppendMessageResult | None:
    """The append of a put answered the common way (PUT_OK of one message, no transaction id), else None."""
    append = result.append
    if transaction_id is None and result.status is PutMessageStatus.PUT_OK and append is not None \
            and not append.phys_offsets:
        return append
    return None


def register(server: RemotingServer, controller: BrokerContext) -> SendProcessor:
    proc = SendProcessor(controller)
    server.register(RequestCode.SEND_MESSAGE, proc.send_message)
    server.register(RequestCode.SEND_MESSAGE_V2, proc.send_v2)
    server.register(RequestCode.SEND_BATCH_MESSAGE, proc.send_batch)
    return proc
