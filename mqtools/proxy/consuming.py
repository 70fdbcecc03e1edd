"""The proxy's consuming methods (Apache's ReceiveMessageActivity, AckMessageActivity,
ChangeInvisibleDurationActivity, ForwardMessageToDLQActivity) over the brokers' POP, as a part of
MessagingService: a receive's long polling time, the POP and the filtering of what it took, a receive whose
client left, acks and changes of invisible time with the newest handle an auto renewal holds."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
from mqtools.client.errors import MQClientError
from mqtools.common import properties as P
from mqtools.common.message import MessageExt
from mqtools.proxy import route as routes
from mqtools.proxy.call import Call, now_ms
from mqtools.proxy.clients import Clients
from mqtools.proxy.config import ProxyConfig
from mqtools.proxy.convert import duration_ms, to_grpc, validate_group, validate_topic
from mqtools.proxy.errors import Code, ProxyError, code_for_response, ok, status, status_of
from mqtools.proxy.metadata import Metadata
from mqtools.proxy.popping import FOUND, NO_NEW_MSG, POLLING_FULL, Popper, PopResult, tag_matched, tags_of
from mqtools.proxy.receipt import ReceiptHandle
from mqtools.proxy.renewal import Renewals
from mqtools.remoting.bodies import TopicRouteData

#: ReceiveMessageResponseStreamWriter.NACK_INVISIBLE_TIME: a popped message that could not be written is made
#: visible again this soon.
NACK_INVISIBLE_MS = 1_000


class ConsumingActivities:
    """MessagingService's consuming methods; the service gives them its config, clients, group policies, POP
    requests, held handles, route lookups and background tasks."""

    config: ProxyConfig
    clients: Clients
    metadata: Metadata
    popper: Popper
    renewals: Renewals
    _receiving: int
    #: the turn of the next receive that names no broker it can be served by
    _receive_turn: Iterator[int]

    _route: Callable[[str], Awaitable[TopicRouteData]]
    _broker_addrs: Callable[[TopicRouteData], list[str]]
    _spawn: Callable[[Awaitable[None]], None]

    # ---------------------------------------------------------------- consuming

    def _poll_ms(self, req: spb.ReceiveMessageRequest, call: Call, settings: pb.Settings) -> int:
        """ReceiveMessageActivity's polling time: the request's, else what the deadline leaves past half the
        request timeout; within [min, max]; ILLEGAL_POLLING_TIME when the deadline leaves less than min."""
        left = int(call.time_left * 1000) if call.time_left is not None else 30_000
        lo = self.config.grpc_client_consumer_min_long_polling_timeout_millis
        hi = self.config.grpc_client_consumer_max_long_polling_timeout_millis
        if req.HasField("long_polling_timeout"):
            poll = duration_ms(req.long_polling_timeout)
        else:
            poll = left - duration_ms(settings.request_timeout) // 2
        poll = min(max(poll, lo), hi)
        if poll > left:
            if left < lo:
                raise ProxyError(Code.ILLEGAL_POLLING_TIME, "The deadline time remaining is not enough for polling, "
                                 "please check network condition")
            poll = left
        return poll

    async def ReceiveMessage(self, req: spb.ReceiveMessageRequest, call: Call
                             ) -> AsyncIterator[spb.ReceiveMessageResponse]:
        try:
            result, topic, group = await self._receive_held(req, call)
        except (ProxyError, MQClientError) as exc:
            yield spb.ReceiveMessageResponse(status=status_of(exc))
        else:
            if result.status == FOUND and result.messages:
                written = 0
                try:  # the client may leave at any write, the status's too: what it did not get is nacked
                    yield spb.ReceiveMessageResponse(status=ok())
                    for msg in result.messages:
                        yield spb.ReceiveMessageResponse(message=to_grpc(msg, now_ms=now_ms()))
                        written += 1
                finally:
                    if written < len(result.messages):  # the client left: make the rest visible again soon
                        self._spawn(self._nack(result.messages[written:], group, topic, call.client_id))
            elif result.status == FOUND:
                yield spb.ReceiveMessageResponse(status=status(Code.MESSAGE_NOT_FOUND, "no match message"))
            elif result.status == POLLING_FULL:
                yield spb.ReceiveMessageResponse(status=status(Code.TOO_MANY_REQUESTS, "polling full"))
            else:
                yield spb.ReceiveMessageResponse(status=status(Code.MESSAGE_NOT_FOUND, "no new message"))
        response = spb.ReceiveMessageResponse()
        response.delivery_timestamp.FromMilliseconds(now_ms())
        yield response

    async def _receive_held(self, req: spb.ReceiveMessageRequest, call: Call) -> tuple[PopResult, str, str]:
        """`_receive`, which goes on when the client leaves while the broker holds its POP: no request takes a
        POP back, so the broker still answers it, and what it took is made visible again soon, as Apache's
        proxy does when it cannot write a popped message. Cancelled with the call instead, the answer would be
        dropped and its messages stay invisible for the whole invisible duration, and the broker, which wakes
        one waiting POP of a group per arrival, may give the next arrival to that same abandoned POP."""
        gone = asyncio.Event()
        receiving = asyncio.ensure_future(self._receive(req, call, gone))
        try:
            return await asyncio.shield(receiving)
        except asyncio.CancelledError:
            gone.set()
            receiving.add_done_callback(lambda done: self._release_abandoned(done, call.client_id))
            raise

    def _release_abandoned(self, done: asyncio.Future[tuple[PopResult, str, str]], client_id: str) -> None:
        if done.cancelled() or done.exception() is not None:
            return  # nothing was taken (the proxy is stopping, or the POP failed)
        result, topic, group = done.result()
        if result.status == FOUND and result.messages:
            self._spawn(self._nack(result.messages, group, topic, client_id))

    async def _receive(self, req: spb.ReceiveMessageRequest, call: Call,
                       gone: asyncio.Event | None = None) -> tuple[PopResult, str, str]:
        """The receive's POP, unless the client left (`gone`) before it was sent: a POP for nobody would take
        messages away for a second and count a delivery attempt against each."""
        client = self.clients.touch(call.client_id, language=call.language, version=call.version, peer=call.peer)
        settings = client.settings or pb.Settings()
        if self._receiving >= self.config.max_concurrent_receive:
            raise ProxyError(Code.TOO_MANY_REQUESTS, "too many concurrent receive calls on this proxy")
        poll_ms = self._poll_ms(req, call, settings)
        topic = validate_topic(req.message_queue.topic.name)
        group = validate_group(req.group.name)
        invisible_ms = self.renewals.invisible_ms if req.auto_renew else duration_ms(req.invisible_duration)
        if not req.auto_renew:
            if invisible_ms < self.config.min_invisible_time_mills_for_recv:
                raise ProxyError(Code.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is too small. min is "
                                 f"{self.config.min_invisible_time_mills_for_recv}")
            if 0 < self.config.max_invisible_time_mills < invisible_ms:
                raise ProxyError(Code.ILLEGAL_INVISIBLE_TIME,
                                 f"the invisibleTime is too large. max is {self.config.max_invisible_time_mills}")
        expr = req.filter_expression
        exp_type = "SQL92" if expr.type == pb.SQL else "TAG"
        expression = expr.expression or "*"
        data = await self._route(topic)
        brokers = routes.readable_masters(data)
        broker = req.message_queue.broker.name
        if broker not in brokers:  # ReceiveMessageQueueSelector: the brokers in turn, as selectOne(true)
            if not brokers:
                raise ProxyError(Code.FORBIDDEN, "no readable queue on a broker with a master")
            broker = brokers[next(self._receive_turn) % len(brokers)]
        # the group's config decides, as in Apache's merged settings: 5.x clients report neither
        policy = await self.metadata.group_policy(group, self._broker_addrs(data))
        max_attempts = policy.retry_max_times + 1
        if gone is not None and gone.is_set():
            return PopResult(NO_NEW_MSG), topic, group
        self._receiving += 1
        try:
            left = call.time_left if call.time_left is not None else poll_ms / 1000 + 5
            result = await self.popper.pop(
                broker_name=broker, group=group, topic=topic, queue_id=-1,
                max_nums=req.batch_size or 32, invisible_ms=invisible_ms, poll_ms=poll_ms, exp_type=exp_type,
                exp=expression, fifo=policy.consume_message_orderly,
                attempt_id=req.attempt_id if req.HasField("attempt_id") else None, timeout_s=max(left, 1.0))
        finally:
            self._receiving -= 1
        if result.status == FOUND:
            tags = tags_of(expression) if exp_type == "TAG" else set()
            kept = []
            for msg in result.messages:
                handle = ReceiptHandle.decode(msg.properties["POP_CK"])
                if not tag_matched(tags, msg.tags):
                    with contextlib.suppress(MQClientError, ProxyError):
                        await self.popper.ack(handle, group, topic)
                elif msg.reconsume_times >= max_attempts:
                    with contextlib.suppress(MQClientError, ProxyError):
                        await self.popper.to_dead_letter(handle, group, topic, msg.properties.get(P.UNIQ_KEY, ""))
                else:
                    kept.append(msg)
                    if req.auto_renew:
                        self.renewals.add(call.client_id, group, topic, msg.properties.get(P.UNIQ_KEY, ""), handle)
            result.messages = kept
        return result, topic, group

    async def _nack(self, msgs: list[MessageExt], group: str, topic: str, client_id: str) -> None:
        """Make messages the client never got visible again in NACK_INVISIBLE_MS, and stop renewing them."""
        for msg in msgs:
            with contextlib.suppress(MQClientError, ProxyError):
                handle = await self.renewals.take(client_id, group, msg.properties.get(P.UNIQ_KEY, ""),
                                                  ReceiptHandle.decode(msg.properties["POP_CK"]))
                await self.popper.change_invisible(handle, group, topic, NACK_INVISIBLE_MS)

    async def _held(self, call: Call, group: str, message_id: str, text: str) -> ReceiptHandle:
        """The handle to act with: the newest the proxy renewed for this message, else the client's own."""
        return await self.renewals.take(call.client_id, group, message_id, ReceiptHandle.decode(text))

    async def AckMessage(self, req: spb.AckMessageRequest, call: Call) -> spb.AckMessageResponse:
        try:
            topic = validate_topic(req.topic.name)
            group = validate_group(req.group.name)
        except ProxyError as exc:
            return spb.AckMessageResponse(status=status_of(exc))

        async def one(entry: spb.AckMessageEntry) -> spb.AckMessageResultEntry:
            try:
                handle = await self._held(call, group, entry.message_id, entry.receipt_handle)
                await self.popper.ack(handle, group, topic)
                result = ok()
            except (ProxyError, MQClientError) as exc:
                result = status_of(exc)
            return spb.AckMessageResultEntry(message_id=entry.message_id, receipt_handle=entry.receipt_handle,
                                             status=result)

        entries = list(await asyncio.gather(*(one(e) for e in req.entries)))
        codes = {e.status.code for e in entries}
        if not codes:  # AckMessageActivity.setAckResponseStatus
            overall = status(Code.INTERNAL_SERVER_ERROR, "ack message result is empty")
        else:
            overall = status(Code.MULTIPLE_RESULTS) if len(codes) > 1 else status(codes.pop())
        return spb.AckMessageResponse(status=overall, entries=entries)

    async def ChangeInvisibleDuration(self, req: spb.ChangeInvisibleDurationRequest, call: Call
                                      ) -> spb.ChangeInvisibleDurationResponse:
        try:
            topic = validate_topic(req.topic.name)
            group = validate_group(req.group.name)
            invisible_ms = duration_ms(req.invisible_duration)
            if invisible_ms < 0 or 0 < self.config.max_invisible_time_mills < invisible_ms:
                raise ProxyError(Code.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is not in [0, "
                                 f"{self.config.max_invisible_time_mills}]")
            held = await self._held(call, group, req.message_id, req.receipt_handle)
            handle = await self.popper.change_invisible(held, group, topic, invisible_ms)
        except (ProxyError, MQClientError) as exc:
            return spb.ChangeInvisibleDurationResponse(status=status_of(exc))
        return spb.ChangeInvisibleDurationResponse(status=ok(), receipt_handle=handle)

    async def ForwardMessageToDeadLetterQueue(self, req: spb.ForwardMessageToDeadLetterQueueRequest, call: Call
                                              ) -> spb.ForwardMessageToDeadLetterQueueResponse:
        try:
            topic = validate_topic(req.topic.name)
            group = validate_group(req.group.name)
            held = await self._held(call, group, req.message_id, req.receipt_handle)
            code, remark = await self.popper.to_dead_letter(held, group, topic, req.message_id)
        except (ProxyError, MQClientError) as exc:
            return spb.ForwardMessageToDeadLetterQueueResponse(status=status_of(exc))
        return spb.ForwardMessageToDeadLetterQueueResponse(status=status(code_for_response(code), remark or str(code)))
