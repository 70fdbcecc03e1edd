"""Message trace for our clients (RocketMQ's AsyncTraceDispatcher and its send and consume hooks).

With `trace=True` a Producer records a Pub record per message it stored, a PushConsumer a SubBefore
record per message handed to its listener and a SubAfter record when the listener returns, and a
TransactionProducer an EndTransaction record per end. Records go to the trace topic in the
background: every 100 ms, or at 100 records, the dispatcher sends what it holds as one trace message
(at most 128,000 bytes, keyed by the traced ids and keys), through a producer of its own on the same
client instance. The send path only appends a record; a failed trace send is logged and dropped, as
the Java client drops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mqtools.client.types import ConsumeResult, SendResult, SendStatus, message_id
from mqtools.common import properties as P
from mqtools.common.loop import wait_event
from mqtools.common.message import Message, MessageExt
from mqtools.common.topics import RMQ_SYS_TRACE_TOPIC
from mqtools.common.trace_data import DEFAULT_REGION, MessageType, TraceRecord, TraceType, encode, trace_keys

if TYPE_CHECKING:
    from mqtools.client.instance import ClientInstance

log = logging.getLogger(__name__)

GROUP_NAME_PREFIX = "_INNER_TRACE_PRODUCER"
BATCH_RECORDS = 100
MAX_TRACE_BYTES = 128_000
FLUSH_INTERVAL = 0.1
#: ConsumeReturnType's ordinals, the SubAfter record's context code.
RETURN_SUCCESS, RETURN_EXCEPTION, RETURN_FAILED = 0, 2, 4
_dispatchers = itertools.count(1)


def _keys(msg: Message) -> str | None:
    return msg.properties.get(P.KEYS)


class TraceDispatcher:
    """Holds trace records and sends them, batched, to the trace topic."""

    def __init__(self, instance: ClientInstance, group: str, kind: str, trace_topic: str = RMQ_SYS_TRACE_TOPIC
                 ) -> None:
        from mqtools.client.producer import Producer

        self.topic = trace_topic
        self.group = group
        self.producer = Producer(f"{GROUP_NAME_PREFIX}-{group}-{kind}-{next(_dispatchers)}",
                                           instance=instance, send_timeout=5.0, max_message_size=MAX_TRACE_BYTES)
        self._records: list[TraceRecord] = []
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        await self.producer.start()
        self._wake = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"trace-{self.group}")

    async def shutdown(self) -> None:
        """Send what is held, then stop (the trace producer waits for its sends, up to 5 s)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._flush()
        await self.producer.shutdown()

    def add(self, record: TraceRecord) -> None:
        self._records.append(record)
        if len(self._records) >= BATCH_RECORDS and self._wake is not None:
            self._wake.set()

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            await wait_event(self._wake, FLUSH_INTERVAL)
            self._wake.clear()
            self._flush()

    def _flush(self) -> None:
        records, self._records = self._records, []
        chunk: list[TraceRecord] = []
        parts: list[str] = []
        size = 0
        for record in records:
            text = encode(record)
            if chunk and (size + len(text) > MAX_TRACE_BYTES or len(chunk) >= BATCH_RECORDS):
                self._send(chunk, parts)
                chunk, parts, size = [], [], 0
            chunk.append(record)
            parts.append(text)
            size += len(text)
        if chunk:
            self._send(chunk, parts)

    def _send(self, records: list[TraceRecord], parts: list[str]) -> None:
        msg = Message(self.topic, "".join(parts).encode(), properties={P.KEYS: " ".join(trace_keys(records))})
        try:
            self.producer.send_async(msg, self._sent)
        except Exception as exc:  # noqa: BLE001 - tracing must never break the traced client
            log.debug("trace send failed: %s", exc)

    @staticmethod
    def _sent(_result: SendResult | None, error: BaseException | None) -> None:
        if error is not None:
            log.debug("trace send failed: %s", error)

    # ------------------------------------------------------------------ records

    def pub(self, msg: Message, result: SendResult, broker_addr: str, started_ms: int, cost_ms: int) -> None:
        msg_type = MessageType.Normal_Msg
        if msg.properties.get(P.TRAN_MSG) == "true":
            msg_type = MessageType.Trans_Msg_Half
        elif P.DELAY in msg.properties:
            msg_type = MessageType.Delay_Msg
        self.add(TraceRecord(TraceType.Pub, result.msg_id, started_ms, DEFAULT_REGION, self.group, msg.topic,
                             msg.tags, _keys(msg), broker_addr, len(msg.body), cost_ms, int(msg_type),
                             result.offset_msg_id, result.status is SendStatus.SEND_OK))

    def end_transaction(self, msg: Message, msg_id: str, broker_addr: str, state: str, from_check: bool) -> None:
        self.add(TraceRecord(TraceType.EndTransaction, msg_id, int(time.time() * 1000), DEFAULT_REGION, self.group,
                             msg.topic, msg.tags, _keys(msg), broker_addr, msg_type=int(MessageType.Trans_msg_Commit),
                             transaction_id=msg_id, transaction_state=state, from_transaction_check=from_check))


def traced_listener(listener: Callable[[list[MessageExt]], Any], dispatcher: TraceDispatcher
                    ) -> Callable[[list[MessageExt]], Any]:
    """The listener, with a SubBefore record per message before it runs and a SubAfter record per message
    after (its time shared among the messages); a coroutine listener stays one."""
    from mqtools.common.ids import UniqueKeyGenerator

    ids = UniqueKeyGenerator(dispatcher.producer.instance.ip)
    group = dispatcher.group

    def before(msgs: list[MessageExt]) -> tuple[str, float]:
        request_id, now = ids.next(), time.time()
        for m in msgs:
            dispatcher.add(TraceRecord(TraceType.SubBefore, message_id(m), int(now * 1000), DEFAULT_REGION, group,
                                       request_id=request_id, retry_times=m.reconsume_times, keys=_keys(m)))
        return request_id, now

    def after(msgs: list[MessageExt], request_id: str, began: float, outcome: object) -> None:
        cost = int((time.time() - began) * 1000 / max(1, len(msgs)))
        ok = outcome is ConsumeResult.CONSUME_SUCCESS
        code = RETURN_EXCEPTION if isinstance(outcome, BaseException) else RETURN_SUCCESS if ok else RETURN_FAILED
        for m in msgs:
            dispatcher.add(TraceRecord(TraceType.SubAfter, message_id(m), int(time.time() * 1000), group=group,
                                       keys=_keys(m), cost_ms=cost, success=ok, request_id=request_id,
                                       context_code=code))

    async def finish(msgs: list[MessageExt], pending: Any, request_id: str, began: float) -> object:
        try:
            outcome = await pending
        except Exception as exc:
            after(msgs, request_id, began, exc)
            raise
        after(msgs, request_id, began, outcome)
        return outcome

    def call(msgs: list[MessageExt]) -> Any:
        request_id, began = before(msgs)
        try:
            outcome = listener(msgs)
        except Exception as exc:
            after(msgs, request_id, began, exc)
            raise
        if asyncio.iscoroutine(outcome) or isinstance(outcome, asyncio.Future):
            return finish(msgs, outcome, request_id, began)
        after(msgs, request_id, began, outcome)
        return outcome

    return call
