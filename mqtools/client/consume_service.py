"""Running the listener on pulled messages (RocketMQ's ConsumeMessageConcurrentlyService and
ConsumeMessageOrderlyService).

Concurrent: up to `consume_concurrency` workers take messages one at a time from a shared
queue (RocketMQ's consume thread pool and its work queue; a task per message cost more than
the decode and the listener together); a message the listener refuses is sent back to the broker, which re-delivers it through the group's
retry topic (or the DLQ once `max_reconsume_times` is spent). Orderly: one message at a time
per queue, in queue order, up to `consume_concurrency` queues at once; a refused message is retried in place,
so nothing overtakes it, and holds back only its own queue. Both stop at the next message of a queue that was
reset or dropped (the offset committed at a drop is that of the first message not done).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable

from mqtools.client.client_api import send_back
from mqtools.client.errors import MQClientError
from mqtools.client.instance import ClientInstance
from mqtools.client.offset_store import OffsetStore
from mqtools.client.process_queue import ProcessQueue
from mqtools.client.producer import Producer
from mqtools.client.types import ConsumeResult
from mqtools.common import properties as P
from mqtools.common.message import Message, MessageExt
from mqtools.common.topics import CLIENT_INNER_PRODUCER_GROUP, retry_topic
from mqtools.remoting.bodies import MessageQueue

log = logging.getLogger(__name__)

Listener = Callable[[list[MessageExt]], ConsumeResult | Awaitable[ConsumeResult]]
#: Seconds before a message the broker would not take back is consumed again.
SEND_BACK_RETRY_DELAY = 5.0
#: Seconds before an orderly listener sees a refused message again.
ORDERLY_RETRY_DELAY = 1.0


def _verdict(outcome: object) -> ConsumeResult:
    """What a listener returned, as a result: anything but a ConsumeResult means RECONSUME_LATER."""
    return outcome if isinstance(outcome, ConsumeResult) else ConsumeResult.RECONSUME_LATER


class ConsumeService:
    """Hands pulled messages to the listener and records them done (RocketMQ's ConsumeMessageService)."""

    def __init__(self, instance: ClientInstance, group: str, listener: Listener, offsets: OffsetStore) -> None:
        self.instance = instance
        self.group = group
        self.listener = listener
        self.offsets = offsets
        self._workers: set[asyncio.Task] = set()

    def submit(self, pq: ProcessQueue, msgs: list[MessageExt]) -> None:
        """Start consuming `msgs`, just put into `pq`; never blocks the pull loop."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop the workers once the queues are dropped (a busy one is cancelled at its next await)."""
        for task in list(self._workers):
            task.cancel()

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._workers.add(task)
        task.add_done_callback(self._workers.discard)

    async def _call_listener(self, msgs: list[MessageExt]) -> ConsumeResult:
        """The listener's verdict; an exception or a stray return value means RECONSUME_LATER."""
        outcome = self._listen(msgs)
        return outcome if isinstance(outcome, ConsumeResult) else await self._finish_listen(outcome)

    def _listen(self, msgs: list[MessageExt]) -> ConsumeResult | Awaitable[object]:
        """The verdict of a plain listener, or what an async one returned (for _finish_listen): a
        worker awaits only when the listener is a coroutine."""
        try:
            outcome = self.listener(msgs)
        except Exception:
            log.exception("listener of %s failed", self.group)
            return ConsumeResult.RECONSUME_LATER
        if isinstance(outcome, ConsumeResult) or inspect.isawaitable(outcome):
            return outcome
        return ConsumeResult.RECONSUME_LATER

    async def _finish_listen(self, pending: Awaitable[object]) -> ConsumeResult:
        try:
            return _verdict(await pending)
        except Exception:
            log.exception("listener of %s failed", self.group)
            return ConsumeResult.RECONSUME_LATER

    @staticmethod
    def _ours(pq: ProcessQueue, generation: int) -> bool:
        """Work started under `generation` may go on: the queue was neither reset nor dropped since (Apache's
        consume requests check isDropped before each batch)."""
        return generation == pq.generation and not pq.dropped

    def _done(self, pq: ProcessQueue, msg: MessageExt, generation: int) -> None:
        """The message leaves the queue's in-flight table, which is what moves its commit point; the
        offset store takes the commit point when the queue is next pulled, persisted or dropped."""
        if generation == pq.generation:
            pq.remove(msg)


class ConcurrentConsumeService(ConsumeService):
    """Each message on its own; a refusal goes back to the broker (RocketMQ's ConsumeMessageConcurrentlyService)."""

    def __init__(self, instance: ClientInstance, group: str, listener: Listener, offsets: OffsetStore, *,
                 concurrency: int, max_reconsume_times: int) -> None:
        super().__init__(instance, group, listener, offsets)
        self.max_reconsume_times = max_reconsume_times
        self._concurrency = concurrency
        self._pending: deque[tuple[ProcessQueue, MessageExt, int]] = deque()
        self._sleepers: list[asyncio.Future[None]] = []
        """Idle workers' wake-up futures. Not an asyncio.Event: each Event.wait() asks asyncio for the
        running loop, a getpid() system call, and while a backlog drains workers go idle about once
        per four messages."""
        self._idle = 0
        #: Sends a refused message to the retry topic when its broker cannot take it back (made when first needed).
        self._producer: Producer | None = None

    def submit(self, pq: ProcessQueue, msgs: list[MessageExt]) -> None:
        generation = pq.generation
        self._pending.extend((pq, msg, generation) for msg in msgs)
        sleepers, self._sleepers = self._sleepers, []
        for sleeper in sleepers:
            if not sleeper.done():
                sleeper.set_result(None)
        spawn = min(len(msgs) - self._idle, self._concurrency - len(self._workers))
        for _ in range(spawn):
            self._spawn(self._worker())

    def close(self) -> None:
        """What is still queued is left unconsumed: its queue's offset was never committed past it."""
        self._pending.clear()
        super().close()

    async def _worker(self) -> None:
        pending = self._pending
        loop = asyncio.get_running_loop()
        while True:
            while pending:
                pq, msg, generation = pending.popleft()
                if generation != pq.generation or pq.dropped:  # _ours, inline: this runs for every message
                    continue
                result = self._listen([msg])
                if not isinstance(result, ConsumeResult):
                    try:
                        result = _verdict(await result)
                    except Exception:
                        log.exception("listener of %s failed", self.group)
                        result = ConsumeResult.RECONSUME_LATER
                if result is ConsumeResult.RECONSUME_LATER and not await self._send_back(pq, msg, generation):
                    continue
                self._done(pq, msg, generation)
            sleeper = loop.create_future()
            self._sleepers.append(sleeper)
            self._idle += 1
            try:
                await sleeper
            finally:
                self._idle -= 1

    async def _send_back(self, pq: ProcessQueue, msg: MessageExt, generation: int) -> bool:
        """A refused message goes back to the broker (retried until it is taken, or consumed here
        again meanwhile); False when its queue was reset or dropped in between and it is no longer ours."""
        while not await self._back(pq, msg):
            await asyncio.sleep(SEND_BACK_RETRY_DELAY)
            if not self._ours(pq, generation):
                return False
            if await self._call_listener([msg]) is not ConsumeResult.RECONSUME_LATER:
                break
        return True


    async def _back(self, pq: ProcessQueue, msg: MessageExt) -> bool:
        """CONSUMER_SEND_MSG_BACK to its set's master; when that fails (the master gone or hung), the message sent
        as a new one to the group's retry topic on any master, as Apache's sendMessageBackAsNormalMessage: a set
        without master must not hold the workers that consume the healthy ones."""
        if await send_back(self.instance, self.group, pq.mq, msg, self.max_reconsume_times):
            return True
        if self._producer is None:
            self._producer = Producer(CLIENT_INNER_PRODUCER_GROUP, instance=self.instance)
        try:
            await self._producer.send(retry_message(self.group, msg, self.max_reconsume_times))
        except MQClientError as exc:
            log.info("%s: could not send %s back to its broker nor to %s: %s", self.group, msg.msg_id,
                     retry_topic(self.group), exc)
            return False
        return True


def retry_message(group: str, msg: MessageExt, max_reconsume_times: int) -> Message:
    """A refused message as a new one for the group's retry topic: its origin id, topic and reconsume count kept,
    due after delay level 3 + the times it was consumed (Apache's sendMessageBackAsNormalMessage)."""
    props = {k: v for k, v in msg.properties.items() if k != P.TRAN_MSG}
    props[P.ORIGIN_MESSAGE_ID] = msg.properties.get(P.ORIGIN_MESSAGE_ID) or msg.msg_id
    props[P.RETRY_TOPIC] = msg.topic
    props[P.RECONSUME_TIME] = str(msg.reconsume_times + 1)
    props[P.MAX_RECONSUME_TIMES] = str(max_reconsume_times)
    props[P.DELAY] = str(3 + msg.reconsume_times)
    return Message(retry_topic(group), bytes(msg.body), msg.flag, props)


class OrderlyConsumeService(ConsumeService):
    """One message at a time per queue in queue order; a refusal retries the same message (RocketMQ's
    ConsumeMessageOrderlyService: a lock per queue, the listener on the consumer's pool, a refused message
    suspending only its queue, SUSPEND_CURRENT_QUEUE_A_MOMENT). In clustering mode a queue whose lock is lost or
    expired is not consumed until the lock is renewed (Apache's tryLockLaterAndReconsume)."""

    def __init__(self, instance: ClientInstance, group: str, listener: Listener, offsets: OffsetStore, *,
                 concurrency: int, clustering: bool) -> None:
        super().__init__(instance, group, listener, offsets)
        self.clustering = clustering
        #: Listener calls running at once, all queues together (the consume thread pool's size).
        self._slots = asyncio.Semaphore(concurrency)
        #: One consumer of a queue at a time (Apache's MessageQueueLock): a queue's loop started after a reset or a
        #: drop waits until the former one's message is out of the listener.
        self._queue_locks: dict[MessageQueue, asyncio.Lock] = {}

    def submit(self, pq: ProcessQueue, msgs: list[MessageExt]) -> None:
        pq.buffered.extend(msgs)
        if len(pq.buffered) == len(msgs):
            self._spawn(self._consume_orderly(pq, pq.generation))

    async def _consume_orderly(self, pq: ProcessQueue, generation: int) -> None:
        """Consume the queue's buffer; a refused message waits ORDERLY_RETRY_DELAY holding no slot, so only its own
        queue waits (one refusing listener stopped every queue of the consumer)."""
        async with self._queue_locks.setdefault(pq.mq, asyncio.Lock()):
            while pq.buffered and self._ours(pq, generation):
                if self.clustering and pq.lock_expired():
                    pq.resume.clear()
                    await pq.resume.wait()
                    continue
                msg = pq.buffered[0]
                async with self._slots:
                    result = await self._call_listener([msg])
                if not self._ours(pq, generation):
                    return
                if result is ConsumeResult.RECONSUME_LATER:
                    msg.reconsume_times += 1
                    await asyncio.sleep(ORDERLY_RETRY_DELAY)
                    continue
                pq.buffered.pop(0)
                self._done(pq, msg, generation)
