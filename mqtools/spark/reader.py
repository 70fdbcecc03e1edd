"""Executor side of a read: pull one queue range and turn its messages into Arrow record batches.

A range is keyed by broker name and queue id; the client sends pulls to the broker's master, or to its
slave once the master has left the route (same consume-queue offsets), so a pull that fails refreshes
the route and tries again until `pull_timeout_ms` has passed without progress. A node that does not answer
(a hung master the name server still routes to) sends the task's pulls of that set to its next node by
broker id; an offset that node has not got yet sends the next pull back to the master.

Why batches and pipelining: a pull's round trip, not decoding, bounded a serial reader, and Spark's
per-row tuple-to-Arrow conversion cost as much again. So each range keeps `PIPELINE` pulls in flight
(consume-queue offsets are dense, so the next pulls' offsets are known before the answers come), and
pull answers go undecoded into Arrow columns (columns.py), `ARROW_ROWS` at a time, on the client's own
loop thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from typing import Any, TypeVar

import pyarrow as pa

from mqtools.client.errors import (
    GroupConsumeDisabledError,
    MQClientError,
    SubscriptionGroupNotExistError,
    UnreachableError,
)
from mqtools.client.pull_consumer import PullConsumer
from mqtools.client.subscription import parse_subscription
from mqtools.client.types import PullResult, PullStatus
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.security import ClientSecurity
from mqtools.remoting.bodies import MessageQueue
from mqtools.spark.columns import Columns
from mqtools.spark.consumer_pool import ConsumerPool, worker_pool
from mqtools.spark.offsets import READER_GROUP, DataLossError, QueueRange

log = logging.getLogger(__name__)
T = TypeVar("T")

RETRY_PAUSE_S = 0.2
PULL_BATCH = 512
"""Messages a pull asks for (pullBatchSize): a broker answers at most its maxTransferCountOnMessageInMemory
(Apache's default 32) and its byte cap (256 KiB), and the reader's pulls then go that far apart; where the broker
allows more, a pull's fixed cost on both sides is spread over more rows (about half the CPU a row at 128 against
32; at 512 against 128, 12% less of the machine's CPU a row in a warm Spark read of 1 KiB messages)."""
MAX_PULL_BATCH = 1024
"""The largest pullBatchSize Apache's pull consumers accept."""
PIPELINE = 4
"""Pulls in flight per range: enough to hide the round trip, few enough not to crowd the broker."""
ARROW_ROWS = 4096
ARROW_BYTES = 64 * 1024 * 1024
"""A batch goes to Spark at ARROW_ROWS rows or this many body bytes, whichever comes first (Arrow's
32-bit offsets bound a column at 2 GiB, and large bodies need not wait for a full batch)."""


class ReaderGroupMissingError(MQClientError):
    """The broker has no subscription group of the read's name and creates none; no retry changes that."""


class ReaderGroupDisabledError(MQClientError):
    """The broker has the read's group with consuming switched off (consumeEnable=false): an operator's doing, which
    no retry outlasts; a broker or topic that refuses reads for a while (NO_PERMISSION too) is retried."""


class OffsetNotReadableError(MQClientError, TimeoutError):
    """An offset the plan reads to stayed unreadable for pullTimeoutMs (the broker holds less than it said when the
    read was planned: a store cut back after an unclean stop, a slave left behind)."""


class QueueUnreachableError(UnreachableError):
    """No node of a range's set answered a pull for pullTimeoutMs: the queue and offset named (exit 3)."""


class QueueReadError(MQClientError):
    """A range's pulls kept failing for pullTimeoutMs (its set gone from the route, a refusal): the queue and offset
    named."""


class RangeReader:
    """Pulls [start, end) of one queue; offsets removed before they were read fail the read, or with
    failOnDataLoss=false are skipped with a warning in the task's log (Spark's Kafka source does the same)."""

    def __init__(self, namesrv: str, r: QueueRange, *, expression: str | None = None, batch: int = PULL_BATCH,
                 pull_timeout_ms: int = 30_000, fail_on_data_loss: bool = True,
                 security: ClientSecurity | None = None, nodes: dict[str, int] | None = None,
                 group: str = READER_GROUP, pool: ConsumerPool | None = None) -> None:
        self.namesrv = namesrv
        #: where the range's consumer is borrowed from; its loop is the one the range is read on
        self.pool = pool
        self.group = group
        self.security = security
        self.range = r
        self.expression = expression if expression not in (None, "", "*") else None
        self.batch = batch
        self.pull_timeout = pull_timeout_ms / 1000
        self.fail_on_data_loss = fail_on_data_loss
        #: broker name -> the broker id this task pulls that set from (the master unless it did not answer)
        self.nodes = {} if nodes is None else nodes

    async def batches(self) -> AsyncIterator[pa.RecordBatch]:
        """The range's rows as Arrow batches of about ARROW_ROWS, built on the client's loop. The first batch goes
        as soon as the first answer with rows is in (a pull's worth), so that Spark starts on a task's rows while
        the rest is pulled, instead of waiting for ARROW_ROWS of them at the start of every task."""
        columns = Columns(self.range.broker)
        tags = parse_subscription(self.range.topic, self.expression).tags_set
        # aclosing: a consumer that stops early (a LIMIT) closes this generator, and the pulls in
        # flight and the consumer must end with it, not when the loop finalizes a forgotten generator
        async with contextlib.aclosing(self.chunks()) as chunks:
            first = True
            async for body, offset in chunks:
                columns.add_pull(body, offset, self.range.end, tags)
                if len(columns) >= ARROW_ROWS or columns.nbytes >= ARROW_BYTES or (first and len(columns)):
                    first = False
                    yield columns.batch()
        if len(columns):
            yield columns.batch()

    async def chunks(self) -> AsyncIterator[tuple[bytes, int]]:
        """Each pull answer's stored messages, undecoded, with the cursor they start at (messages below
        it or at the range's end and beyond are not the range's), in queue order. Up to PIPELINE pulls
        run ahead at the offsets the previous ones should end at; an answer that stops short (a byte
        cap, a tag filter) leaves a gap the next serial pull at the cursor fills. Anything but FOUND goes
        to the serial path, which knows retention, failover and end of queue."""
        r = self.range
        if r.size == 0:
            return
        mq = MessageQueue(r.topic, r.broker, r.queue_id)
        pool = self.pool if self.pool is not None else worker_pool()
        async with pool.borrow(self.namesrv, self.group, self.security) as consumer, \
                contextlib.aclosing(self._pulled(consumer, mq)) as pulled:
            async for chunk in pulled:
                yield chunk

    async def _pulled(self, consumer: PullConsumer, mq: MessageQueue) -> AsyncIterator[tuple[bytes, int]]:
        """chunks() with the range's consumer."""
        r = self.range
        offset, ahead = r.start, r.start
        stride: int | None = None  # what one answer covers, learned from the first
        inflight: deque[tuple[int, int, asyncio.Task[PullResult]]] = deque()
        try:
            while offset < r.end:
                while stride and len(inflight) < PIPELINE and ahead < r.end:
                    node = self.node
                    pull = consumer.pull(mq, self.expression, ahead, self.batch, decode=False, broker_id=node)
                    inflight.append((ahead, node, asyncio.ensure_future(pull)))
                    ahead += stride
                result = await self._head(consumer, inflight, offset) if inflight else None
                if result is None:
                    result = await self._pull(consumer, mq, offset)
                if stride is None:
                    stride = self._stride(result, offset)
                if result.status is PullStatus.FOUND and result.body:
                    yield result.body, offset
                offset = self._next(result, offset)
                ahead = max(ahead, offset)
        finally:
            for _, _, task in inflight:
                task.cancel()
            await asyncio.gather(*(task for _, _, task in inflight), return_exceptions=True)

    def _stride(self, result: PullResult, offset: int) -> int:
        """How far apart the pipelined pulls go: the batch asked for, or less when the first answer stopped
        short of it with more to read (the broker's maxTransferCountOnMessageInMemory or its byte cap), so that
        a pullBatchSize above the broker's cap leaves no gaps to fill one serial pull at a time. With a tag
        expression an answer's span says nothing about the cap (the broker skipped what did not match)."""
        span = result.next_begin_offset - offset
        capped = (result.status is PullStatus.FOUND and self.expression is None and 0 < span < self.batch
                  and result.next_begin_offset < min(self.range.end, result.max_offset))
        return span if capped else self.batch

    @property
    def node(self) -> int:
        return self.nodes.get(self.range.broker, MASTER_ID)

    def _fail_over(self, consumer: PullConsumer, node: int, error: UnreachableError) -> None:
        """`node` of the range's set did not answer: unless the task has moved on from it already, its pulls of
        the set go to the set's next node by broker id in the route (a slave has the same consume-queue offsets)."""
        r = self.range
        route = consumer.instance.routes.get(r.topic)
        ids = sorted(route.broker_addrs.get(r.broker, {})) if route else []
        if node != self.node or not ids:
            return
        later = [i for i in ids if i > node]
        self.nodes[r.broker] = later[0] if later else ids[0]
        if self.node != node:
            log.warning("%s %s: node %d did not answer (%s); pulling from node %d", r.topic, r.broker, node, error,
                        self.node)

    async def _head(self, consumer: PullConsumer, inflight: deque[tuple[int, int, asyncio.Task[PullResult]]],
                    offset: int) -> PullResult | None:
        """The oldest pipelined answer when it starts at or before the cursor and found messages."""
        start, node, task = inflight[0]
        if start > offset:
            return None
        inflight.popleft()
        try:
            result = await task
        except UnreachableError as exc:
            self._fail_over(consumer, node, exc)
            return None
        except MQClientError:
            return None
        useful = result.status is PullStatus.FOUND and result.body and result.next_begin_offset > offset
        return result if useful else None

    def _next(self, result: PullResult, offset: int) -> int:
        """The cursor after an answer; raises when the plan's range cannot be read."""
        r = self.range
        if result.status is PullStatus.FOUND:
            return max(result.next_begin_offset, offset + 1) if result.body else result.next_begin_offset
        if result.status is PullStatus.NO_MATCHED_MSG:
            return max(result.next_begin_offset, offset + 1)
        if result.status is PullStatus.OFFSET_ILLEGAL and offset < result.min_offset:
            return self._lost(offset, result.min_offset)
        raise OffsetNotReadableError(f"{r.topic} {r.broker}:{r.queue_id}: offset {offset} is not readable "
                                     f"({result.status.value}, queue max {result.max_offset}) though the plan "
                                     f"reads to {r.end}")

    def _lost(self, offset: int, low: int) -> int:
        r = self.range
        if self.fail_on_data_loss:
            raise DataLossError(f"{r.topic} {r.broker}:{r.queue_id}: offsets {offset}..{low - 1} were removed "
                                "(retention) before they were read; set failOnDataLoss=false to skip them")
        log.warning("%s %s:%d: offsets %d..%d were removed (retention) before they were read; %d skipped "
                    "(failOnDataLoss=false)", r.topic, r.broker, r.queue_id, offset, low - 1, min(low, r.end) - offset)
        return low

    def _gave_up(self, offset: int, exc: MQClientError) -> MQClientError:
        """The error that fails the task, naming the queue and offset: the client's own names a request code and an
        address, or a broker, and not what the task was reading. Same exit code (3 for a node that did not answer)."""
        r = self.range
        what = (f"{r.topic} {r.broker}:{r.queue_id}: offset {offset} could not be read within pullTimeoutMs "
                f"({self.pull_timeout:g} s): {exc}")
        return QueueUnreachableError(what) if isinstance(exc, UnreachableError) else QueueReadError(what)

    async def _pull(self, consumer: PullConsumer, mq: MessageQueue, offset: int) -> PullResult:
        """A pull that rides out a master failure: on an error or a not-yet-replicated offset, refresh the
        route (the slave takes over when the master leaves it) and retry until the timeout."""
        deadline = time.monotonic() + self.pull_timeout
        while True:
            node = self.node
            try:
                result = await consumer.pull(mq, self.expression, offset, self.batch, decode=False, broker_id=node)
                waiting = result.status is PullStatus.NO_NEW_MSG or (
                    result.status is PullStatus.OFFSET_ILLEGAL and offset >= result.max_offset)
                if not waiting or time.monotonic() >= deadline:
                    return result
                if node != MASTER_ID:  # a slave without the offset yet: the master, if it answers again, has it
                    self.nodes.pop(mq.broker_name, None)
            except SubscriptionGroupNotExistError as exc:
                raise ReaderGroupMissingError(
                    f"{mq.topic} {mq.broker_name}: the broker has no subscription group {self.group} and does not "
                    f"create groups (autoCreateSubscriptionGroup=false): create it (mq admin group create "
                    f"{self.group} -c CLUSTER) or name an existing group with option consumerGroup ({exc})") from exc
            except GroupConsumeDisabledError as exc:
                raise ReaderGroupDisabledError(
                    f"{mq.topic} {mq.broker_name}: subscription group {self.group} may not consume there "
                    f"(consumeEnable=false): enable it (mq admin group update {self.group} --consume) or name "
                    f"another group with option consumerGroup ({exc})") from exc
            except MQClientError as exc:
                if time.monotonic() >= deadline:
                    raise self._gave_up(offset, exc) from exc
                if isinstance(exc, UnreachableError):
                    self._fail_over(consumer, node, exc)
                    if node == MASTER_ID and self.node != node:  # at once to the slave; never spin between nodes
                        continue
            await asyncio.sleep(RETRY_PAUSE_S)
            with contextlib.suppress(MQClientError):
                await consumer.fetch_queues(mq.topic)


async def read_ahead(batches: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
    """`batches`, with the next one already being built while the caller has this one: the pulls and the
    columns go on on the loop thread while Spark's thread hands a batch to the JVM, instead of the two taking
    turns (the range's pipelined pulls stopped once the batch they filled was taken)."""
    async def following() -> T | None:
        return await anext(batches, None)

    task = asyncio.ensure_future(following())
    try:
        while (batch := await task) is not None:
            task = asyncio.ensure_future(following())
            yield batch
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await batches.aclose()


async def _ranges(namesrv: str, ranges: Sequence[QueueRange], pool: ConsumerPool,
                  **options: Any) -> AsyncGenerator[pa.RecordBatch, None]:
    """The ranges' batches one range after the other (a set's node, once moved, stays moved for the task)."""
    nodes: dict[str, int] = {}
    for r in ranges:
        reader = RangeReader(namesrv, r, nodes=nodes, pool=pool, **options)
        async with contextlib.aclosing(reader.batches()) as batches:
            async for batch in batches:
                yield batch


def read_batches(namesrv: str, ranges: Sequence[QueueRange], **options: Any) -> Iterator[pa.RecordBatch]:
    """The rows of a task's ranges, one range after the other, as Arrow batches, for the data source's
    partitions. The whole read, Arrow batches included, runs on the worker's reader loop thread (with the
    consumer the worker's earlier tasks used: consumer_pool.py) and this thread waits once per batch: a
    hand-off per pull made the two threads take turns on the GIL, each waiting out the other's switch
    interval. The next range's first batch is read ahead too."""
    pool = worker_pool()
    batches = read_ahead(_ranges(namesrv, ranges, pool, **options))
    try:
        while True:
            try:
                batch = pool.loop.run(anext(batches))
            except StopAsyncIteration:
                break
            yield batch
    finally:
        pool.loop.run(batches.aclose())
