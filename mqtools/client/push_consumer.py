"""The push consumer (RocketMQ's DefaultMQPushConsumer): the broker's messages handed to a listener.

It runs RocketMQ's push loop: rebalance (average allocation, every 20 s and at once when the
broker says the group changed; see `rebalance`), one long-polling pull task per owned queue
with flow control (RocketMQ's PullMessageService), listeners concurrent or orderly (see
`consume_service`), offsets committed every 5 s and on shutdown. With `trace=True` each delivery gets
SubBefore and SubAfter records in the trace topic (mqtools.client.trace).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import Self

from mqtools.client.client_api import ConsumerBase, pull_once
from mqtools.client.consume_service import (
    ConcurrentConsumeService,
    ConsumeService,
    Listener,
    OrderlyConsumeService,
)
from mqtools.client.errors import GroupConsumeDisabledError, MQClientError
from mqtools.client.instance import ClientInstance
from mqtools.client.offset_store import LocalOffsetStore, OffsetStore, RemoteOffsetStore
from mqtools.client.process_queue import ProcessQueue
from mqtools.client.rebalance import DROP_DRAIN_TIMEOUT, Rebalance, queue_sort_key
from mqtools.client.subscription import SUB_ALL, parse_subscription
from mqtools.client.trace import TraceDispatcher, traced_listener
from mqtools.client.types import ConsumeFromWhere, MessageModel, PullResult, PullStatus
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.security import ClientSecurity
from mqtools.common.topics import RMQ_SYS_TRACE_TOPIC, retry_topic
from mqtools.remoting import fastjson
from mqtools.remoting.bodies import ConsumerData, MessageQueue, SubscriptionData
from mqtools.remoting.fastjson import ObjectKey

log = logging.getLogger(__name__)

#: Seconds a queue's pull loop waits after a failed pull.
PULL_RETRY_DELAY = 1.0


class PushConsumer(ConsumerBase):
    """`PushConsumer("g", namesrv=...)`, `.subscribe(topic, "TagA || TagB")`, `.register_listener(fn)`, start."""

    def __init__(
        self,
        group: str,
        *,
        namesrv: str | list[str] | None = None,
        instance: ClientInstance | None = None,
        security: ClientSecurity | None = None,
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
        trace: bool = False,
        trace_topic: str = RMQ_SYS_TRACE_TOPIC,
    ) -> None:
        super().__init__(group, namesrv, instance, security)
        self.tracer = TraceDispatcher(self.instance, group, "CONSUME", trace_topic) if trace else None
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.consume_timestamp_ms = consume_timestamp_ms
        self.orderly = orderly
        self.pull_batch_size = pull_batch_size
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.consume_concurrency = consume_concurrency
        self.max_reconsume_times = max_reconsume_times
        self.rebalance_interval = rebalance_interval
        self.persist_interval = persist_interval
        self.suspend_timeout = suspend_timeout
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.listener: Listener | None = None
        self.offsets: OffsetStore = self._offset_store(offset_store_dir)
        self._rebalance = Rebalance(
            self.instance, group, self.offsets, clustering=self.clustering, consume_from_where=consume_from_where,
            consume_timestamp_ms=consume_timestamp_ms, dispatch=self._start_pulling, orderly=orderly,
        )
        self._consume: ConsumeService | None = None
        self._tasks: list[asyncio.Task] = []
        self._started_ms = 0
        #: broker sets whose pulls are refused because the group may not consume there, warned of once
        self._disabled_on: set[str] = set()

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

    def subscribe(self, topic: str, expression: str = SUB_ALL) -> PushConsumer:
        self.subscriptions[topic] = parse_subscription(topic, expression)
        return self

    def register_listener(self, listener: Listener) -> PushConsumer:
        self.listener = listener
        return self

    def consumer_data(self) -> ConsumerData:
        """This consumer as heartbeats describe it; clustering also subscribes the group's retry topic."""
        subs = list(self.subscriptions.values())
        if self.clustering:
            subs.append(parse_subscription(retry_topic(self.group), SUB_ALL))
        return ConsumerData(
            group_name=self.group, consume_type="CONSUME_PASSIVELY", message_model=self.message_model.value,
            consume_from_where=self.consume_from_where.value, subscription_data_set=subs,
        )

    # life cycle -----------------------------------------------------------------------

    async def start(self) -> Self:
        if self.listener is None or not self.subscriptions:
            raise MQClientError("subscribe to a topic and register a listener before start()")
        listener = self.listener if self.tracer is None else traced_listener(self.listener, self.tracer)
        if self.orderly:
            self._consume = OrderlyConsumeService(self.instance, self.group, listener, self.offsets,
                                                  concurrency=self.consume_concurrency, clustering=self.clustering)
        else:
            self._consume = ConcurrentConsumeService(
                self.instance, self.group, listener, self.offsets, concurrency=self.consume_concurrency,
                max_reconsume_times=self.max_reconsume_times,
            )
        self.instance.consumers[self.group] = self
        self._started_ms = int(time.time() * 1000)
        await self.instance.start()
        if self.tracer is not None:
            await self.tracer.start()
        for topic in self._topics():
            with contextlib.suppress(MQClientError):
                await self.instance.route(topic, refresh=True)
        await self.instance.heartbeat()
        self._tasks = [asyncio.create_task(self._rebalance.run(self._topics, self.rebalance_interval)),
                       asyncio.create_task(self._persist_loop())]
        if self.orderly and self.clustering:
            self._tasks.append(asyncio.create_task(self._rebalance.renew_locks_periodically()))
        return self

    async def shutdown(self, drain_timeout: float = DROP_DRAIN_TIMEOUT) -> None:
        """Stop pulling, let in-flight messages finish (within `drain_timeout` for all the queues), commit offsets,
        release locks, leave."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._rebalance.drop(list(self._rebalance.table), drain_timeout)
        if self._consume is not None:
            self._consume.close()
        if self.tracer is not None:
            await self.tracer.shutdown()
        self.instance.consumers.pop(self.group, None)
        await self.instance.unregister(consumer_group=self.group)
        await self.instance.shutdown()

    def rebalance_soon(self) -> None:
        self._rebalance.wake()

    def running_info(self) -> bytes:
        """GET_CONSUMER_RUNNING_INFO's answer, as RocketMQ's ConsumerRunningInfo: what this consumer is, what it
        subscribes to and the state of every queue it holds (dashboards, mqadmin consumerStatus, and
        `mq admin diagnose` read it)."""
        props = {"PROP_NAMESERVER_ADDR": ";".join(self.instance.namesrv_addrs), "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY",
                 "PROP_CONSUMEORDERLY": str(self.orderly).lower(),
                 "PROP_THREADPOOL_CORE_SIZE": str(self.consume_concurrency),
                 "PROP_CONSUMER_START_TIMESTAMP": str(self._started_ms), "messageModel": self.message_model.value,
                 "consumeFromWhere": self.consume_from_where.value, "pullBatchSize": str(self.pull_batch_size)}
        subs = [fastjson.loads(s.to_json()) for s in self.consumer_data().subscription_data_set]
        table = {ObjectKey(topic=mq.topic, brokerName=mq.broker_name, queueId=mq.queue_id):
                 pq.info(self.offsets.table.get(mq)) for mq, pq in self._rebalance.table.items()}
        return fastjson.dumps({"properties": props, "subscriptionSet": subs, "mqTable": table})

    async def rebalance(self) -> bool:
        """Recompute the owned queues now; True when some queue is still waiting for its lock."""
        return await self._rebalance.rebalance(self._topics())

    @property
    def owned_queues(self) -> list[MessageQueue]:
        return sorted(self._rebalance.table, key=queue_sort_key)

    def _topics(self) -> list[str]:
        topics = list(self.subscriptions)
        if self.clustering:
            topics.append(retry_topic(self.group))
        return topics

    # offsets ----------------------------------------------------------------------------

    async def _persist_loop(self) -> None:
        while True:
            await asyncio.sleep(self.persist_interval)
            await self.persist_offsets()

    async def persist_offsets(self) -> None:
        table = self._rebalance.table
        for pq in table.values():
            self.offsets.update(pq.mq, pq.commit_point())
        await self.offsets.persist(list(table))

    def reset_offsets(self, topic: str, raw: dict) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: restart the owned queues of `topic` at the given offsets."""
        targets: dict[MessageQueue, int] = {}
        for key, value in raw.items():
            if isinstance(key, dict):
                targets[MessageQueue(key["topic"], key["brokerName"], int(key["queueId"]))] = int(value)
        for mq, offset in targets.items():
            pq = self._rebalance.table.get(mq)
            if mq.topic == topic and pq is not None:
                pq.restart(offset)
                self.offsets.update(mq, offset)
                self._start_pulling(pq)

    # pulling ----------------------------------------------------------------------------

    def _start_pulling(self, pq: ProcessQueue) -> None:
        pq.task = asyncio.create_task(self._pull_loop(pq))

    async def _pull_loop(self, pq: ProcessQueue) -> None:
        sub = self.subscriptions.get(pq.mq.topic) or parse_subscription(pq.mq.topic, SUB_ALL)
        while not pq.dropped:
            if len(pq.inflight) >= self.pull_threshold_for_queue:
                pq.space.clear()
                await pq.space.wait()
                continue
            self.offsets.update(pq.mq, pq.commit_point())
            try:
                result = await pull_once(
                    self.instance, self.group, pq.mq, sub, pq.next_offset, max_nums=self.pull_batch_size,
                    commit_offset=self.offsets.table.get(pq.mq), suspend_ms=int(self.suspend_timeout * 1000),
                    broker_id=pq.broker_id,
                )
            except MQClientError as exc:
                self._pull_failed(pq.mq, exc)
                pq.broker_id = MASTER_ID
                with contextlib.suppress(MQClientError):
                    await self.instance.route(pq.mq.topic, refresh=True)
                await asyncio.sleep(PULL_RETRY_DELAY)
                continue
            self._disabled_on.discard(pq.mq.broker_name)
            self._after_pull(pq, result)

    def _pull_failed(self, mq: MessageQueue, exc: MQClientError) -> None:
        """A failed pull is retried; a group switched off is said once a broker set (it lasts until an operator
        switches it on, and the consumer, as Apache's, keeps asking meanwhile), the rest in the debug log."""
        if not isinstance(exc, GroupConsumeDisabledError):
            log.debug("pull %s failed: %s", mq, exc)
        elif mq.broker_name not in self._disabled_on:
            self._disabled_on.add(mq.broker_name)
            log.warning("%s: group %s may not consume there (consumeEnable=false); pulls go on until it may: %s",
                        mq.broker_name, self.group, exc.remark)

    def _after_pull(self, pq: ProcessQueue, result: PullResult) -> None:
        pq.last_pull_ms = int(time.time() * 1000)
        pq.broker_id = result.suggest_which_broker_id
        pq.next_offset = result.next_begin_offset
        if result.status is PullStatus.OFFSET_ILLEGAL:
            self.offsets.update(pq.mq, result.next_begin_offset)
            return
        if not result.messages:
            return
        pq.put(result.messages)
        self._consume.submit(pq, result.messages)  # type: ignore[union-attr]
