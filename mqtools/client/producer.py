"""Producer: sync, async, oneway, ordered (queue selector) and batch sends.

The sync send loop follows RocketMQ's sendDefaultImpl: up to 1 + retry_times attempts, all
inside one `send_timeout` budget (none starts once it is spent); after a failure the next
attempt avoids the broker that failed, on the route as re-read meanwhile (a master elected at a new address
is in it) or, when the name server takes longer than half the budget left, on the route held (read again at the
instance's next tick; one the name servers no longer know is kept, ClientInstance.route); a route not held yet is
read within the budget left (Apache's read waits its 3 s mqClientApiTimeout, whatever the budget); a
stored-but-not-OK status (FLUSH_*_TIMEOUT,
SLAVE_NOT_AVAILABLE) is retried on another broker only when
`retry_another_broker_when_not_store_ok` is set.

One deliberate difference: RocketMQ lets each attempt wait for everything left of the
budget, so a stalled broker (SIGSTOP, a full GC) eats the whole budget on the first attempt
and no retry ever happens. Here an attempt waits at most its share of what is left (left /
attempts remaining), so a stall leaves time to move to another broker within the budget.
The price: an attempt that timed out may still have been stored (a hung broker stores it when
it resumes; a SYNC_MASTER whose slave is hung stores it and answers only after syncFlushTimeout),
so a stall can leave a copy on the broker that timed out besides the one acknowledged on
another. That is at-least-once, as the per-attempt request timeout of RocketMQ's 5.x clients
also gives. A send whose attempts all failed, the last without an answer, raises
SendUnansweredError (exit 3, as one attempt's timeout), naming the brokers where a copy may be.

With `auto_batch` (off by default, as in RocketMQ) async sends are gathered into batches by
mqtools.client.batch_accumulator; sends with a chosen queue or selector (ordered sends), delayed,
retry-topic and compressed messages bypass it.

With `trace` (off by default, as in RocketMQ) every stored message, alone or in a batch, gets a Pub
record in the trace topic (mqtools.client.trace).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
import zlib
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Self

from mqtools.client.batch_accumulator import AutoBatcher, BatchAccumulator
from mqtools.client.errors import (
    MQBrokerError,
    MQClientError,
    ProducerShutDownError,
    RequestTimeoutError,
    SendAbandonedError,
    may_have_applied,
    send_failed,
)
from mqtools.client.fault import MQFaultStrategy, QueueRotation
from mqtools.client.instance import ClientInstance
from mqtools.client.lifecycle import Lifecycle
from mqtools.client.route import TopicRoute
from mqtools.client.types import SEND_STATUS_BY_CODE, SendResult
from mqtools.common import properties as P
from mqtools.common import sysflag
from mqtools.common.codec import MAX_PROPERTIES_LEN, encode_batch
from mqtools.common.ids import UniqueKeyGenerator
from mqtools.common.message import Message
from mqtools.common.security import ClientSecurity
from mqtools.common.topics import AUTO_CREATE_TOPIC_KEY, RMQ_SYS_TRACE_TOPIC, is_retry_topic
from mqtools.common.validation import ValidationError, check_topic_for_send
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import send_v2_fields

if TYPE_CHECKING:
    from mqtools.client.trace import TraceDispatcher

QueueSelector = Callable[[list[MessageQueue], Message, Any], MessageQueue]

#: Broker answers after which the loop tries again (RocketMQ's retryResponseCodes).
RETRY_CODES = frozenset({
    ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SYSTEM_ERROR,
    ResponseCode.NO_PERMISSION, ResponseCode.NO_BUYER_ID, ResponseCode.NOT_IN_CURRENT_UNIT,
    ResponseCode.SYSTEM_BUSY,
})

#: A producer sends to few topics: each name is checked once, not per message (a refusal is not cached).
_check_topic = functools.lru_cache(maxsize=1024)(check_topic_for_send)


def select_by_hash(queues: list[MessageQueue], _msg: Message, arg: Any) -> MessageQueue:
    """Sharding-key selector: the same key always lands on the same queue (ordered sends)."""
    return queues[zlib.crc32(str(arg).encode()) % len(queues)]


class Producer(Lifecycle):
    """`async with Producer("group", namesrv="127.0.0.1:9876") as p: await p.send(msg)`."""

    def __init__(
        self,
        group: str,
        *,
        namesrv: str | list[str] | None = None,
        instance: ClientInstance | None = None,
        security: ClientSecurity | None = None,
        send_timeout: float = 3.0,
        retry_times: int = 2,
        retry_times_async: int = 2,
        retry_another_broker_when_not_store_ok: bool = False,
        max_message_size: int = 4 * 1024 * 1024,
        compress_over: int = 4096,
        default_topic_queue_nums: int = 4,
        latency_fault_enabled: bool = False,
        auto_batch: bool = False,
        batch_max_delay_ms: float = 10,
        batch_max_bytes: int = 32 * 1024,
        total_batch_max_bytes: int = 32 * 1024 * 1024,
        clock: Callable[[], float] = time.monotonic,
        trace: bool = False,
        trace_topic: str = RMQ_SYS_TRACE_TOPIC,
    ) -> None:
        if instance is None and namesrv is None:
            raise MQClientError("a Producer needs namesrv= or instance=")
        self.group = group
        self.instance = instance or ClientInstance(namesrv, security=security)  # type: ignore[arg-type]
        self.send_timeout = send_timeout
        self.retry_times = retry_times
        self.retry_times_async = retry_times_async
        self.retry_another_broker_when_not_store_ok = retry_another_broker_when_not_store_ok
        self.max_message_size = max_message_size
        self.compress_over = compress_over
        self.default_topic_queue_nums = default_topic_queue_nums
        self._default_nums = str(default_topic_queue_nums)
        self.fault = MQFaultStrategy(enabled=latency_fault_enabled, clock=clock)
        self._clock = clock
        self._keys = UniqueKeyGenerator(self.instance.ip)
        self._rotations: dict[str, QueueRotation] = {}
        self._pending: set[asyncio.Task] = set()
        #: True while shutdown cancels the async sends it stopped waiting for: they fail with SendAbandonedError.
        self._abandoning = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._batcher: AutoBatcher | None = None
        #: With trace=True: the dispatcher of this producer's Pub records (mqtools.client.trace).
        self.tracer: TraceDispatcher | None = None
        if trace:
            from mqtools.client.trace import TraceDispatcher

            self.tracer = TraceDispatcher(self.instance, group, "PRODUCE", trace_topic)
        if auto_batch:
            accumulator = BatchAccumulator(batch_max_delay_ms / 1000, batch_max_bytes, total_batch_max_bytes)
            self._batcher = AutoBatcher(accumulator, self._send_gathered, clock, self._pending, self._running_loop)

    async def start(self) -> Self:
        self.instance.producer_groups.add(self.group)
        await self.instance.start()
        if self.tracer is not None:
            await self.tracer.start()
        return self

    async def shutdown(self) -> None:
        """Flush what auto-batching holds, wait (up to send_timeout) for every async send, then cancel those still
        running: each fails with SendAbandonedError (it may have been stored); the closed client connects no more."""
        if self._batcher is not None:
            self._batcher.close()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.send_timeout
        while self._pending and (left := deadline - loop.time()) > 0:
            await asyncio.wait(set(self._pending), timeout=left)  # a batch's end may launch the next
        await self._abandon_pending()
        if self.tracer is not None:
            await self.tracer.shutdown()
        self.instance.producer_groups.discard(self.group)
        await self.instance.unregister(producer_group=self.group)
        await self.instance.shutdown()

    async def _abandon_pending(self) -> None:
        """Cancel the async sends still running when shutdown stops waiting, each future failing with a client error:
        left running, their retries reconnected through the closed client and stored messages after shutdown
        returned (Apache's MQClientInstance.shutdown closes its remoting client under them)."""
        if self._batcher is not None:
            self._batcher.abandon(ProducerShutDownError("the producer was shut down before this send went out: "
                                                        "nothing was sent"))
        await asyncio.sleep(0)  # a task cancelled before its first step would skip its handling: each starts first
        pending = set(self._pending)
        if not pending:
            return
        self._abandoning = True
        try:
            for task in pending:
                task.cancel()
            await asyncio.wait(pending)
        finally:
            self._abandoning = False

    async def _abandonable(self, send: Awaitable[SendResult], topic: str) -> SendResult:
        """`send` in a task shutdown may cancel (_abandon_pending): that cancellation fails it with
        SendAbandonedError, which says the message may have been stored, instead of a bare CancelledError."""
        try:
            return await send
        except asyncio.CancelledError:
            if not self._abandoning:
                raise
            raise SendAbandonedError(f"the producer was shut down while the send to {topic} was still waiting on "
                                     f"a broker (shutdown waits send_timeout, {self.send_timeout:.3f}s): it may "
                                     f"have been stored") from None

    # public sends ---------------------------------------------------------------------

    async def send(self, msg: Message, *, queue: MessageQueue | None = None, selector: QueueSelector | None = None,
                   arg: Any = None, timeout: float | None = None) -> SendResult:
        """Sync send; `queue` pins the queue, `selector(queues, msg, arg)` picks one (ordered sends)."""
        body, flag = self._prepare(msg)
        budget = timeout if timeout is not None else self.send_timeout
        if queue is not None or selector is not None:
            return await self._send_to_chosen(msg, body, flag, queue, selector, arg, budget)
        return await self._send_with_retries(msg, body, flag, budget, 1 + self.retry_times)

    def send_async(self, msg: Message, callback: Callable[[SendResult | None, BaseException | None], None]
                   | None = None, *, timeout: float | None = None) -> asyncio.Future[SendResult]:
        """Start a send and return its future; `callback(result, error)` runs when it ends."""
        body, flag = self._prepare(msg)
        budget = timeout if timeout is not None else self.send_timeout
        if self._batcher is not None and self._batchable(msg, flag):
            future = self._batcher.submit(msg, budget)
            if callback is not None:
                future.add_done_callback(lambda f: callback(*_outcome(f)))
            return future
        task = self._running_loop().create_task(self._abandonable(
            self._send_with_retries(msg, body, flag, budget, 1 + self.retry_times_async), msg.topic))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        if callback is not None:
            task.add_done_callback(lambda t: callback(*_outcome(t)))
        return task

    async def send_oneway(self, msg: Message) -> None:
        """Fire and forget: one attempt, no answer awaited."""
        body, flag = self._prepare(msg)
        route = await self.instance.publish_route(msg.topic, self.default_topic_queue_nums)
        mq = self.fault.select_one_queue(self._rotation(route), None)
        cmd = self._command(msg, body, flag, mq)
        await self.instance.invoke_oneway(self._master(mq), cmd)

    async def send_batch(self, msgs: Sequence[Message], *, queue: MessageQueue | None = None,
                         timeout: float | None = None) -> SendResult:
        """One SEND_BATCH_MESSAGE: all messages to one queue of one topic."""
        batch = self._prepare_batch(msgs)
        budget = timeout if timeout is not None else self.send_timeout
        started = time.time()
        if queue is not None:
            result = await self._send_to_chosen(batch, batch.body, 0, queue, None, None, budget, batch=True)
        else:
            result = await self._send_with_retries(batch, batch.body, 0, budget, 1 + self.retry_times, batch=True)
        self._trace_batch(msgs, result, started)
        return result

    async def send_half(self, msg: Message, *, timeout: float | None = None) -> SendResult:
        """A transaction's half message (TRAN_MSG, PGROUP and the prepared flag; mqtools.client.transaction):
        stored where no consumer sees it until the transaction ends. A delay is dropped, as the Java client
        drops it: a transactional message is not delayed."""
        msg.properties.pop(P.DELAY, None)
        msg.properties[P.TRAN_MSG] = "true"
        msg.properties[P.PGROUP] = self.group
        body, flag = self._prepare(msg)
        budget = timeout if timeout is not None else self.send_timeout
        return await self._send_with_retries(msg, body, flag | sysflag.TRANSACTION_PREPARED_TYPE, budget,
                                             1 + self.retry_times)

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        """The loop this producer runs on, taken once: each asyncio.get_running_loop() (and so each
        asyncio.ensure_future or create_task) makes a getpid() system call, CPython's fork check; once
        per message, that was about 8% of auto-batching's client CPU."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        return loop

    # preparation ----------------------------------------------------------------------

    def _prepare(self, msg: Message) -> tuple[bytes, int]:
        try:
            _check_topic(msg.topic)
        except ValidationError as exc:
            raise MQClientError(str(exc)) from None
        body = bytes(msg.body)
        if not body:
            raise MQClientError("the message body is empty")
        if len(body) > self.max_message_size:
            raise MQClientError(f"the message body size {len(body)} exceeds the limit {self.max_message_size}")
        msg.properties.setdefault(P.UNIQ_KEY, self._keys.next())
        msg.properties.setdefault(P.WAIT, "true")
        if len(body) > self.compress_over:
            return zlib.compress(body, 5), sysflag.COMPRESSED_FLAG
        return body, 0

    def _prepare_batch(self, msgs: Sequence[Message]) -> Message:
        if not msgs:
            raise MQClientError("a batch needs at least one message")
        topics = {m.topic for m in msgs}
        if len(topics) != 1:
            raise MQClientError("all messages of a batch must have the same topic")
        for m in msgs:
            if P.DELAY in m.properties:
                raise MQClientError("delayed messages are not supported in a batch")
            self._prepare(m)
        return self._batch_message(msgs)

    def _batch_message(self, msgs: Sequence[Message]) -> Message:
        try:
            body = encode_batch(list(msgs))
        except ValueError as exc:  # a message's properties too long for a batch entry
            raise MQClientError(str(exc)) from None
        if len(body) > self.max_message_size:
            raise MQClientError(f"the batch size {len(body)} exceeds the limit {self.max_message_size}")
        batch = Message(topic=msgs[0].topic, body=body)
        batch.properties[P.UNIQ_KEY] = ",".join(m.properties[P.UNIQ_KEY] for m in msgs)
        return batch

    @staticmethod
    def _batchable(msg: Message, flag: int) -> bool:
        """What a batch cannot carry as it is sent alone: a delay (a level or a timer's delivery time, as the
        Java producer's canBatch), a retry topic, a compressed body, properties longer than a batch entry's 2-byte
        length holds (alone, a broker refuses the message with MESSAGE_ILLEGAL; in a batch, it failed the whole)."""
        return (not flag and P.DELAY not in msg.properties and not msg.is_timed and not is_retry_topic(msg.topic)
                and _properties_fit(msg.properties))

    async def _send_gathered(self, msgs: list[Message], budget: float) -> SendResult:
        """Auto-batching's way out: one batch through the async send loop."""
        batch = self._batch_message(msgs)
        started = time.time()
        result = await self._abandonable(
            self._send_with_retries(batch, batch.body, 0, budget, 1 + self.retry_times_async, batch=True), batch.topic)
        self._trace_batch(msgs, result, started)
        return result

    def _trace_batch(self, msgs: Sequence[Message], result: SendResult, started: float) -> None:
        """A Pub record per message of a stored batch, each with its own ids and the batch's time."""
        if self.tracer is None:
            return
        addr = self.instance.broker_addr(result.queue.broker_name, any_node=False) or ""
        offset_ids = result.offset_msg_id.split(",")
        cost = int((time.time() - started) * 1000)
        for i, m in enumerate(msgs):
            one = SendResult(result.status, m.properties.get(P.UNIQ_KEY, ""),
                             offset_ids[i] if i < len(offset_ids) else "", result.queue, result.queue_offset + i)
            self.tracer.pub(m, one, addr, int(started * 1000), cost)

    def _rotation(self, route: TopicRoute) -> QueueRotation:
        rotation = self._rotations.get(route.topic)
        if rotation is None or rotation.queues != route.publish:
            rotation = QueueRotation(route.publish)
            self._rotations[route.topic] = rotation
        return rotation

    def _master(self, mq: MessageQueue) -> str:
        addr = self.instance.broker_addr(mq.broker_name, any_node=False)
        if addr is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
        return addr

    def _command(self, msg: Message, body: bytes, flag: int, mq: MessageQueue, *, batch: bool = False
                 ) -> RemotingCommand:
        """SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE with the V2 header's short fields; to a retry topic, the message's
        reconsume count and limit move from its properties to the header, where the broker judges them (past the
        limit: the DLQ), as Apache's sendKernelImpl moves them."""
        props = {k: v for k, v in msg.properties.items() if not (batch and k == P.UNIQ_KEY)}
        times, max_times = 0, None
        if is_retry_topic(msg.topic):
            times = _count(props.pop(P.RECONSUME_TIME, None)) or 0
            max_times = _count(props.pop(P.MAX_RECONSUME_TIMES, None))
        ext = send_v2_fields(self.group, msg.topic, AUTO_CREATE_TOPIC_KEY, self._default_nums, mq.queue_id, flag,
                             int(time.time() * 1000), msg.flag, P.properties_to_string(props),
                             reconsume_times=times, max_reconsume_times=max_times, batch=batch)
        code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
        return RemotingCommand.request(code, ext, body)

    # the send loop --------------------------------------------------------------------

    async def _send_with_retries(self, msg: Message, body: bytes, flag: int, budget: float, attempts: int, *,
                                 batch: bool = False) -> SendResult:
        begin = self._clock()
        last_broker: str | None = None
        last_error: MQClientError | None = None
        maybe_stored: list[str] = []  # brokers an attempt reached without an answer: a copy may be there
        result: SendResult | None = None
        for attempt in range(attempts):
            left = budget - (self._clock() - begin)
            if left <= 0:
                break
            share = left / (attempts - attempt)
            route = self.instance.routes.get(msg.topic)
            if route is None or not route.publish:  # its reads wait no longer than the budget left
                route = await self.instance.publish_route(msg.topic, self.default_topic_queue_nums,
                                                          min(self.instance.timeout, left))
            mq = self.fault.select_one_queue(self._rotation(route), last_broker)
            last_broker = mq.broker_name
            started = self._clock()
            try:
                result = await self._send_once(msg, body, flag, mq, share, batch=batch)
            except MQClientError as exc:
                self.fault.update_fault_item(mq.broker_name, (self._clock() - started) * 1000, isolation=True)
                if isinstance(exc, MQBrokerError) and exc.code not in RETRY_CODES:
                    raise
                if may_have_applied(exc) and mq.broker_name not in maybe_stored:
                    maybe_stored.append(mq.broker_name)
                last_error = exc
                await self._refresh_after_failure(msg.topic, budget - (self._clock() - begin))
                continue
            self.fault.update_fault_item(mq.broker_name, (self._clock() - started) * 1000, isolation=False)
            if result.status.value != "SEND_OK":
                self.instance.refresh_soon(msg.topic)
                if self.retry_another_broker_when_not_store_ok:
                    continue
            return result
        if result is not None:
            return result
        raise send_failed(msg.topic, self._clock() - begin, budget, last_error, maybe_stored) from last_error

    async def _refresh_after_failure(self, topic: str, left: float) -> None:
        """Re-read the route before what comes next (a master elected at a new address is in it), waiting at most
        half of `left`: a hung name server must not eat the retry's time, which then goes to the route held (and
        the route is read again at the instance's next tick)."""
        wait = min(self.instance.timeout, left / 2)
        if wait > 0:
            with contextlib.suppress(MQClientError):
                await self.instance.route(topic, refresh=True, timeout=wait)
                return
        self.instance.refresh_soon(topic)

    async def _send_to_chosen(self, msg: Message, body: bytes, flag: int, queue: MessageQueue | None,
                              selector: QueueSelector | None, arg: Any, budget: float, *, batch: bool = False
                              ) -> SendResult:
        """Queue given or selected: one attempt, since another queue would break ordering. The route's read and
        the send share the budget, as Apache's sendSelectImpl."""
        begin = self._clock()
        route = await self.instance.publish_route(msg.topic, self.default_topic_queue_nums,
                                                  min(self.instance.timeout, budget))
        if queue is None:
            if not route.publish:
                raise MQClientError(f"No writable queue for topic {msg.topic}")
            queue = selector(list(route.publish), msg, arg)  # type: ignore[misc]
        left = budget - (self._clock() - begin)
        if left <= 0:
            raise RequestTimeoutError(f"send to {msg.topic} failed after {self._clock() - begin:.3f}s (budget "
                                      f"{budget:.3f}s): the route's read took it all")
        try:
            result = await self._send_once(msg, body, flag, queue, left, batch=batch)
        except MQClientError:
            # the route shows a dead master's group without it once the name servers dropped it, and the
            # instance then re-reads it until a new master (controller mode) is in it
            await self._refresh_after_failure(msg.topic, budget - (self._clock() - begin))
            raise
        if result.status.value != "SEND_OK":
            self.instance.refresh_soon(msg.topic)
        return result

    async def _send_once(self, msg: Message, body: bytes, flag: int, mq: MessageQueue, timeout: float, *,
                         batch: bool = False) -> SendResult:
        cmd = self._command(msg, body, flag, mq, batch=batch)
        addr = self._master(mq)
        started = time.time()
        resp = await self.instance.invoke(addr, cmd, timeout, ok=SEND_STATUS_BY_CODE)
        status = SEND_STATUS_BY_CODE[resp.code]  # type: ignore[index]
        ext = resp.ext_fields
        queue = MessageQueue(mq.topic, mq.broker_name, int(ext.get("queueId", mq.queue_id)))
        result = SendResult(status, msg.properties.get(P.UNIQ_KEY, ""), ext.get("msgId", ""), queue,
                            int(ext.get("queueOffset", -1)))
        if self.tracer is not None and not batch:
            self.tracer.pub(msg, result, addr, int(started * 1000), int((time.time() - started) * 1000))
        return result


def _properties_fit(props: dict[str, str]) -> bool:
    """Whether the properties fit a batch entry's 2-byte length; encoded only when the characters alone could not
    (4 bytes a character at most), so an auto-batched send's usual few short properties cost a sum, not an encode."""
    chars = sum(len(k) + len(v) + 2 for k, v in props.items())
    return chars * 4 <= MAX_PROPERTIES_LEN or len(P.properties_to_string(props).encode()) <= MAX_PROPERTIES_LEN


def _outcome(task: asyncio.Future) -> tuple[SendResult | None, BaseException | None]:
    if task.cancelled():
        return None, asyncio.CancelledError()
    exc = task.exception()
    return (None, exc) if exc else (task.result(), None)


def _count(text: str | None) -> int | None:
    """A reconsume count a message property carries; None when absent or not a number."""
    digits = (text or "").strip()
    return int(digits) if digits.isascii() and digits.isdigit() else None
