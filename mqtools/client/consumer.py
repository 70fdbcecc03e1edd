"""Pull and push consumers.

`PullConsumer` is the low-level API: list queues, pull from an offset, read and commit
offsets. `PushConsumer` runs the loop RocketMQ's push consumer runs: rebalance (average
allocation, every 20 s and at once when the broker says the group changed), one
long-polling pull task per owned queue with flow control, listeners (concurrent or
orderly), failed messages sent back for retry, offsets committed every 5 s and on shutdown.

In clustering mode the push consumer also holds the broker's queue lock (LOCK_BATCH_MQ)
for every queue it consumes, orderly or not, and gives a queue up only after its
in-flight messages are done and its offset is committed. A consumer joining or leaving
therefore never makes two members process the same message in a clean run (RocketMQ's
concurrent consumer allows that overlap).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from mqtools.client.errors import MQBrokerError, MQClientError
from mqtools.client.instance import ClientInstance
from mqtools.client.offset_store import LocalOffsetStore, OffsetStore, RemoteOffsetStore
from mqtools.client.rebalance import allocate_average
from mqtools.client.route import MASTER_ID
from mqtools.client.types import (
    PULL_STATUS_BY_CODE,
    ConsumeFromWhere,
    ConsumeResult,
    MessageModel,
    PullResult,
    PullStatus,
)
from mqtools.common import properties as P
from mqtools.common import sysflag
from mqtools.common.codec import decode_stored
from mqtools.common.hashing import tags_code
from mqtools.common.message import MessageExt
from mqtools.common.topics import is_retry_topic, retry_topic
from mqtools.remoting.bodies import (
    ConsumerData,
    ConsumerListBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    SubscriptionData,
)
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingError
from mqtools.remoting.headers import (
    ConsumerGroupRequestHeader,
    ConsumerSendMsgBackRequestHeader,
    OffsetResponseHeader,
    PullMessageRequestHeader,
    QueueRequestHeader,
    SearchOffsetRequestHeader,
)

log = logging.getLogger(__name__)

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
Listener = Callable[[list[MessageExt]], ConsumeResult | Awaitable[ConsumeResult]]
CLIENT_ERRORS = (RemotingError, MQClientError, MQBrokerError)


# ---------------------------------------------------------------------- subscriptions


def parse_subscription(topic: str, expression: str | None) -> SubscriptionData:
    """`TagA || TagB` -> the tags and their hash codes; `*` or empty subscribes to all."""
    expr = (expression or "*").strip()
    if expr in ("", "*"):
        return SubscriptionData(topic=topic, sub_string="*", sub_version=time.time_ns() // 1000)
    tags = {t.strip() for t in expr.split("||") if t.strip()}
    return SubscriptionData(topic=topic, sub_string=expr, tags_set=tags, code_set={tags_code(t) for t in tags},
                            sub_version=time.time_ns() // 1000)


def matches(sub: SubscriptionData, msg: MessageExt) -> bool:
    """Exact client-side tag match (the broker only filtered by hash code)."""
    return not sub.tags_set or msg.tags in sub.tags_set


def decode_pull_body(body: bytes | None) -> list[MessageExt]:
    """The stored messages of a pull answer, bodies decompressed, retry topics restored."""
    out: list[MessageExt] = []
    if not body:
        return out
    view = memoryview(body)
    pos = 0
    while pos < len(view):
        msg = decode_stored(view, pos)
        pos += msg.store_size
        if msg.sys_flag & sysflag.COMPRESSED_FLAG:
            msg.body = zlib.decompress(msg.body)
            msg.sys_flag &= ~sysflag.COMPRESSED_FLAG
        real = msg.properties.get(P.RETRY_TOPIC)
        if real and is_retry_topic(msg.topic):
            msg.topic = real
        out.append(msg)
    return out


async def pull_once(instance: ClientInstance, group: str, mq: MessageQueue, sub: SubscriptionData, offset: int, *,
                    max_nums: int = 32, commit_offset: int | None = None, suspend_ms: int = 0,
                    broker_id: int = MASTER_ID, timeout: float | None = None) -> PullResult:
    """One PULL_MESSAGE; with suspend_ms the broker holds it until a message arrives."""
    addr = instance.broker_addr(mq.broker_name, broker_id)
    if addr is None:
        await instance.route(mq.topic, refresh=True)
        addr = instance.broker_addr(mq.broker_name, broker_id)
        if addr is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
    flag = FLAG_SUBSCRIPTION | (FLAG_SUSPEND if suspend_ms else 0)
    if commit_offset is not None and commit_offset >= 0:
        flag |= FLAG_COMMIT_OFFSET
    header = PullMessageRequestHeader(
        consumer_group=group, topic=mq.topic, queue_id=mq.queue_id, queue_offset=offset, max_msg_nums=max_nums,
        sys_flag=flag, commit_offset=max(commit_offset or 0, 0), suspend_timeout_millis=suspend_ms,
        sub_version=sub.sub_version, subscription=sub.sub_string, expression_type="TAG",
    )
    wait = timeout if timeout is not None else instance.timeout + suspend_ms / 1000
    resp = await instance.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext()), wait)
    status = PULL_STATUS_BY_CODE.get(resp.code)  # type: ignore[call-overload]
    if status is None:
        raise MQBrokerError(resp.code, resp.remark)
    ext = resp.ext_fields
    result = PullResult(status, int(ext.get("nextBeginOffset", offset)), int(ext.get("minOffset", 0)),
                        int(ext.get("maxOffset", 0)), suggest_which_broker_id=int(ext.get("suggestWhichBrokerId", 0)))
    if status is PullStatus.FOUND:
        result.messages = [m for m in decode_pull_body(resp.body) if matches(sub, m)]
    return result


async def queue_offset(instance: ClientInstance, mq: MessageQueue, code: RequestCode, **extra: int) -> int:
    addr = instance.broker_addr(mq.broker_name)
    if addr is None:
        raise MQClientError(f"The broker[{mq.broker_name}] not exist")
    if extra:
        ext = SearchOffsetRequestHeader(mq.topic, mq.queue_id, extra["timestamp"]).to_ext()
    else:
        ext = QueueRequestHeader(mq.topic, mq.queue_id).to_ext()
    resp = await instance.invoke(addr, RemotingCommand.request(code, ext))
    if resp.code != ResponseCode.SUCCESS:
        raise MQBrokerError(resp.code, resp.remark)
    return OffsetResponseHeader.from_ext(resp.ext_fields).offset


class _ClientOwner:
    """Shared start/stop of the ClientInstance for both consumers."""

    def __init__(self, group: str, namesrv: str | list[str] | None, instance: ClientInstance | None) -> None:
        if instance is None and namesrv is None:
            raise MQClientError("a consumer needs namesrv= or instance=")
        self.group = group
        self.instance = instance or ClientInstance(namesrv)  # type: ignore[arg-type]

    async def fetch_queues(self, topic: str) -> list[MessageQueue]:
        route = await self.instance.route(topic, refresh=True)
        if route is None:
            raise MQClientError(f"No route info of this topic: {topic}")
        return list(route.subscribe)

    async def max_offset(self, mq: MessageQueue) -> int:
        return await queue_offset(self.instance, mq, RequestCode.GET_MAX_OFFSET)

    async def min_offset(self, mq: MessageQueue) -> int:
        return await queue_offset(self.instance, mq, RequestCode.GET_MIN_OFFSET)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return await queue_offset(self.instance, mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, timestamp=timestamp_ms)


# ---------------------------------------------------------------------- pull consumer


class PullConsumer(_ClientOwner):
    """`async with PullConsumer("g", namesrv=...) as c: r = await c.pull(mq, "TagA", offset)`."""

    def __init__(self, group: str, *, namesrv: str | list[str] | None = None,
                 instance: ClientInstance | None = None) -> None:
        super().__init__(group, namesrv, instance)
        self.offsets = RemoteOffsetStore(self.instance, group)

    async def start(self) -> PullConsumer:
        await self.instance.start()
        return self

    async def shutdown(self) -> None:
        await self.instance.shutdown()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    async def pull(self, mq: MessageQueue, expression: str | None, offset: int, max_nums: int = 32, *,
                   suspend: float = 0.0) -> PullResult:
        if mq.topic not in self.instance.routes:
            await self.instance.route(mq.topic)
        sub = parse_subscription(mq.topic, expression)
        return await pull_once(self.instance, self.group, mq, sub, offset, max_nums=max_nums,
                               suspend_ms=int(suspend * 1000))

    async def fetch_offset(self, mq: MessageQueue) -> int | None:
        return await self.offsets.read(mq)

    async def commit_offset(self, mq: MessageQueue, offset: int) -> None:
        await self.offsets.commit(mq, offset)


# ---------------------------------------------------------------------- push consumer


@dataclass
class _QueueState:
    """One owned queue: its pull task, what is in flight, where to pull next."""

    mq: MessageQueue
    next_offset: int
    task: asyncio.Task | None = None
    inflight: dict[int, MessageExt] = field(default_factory=dict)
    buffered: list[MessageExt] = field(default_factory=list)
    broker_id: int = MASTER_ID
    dropped: bool = False
    locked: bool = False
    generation: int = 0
    idle: asyncio.Event = field(default_factory=asyncio.Event)
    space: asyncio.Event = field(default_factory=asyncio.Event)

    def commit_point(self) -> int:
        """Every message before this offset is done: the offset safe to commit."""
        return min(self.inflight) if self.inflight else self.next_offset

    def settle(self) -> None:
        if not self.inflight:
            self.idle.set()
        self.space.set()


class PushConsumer(_ClientOwner):
    """`PushConsumer("g", namesrv=...)`, `.subscribe(topic, "TagA || TagB")`, `.register_listener(fn)`, start."""

    def __init__(
        self,
        group: str,
        *,
        namesrv: str | list[str] | None = None,
        instance: ClientInstance | None = None,
        message_model: MessageModel = MessageModel.CLUSTERING,
        consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp_ms: int | None = None,
        orderly: bool = False,
        pull_batch_size: int = 32,
        pull_threshold_for_queue: int = 1000,
        consume_concurrency: int = 20,
        max_reconsume_times: int = 16,
        rebalance_interval: float = 20.0,
        persist_interval: float = 5.0,
        suspend_timeout: float = 15.0,
        offset_store_dir: Path | None = None,
    ) -> None:
        super().__init__(group, namesrv, instance)
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.consume_timestamp_ms = consume_timestamp_ms
        self.orderly = orderly
        self.pull_batch_size = pull_batch_size
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.max_reconsume_times = max_reconsume_times
        self.rebalance_interval = rebalance_interval
        self.persist_interval = persist_interval
        self.suspend_timeout = suspend_timeout
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.listener: Listener | None = None
        self.offsets: OffsetStore = self._offset_store(offset_store_dir)
        self._queues: dict[MessageQueue, _QueueState] = {}
        self._slots = asyncio.Semaphore(1 if orderly else consume_concurrency)
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._workers: set[asyncio.Task] = set()
        self._running = False

    @property
    def clustering(self) -> bool:
        return self.message_model is MessageModel.CLUSTERING

    def _offset_store(self, directory: Path | None) -> OffsetStore:
        if self.clustering:
            return RemoteOffsetStore(self.instance, self.group)
        base = directory or Path.home() / ".rocketmq_offsets"
        safe_id = self.instance.client_id.replace("@", "_").replace("#", "_")
        return LocalOffsetStore(base / safe_id / self.group / "offsets.json")

    # configuration --------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str = "*") -> PushConsumer:
        self.subscriptions[topic] = parse_subscription(topic, expression)
        return self

    def register_listener(self, listener: Listener) -> PushConsumer:
        self.listener = listener
        return self

    def consumer_data(self) -> ConsumerData:
        subs = list(self.subscriptions.values())
        if self.clustering:
            subs.append(parse_subscription(retry_topic(self.group), "*"))
        return ConsumerData(
            group_name=self.group, consume_type="CONSUME_PASSIVELY", message_model=self.message_model.value,
            consume_from_where=self.consume_from_where.value, subscription_data_set=subs,
        )

    # life cycle -----------------------------------------------------------------------

    async def start(self) -> PushConsumer:
        if self.listener is None or not self.subscriptions:
            raise MQClientError("subscribe to a topic and register a listener before start()")
        self.instance.consumers[self.group] = self
        await self.instance.start()
        for topic in self._topics():
            with contextlib.suppress(*CLIENT_ERRORS):
                await self.instance.route(topic, refresh=True)
        await self.instance.heartbeat()
        self._running = True
        self._tasks = [asyncio.create_task(self._rebalance_loop()), asyncio.create_task(self._persist_loop())]
        return self

    async def shutdown(self, drain_timeout: float = 10.0) -> None:
        """Stop pulling, let in-flight messages finish, commit offsets, release locks, leave."""
        self._running = False
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._drop_queues(list(self._queues), drain_timeout)
        self.instance.consumers.pop(self.group, None)
        await self.instance.unregister(consumer_group=self.group)
        await self.instance.shutdown()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    def rebalance_soon(self) -> None:
        self._wake.set()

    @property
    def owned_queues(self) -> list[MessageQueue]:
        return sorted(self._queues, key=lambda m: (m.topic, m.broker_name, m.queue_id))

    def _topics(self) -> list[str]:
        topics = list(self.subscriptions)
        if self.clustering:
            topics.append(retry_topic(self.group))
        return topics

    # rebalance ------------------------------------------------------------------------

    async def _rebalance_loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                pending = await self.rebalance()
            except CLIENT_ERRORS as exc:
                log.info("rebalance of %s failed: %s", self.group, exc)
                pending = True
            delay = 1.0 if pending else self.rebalance_interval
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()

    async def rebalance(self) -> bool:
        """Recompute the owned queues; True when some queue is still waiting for its lock."""
        wanted: set[MessageQueue] = set()
        for topic in self._topics():
            wanted.update(await self._allocate(topic))
        await self._drop_queues([mq for mq in self._queues if mq not in wanted], 10.0)
        new = sorted((mq for mq in wanted if mq not in self._queues), key=lambda m: (m.topic, m.broker_name,
                                                                                     m.queue_id))
        if self.clustering and self._queues:
            await self._renew_locks()
        locked = await self._lock(new) if self.clustering else set(new)
        for mq in new:
            if mq in locked:
                await self._add_queue(mq)
        return len(locked) < len(new)

    async def _allocate(self, topic: str) -> list[MessageQueue]:
        route = await self.instance.route(topic, refresh=True)
        if route is None:
            return []
        queues = list(route.subscribe)
        if not self.clustering:
            return queues
        cids = await self._consumer_ids(route.brokers)
        return allocate_average(cids, self.instance.client_id, queues)

    async def _consumer_ids(self, brokers: list[str]) -> list[str]:
        for name in brokers:
            addr = self.instance.broker_addr(name)
            if addr is None:
                continue
            header = ConsumerGroupRequestHeader(self.group).to_ext()
            try:
                resp = await self.instance.invoke(addr, RemotingCommand.request(
                    RequestCode.GET_CONSUMER_LIST_BY_GROUP, header))
            except RemotingError:
                continue
            if resp.code == ResponseCode.SUCCESS and resp.body:
                return ConsumerListBody.from_json(resp.body).consumer_id_list
        return []

    async def _lock(self, mqs: list[MessageQueue]) -> set[MessageQueue]:
        locked: set[MessageQueue] = set()
        by_broker: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            by_broker.setdefault(mq.broker_name, []).append(mq)
        for name, group in by_broker.items():
            addr = self.instance.broker_addr(name, any_node=False)
            if addr is None:
                continue
            body = LockBatchRequestBody(self.group, self.instance.client_id, set(group)).to_json()
            try:
                resp = await self.instance.invoke(addr, RemotingCommand.request(RequestCode.LOCK_BATCH_MQ,
                                                                                body=body))
            except RemotingError:
                continue
            if resp.code == ResponseCode.SUCCESS and resp.body:
                locked |= LockBatchResponseBody.from_json(resp.body).lock_ok_mq_set
        return locked

    async def _renew_locks(self) -> None:
        """Keep the broker locks alive; a queue whose lock went to someone else is dropped."""
        mine = [mq for mq, st in self._queues.items() if st.locked]
        renewed = await self._lock(mine)
        reachable = {mq for mq in mine if self.instance.broker_addr(mq.broker_name, any_node=False)}
        await self._drop_queues([mq for mq in mine if mq in reachable and mq not in renewed], 10.0)

    async def _unlock(self, mqs: list[MessageQueue]) -> None:
        by_broker: dict[str, set[MessageQueue]] = {}
        for mq in mqs:
            by_broker.setdefault(mq.broker_name, set()).add(mq)
        for name, group in by_broker.items():
            addr = self.instance.broker_addr(name, any_node=False)
            if addr is None:
                continue
            body = LockBatchRequestBody(self.group, self.instance.client_id, group).to_json()
            with contextlib.suppress(RemotingError):
                await self.instance.invoke(addr, RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, body=body))

    async def _start_offset(self, mq: MessageQueue) -> int:
        stored = await self.offsets.read(mq)
        if stored is not None and stored >= 0:
            return stored
        where = self.consume_from_where
        if is_retry_topic(mq.topic) or where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return await self.min_offset(mq)
        if where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
            stamp = self.consume_timestamp_ms or int((time.time() - 1800) * 1000)
            return await self.search_offset(mq, stamp)
        return await self.max_offset(mq)

    async def _add_queue(self, mq: MessageQueue) -> None:
        try:
            offset = await self._start_offset(mq)
        except CLIENT_ERRORS as exc:
            log.info("no start offset for %s yet: %s", mq, exc)
            if self.clustering:
                await self._unlock([mq])
            return
        state = _QueueState(mq, offset, locked=self.clustering)
        state.idle.set()
        self.offsets.update(mq, offset)
        self._queues[mq] = state
        state.task = asyncio.create_task(self._pull_loop(state))

    async def _drop_queues(self, mqs: list[MessageQueue], drain_timeout: float) -> None:
        states = [self._queues.pop(mq) for mq in mqs if mq in self._queues]
        for st in states:
            st.dropped = True
            if st.task is not None:
                st.task.cancel()
        for st in states:
            if st.task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await st.task
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(drain_timeout):
                    await st.idle.wait()
            self.offsets.update(st.mq, st.commit_point())
        await self.offsets.persist([st.mq for st in states])
        if self.clustering:
            await self._unlock([st.mq for st in states if st.locked])
        for st in states:
            self.offsets.remove(st.mq)

    # offsets ----------------------------------------------------------------------------

    async def _persist_loop(self) -> None:
        while True:
            await asyncio.sleep(self.persist_interval)
            await self.persist_offsets()

    async def persist_offsets(self) -> None:
        for st in self._queues.values():
            self.offsets.update(st.mq, st.commit_point())
        await self.offsets.persist(list(self._queues))

    def reset_offsets(self, topic: str, raw: dict) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: restart the owned queues of `topic` at the given offsets."""
        targets: dict[MessageQueue, int] = {}
        for key, value in raw.items():
            if isinstance(key, dict):
                targets[MessageQueue(key["topic"], key["brokerName"], int(key["queueId"]))] = int(value)
        for mq, offset in targets.items():
            st = self._queues.get(mq)
            if mq.topic == topic and st is not None:
                self._restart_at(st, offset)

    def _restart_at(self, st: _QueueState, offset: int) -> None:
        st.generation += 1
        if st.task is not None:
            st.task.cancel()
        st.inflight.clear()
        st.buffered.clear()
        st.next_offset = offset
        st.settle()
        self.offsets.update(st.mq, offset)
        st.task = asyncio.create_task(self._pull_loop(st))

    # pulling and consuming ------------------------------------------------------------

    async def _pull_loop(self, st: _QueueState) -> None:
        sub = self.subscriptions.get(st.mq.topic) or parse_subscription(st.mq.topic, "*")
        while not st.dropped:
            if len(st.inflight) >= self.pull_threshold_for_queue:
                st.space.clear()
                await st.space.wait()
                continue
            try:
                result = await pull_once(
                    self.instance, self.group, st.mq, sub, st.next_offset, max_nums=self.pull_batch_size,
                    commit_offset=self.offsets.table.get(st.mq), suspend_ms=int(self.suspend_timeout * 1000),
                    broker_id=st.broker_id,
                )
            except CLIENT_ERRORS as exc:
                log.debug("pull %s failed: %s", st.mq, exc)
                st.broker_id = MASTER_ID
                with contextlib.suppress(*CLIENT_ERRORS):
                    await self.instance.route(st.mq.topic, refresh=True)
                await asyncio.sleep(1.0)
                continue
            self._after_pull(st, result)

    def _after_pull(self, st: _QueueState, result: PullResult) -> None:
        st.broker_id = result.suggest_which_broker_id
        if result.status is PullStatus.OFFSET_ILLEGAL:
            st.next_offset = result.next_begin_offset
            self.offsets.update(st.mq, result.next_begin_offset)
            return
        st.next_offset = result.next_begin_offset
        if not result.messages:
            return
        for msg in result.messages:
            st.inflight[msg.queue_offset] = msg
        st.idle.clear()
        if self.orderly:
            st.buffered.extend(result.messages)
            if len(st.buffered) == len(result.messages):
                self._spawn(self._consume_orderly(st, st.generation))
        else:
            for msg in result.messages:
                self._spawn(self._consume_one(st, msg, st.generation))

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._workers.add(task)
        task.add_done_callback(self._workers.discard)

    async def _call_listener(self, msgs: list[MessageExt]) -> ConsumeResult:
        try:
            outcome = self.listener(msgs)  # type: ignore[misc]
            if inspect.isawaitable(outcome):
                outcome = await outcome
        except Exception:
            log.exception("listener of %s failed", self.group)
            return ConsumeResult.RECONSUME_LATER
        return outcome if isinstance(outcome, ConsumeResult) else ConsumeResult.RECONSUME_LATER

    def _done(self, st: _QueueState, msg: MessageExt, generation: int) -> None:
        if generation != st.generation:
            return
        st.inflight.pop(msg.queue_offset, None)
        self.offsets.update(st.mq, st.commit_point())
        st.settle()

    async def _consume_one(self, st: _QueueState, msg: MessageExt, generation: int) -> None:
        async with self._slots:
            result = await self._call_listener([msg])
            while result is ConsumeResult.RECONSUME_LATER and not await self._send_back(st.mq, msg):
                await asyncio.sleep(5.0)
                if generation != st.generation:
                    return
                result = await self._call_listener([msg])
        self._done(st, msg, generation)

    async def _consume_orderly(self, st: _QueueState, generation: int) -> None:
        """One queue, one message at a time, in queue order; a failure retries the same message."""
        async with self._slots:
            while st.buffered and generation == st.generation:
                msg = st.buffered[0]
                while await self._call_listener([msg]) is ConsumeResult.RECONSUME_LATER:
                    msg.reconsume_times += 1
                    if generation != st.generation:
                        return
                    await asyncio.sleep(1.0)
                st.buffered.pop(0)
                self._done(st, msg, generation)

    async def _send_back(self, mq: MessageQueue, msg: MessageExt) -> bool:
        """CONSUMER_SEND_MSG_BACK: the broker schedules the retry (or the DLQ); False if it refused."""
        addr = self.instance.broker_addr(mq.broker_name)
        if addr is None:
            return False
        header = ConsumerSendMsgBackRequestHeader(
            offset=msg.commit_log_offset, group=self.group, delay_level=0, origin_msg_id=msg.msg_id,
            origin_topic=msg.topic, max_reconsume_times=self.max_reconsume_times,
        )
        try:
            resp = await self.instance.invoke(addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK,
                                                                            header.to_ext()))
        except RemotingError:
            return False
        return resp.code == ResponseCode.SUCCESS
