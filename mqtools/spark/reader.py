"""Executor side of a read: pull one queue range and turn messages into Arrow record batches.

A range is keyed by broker name and queue id; the client sends pulls to the broker's master, or to its
slave once the master has left the route (same consume-queue offsets), so a pull that fails refreshes
the route and tries again until `pull_timeout_ms` has passed without progress.

Why batches and pipelining: a pull's round trip, not decoding, bounded a serial reader, and Spark's
per-row tuple-to-Arrow conversion cost as much again. So each range keeps `PIPELINE` pulls in flight
(consume-queue offsets are dense, so the next pulls' offsets are known before the answers come) and
rows go to Spark as columns, `ARROW_ROWS` at a time, built on the client's own loop thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pyarrow as pa

from mqtools.client.client_api import CLIENT_ERRORS
from mqtools.client.pull_consumer import PullConsumer
from mqtools.client.sync import LoopThread
from mqtools.client.types import PullResult, PullStatus
from mqtools.common import properties as P
from mqtools.common.message import Host, MessageExt
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.security import ClientSecurity
from mqtools.spark.offsets import DataLossError, QueueRange

log = logging.getLogger(__name__)

#: The rows' schema as Spark DDL; ARROW_SCHEMA is the same in Arrow, as Spark's own conversion makes it
#: (timestamps in microseconds, UTC), which a batch must equal exactly.
SCHEMA = ("topic string, broker string, queue_id int, queue_offset long, msg_id string, keys string, tags string, "
          "body binary, properties map<string,string>, born_timestamp timestamp, store_timestamp timestamp, "
          "born_host string, store_host string")
ARROW_SCHEMA = pa.schema([
    ("topic", pa.string()), ("broker", pa.string()), ("queue_id", pa.int32()), ("queue_offset", pa.int64()),
    ("msg_id", pa.string()), ("keys", pa.string()), ("tags", pa.string()), ("body", pa.binary()),
    ("properties", pa.map_(pa.string(), pa.string())), ("born_timestamp", pa.timestamp("us", tz="UTC")),
    ("store_timestamp", pa.timestamp("us", tz="UTC")), ("born_host", pa.string()), ("store_host", pa.string())])
RETRY_PAUSE_S = 0.2
PIPELINE = 4
"""Pulls in flight per range: enough to hide the round trip, few enough not to crowd the broker."""
ARROW_ROWS = 4096


class Columns:
    """Messages gathered column by column, then one RecordBatch: no per-row objects reach Spark.
    A pull's messages go in together, one comprehension per column (a method call per message cost
    as much as the decode)."""

    def __init__(self, broker: str) -> None:
        self.broker = broker
        self.hosts: dict[Host, str] = {}
        self.clear()

    def clear(self) -> None:
        self.topic: list[str] = []
        self.queue_id: list[int] = []
        self.queue_offset: list[int] = []
        self.msg_id: list[str] = []
        self.keys: list[str | None] = []
        self.tags: list[str | None] = []
        self.body: list[bytes] = []
        self.prop_offsets: list[int] = [0]
        self.prop_keys: list[str] = []
        self.prop_values: list[str] = []
        self.born: list[int] = []
        self.stored: list[int] = []
        self.born_host: list[str] = []
        self.store_host: list[str] = []

    def __len__(self) -> int:
        return len(self.topic)

    def extend(self, msgs: list[MessageExt]) -> None:
        """msg_id is the producer's unique key when there is one (what `mq admin msg` shows)."""
        props = [m.properties for m in msgs]
        self.topic.extend([m.topic for m in msgs])
        self.queue_id.extend([m.queue_id for m in msgs])
        self.queue_offset.extend([m.queue_offset for m in msgs])
        self.msg_id.extend([p.get(P.UNIQ_KEY) or m.msg_id for m, p in zip(msgs, props)])
        self.keys.extend([p.get(P.KEYS) for p in props])
        self.tags.extend([p.get(P.TAGS) for p in props])
        self.body.extend([m.body for m in msgs])
        keys, values, offsets = self.prop_keys, self.prop_values, self.prop_offsets
        for p in props:
            keys.extend(p)
            values.extend(p.values())
            offsets.append(len(keys))
        self.born.extend([m.born_timestamp * 1000 for m in msgs])
        self.stored.extend([m.store_timestamp * 1000 for m in msgs])
        self.born_host.extend([self._host(m.born_host) for m in msgs])
        self.store_host.extend([self._host(m.store_host) for m in msgs])

    def _host(self, host: Host) -> str:
        text = self.hosts.get(host)
        if text is None:
            text = self.hosts[host] = f"{host[0]}:{host[1]}"
        return text

    def batch(self) -> pa.RecordBatch:
        n = len(self)
        props = pa.MapArray.from_arrays(pa.array(self.prop_offsets, pa.int32()), pa.array(self.prop_keys, pa.string()),
                                        pa.array(self.prop_values, pa.string()))
        ts = pa.timestamp("us", tz="UTC")
        arrays = [pa.array(self.topic, pa.string()), pa.array([self.broker] * n, pa.string()),
                  pa.array(self.queue_id, pa.int32()), pa.array(self.queue_offset, pa.int64()),
                  pa.array(self.msg_id, pa.string()), pa.array(self.keys, pa.string()),
                  pa.array(self.tags, pa.string()), pa.array(self.body, pa.binary()), props,
                  pa.array(self.born, ts), pa.array(self.stored, ts), pa.array(self.born_host, pa.string()),
                  pa.array(self.store_host, pa.string())]
        self.clear()
        return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def reader_group() -> str:
    """A pull consumer group of its own: a read commits nothing and must not disturb real groups."""
    return f"mq-spark-reader-{uuid.uuid4().hex[:12]}"


class RangeReader:
    """Pulls [start, end) of one queue; offsets removed before they were read fail the read, or with
    failOnDataLoss=false are skipped with a warning in the task's log (Spark's Kafka source does the same)."""

    def __init__(self, namesrv: str, r: QueueRange, *, expression: str | None = None, batch: int = 32,
                 pull_timeout_ms: int = 30_000, fail_on_data_loss: bool = True,
                 security: ClientSecurity | None = None) -> None:
        self.namesrv = namesrv
        self.security = security
        self.range = r
        self.expression = expression if expression not in (None, "", "*") else None
        self.batch = batch
        self.pull_timeout = pull_timeout_ms / 1000
        self.fail_on_data_loss = fail_on_data_loss

    async def batches(self) -> AsyncIterator[pa.RecordBatch]:
        """The range's rows as Arrow batches of about ARROW_ROWS, built on the client's loop."""
        columns = Columns(self.range.broker)
        async for chunk in self.chunks():
            columns.extend(chunk)
            if len(columns) >= ARROW_ROWS:
                yield columns.batch()
        if len(columns):
            yield columns.batch()

    async def chunks(self) -> AsyncIterator[list[MessageExt]]:
        """Each message of the range once, in queue order, a pull's worth at a time. Up to PIPELINE pulls
        run ahead at the offsets the previous ones should end at; an answer that stops short (a byte cap,
        a tag filter) leaves a gap the next serial pull at the cursor fills, and answers overlapping what
        was read are trimmed. Anything but FOUND goes to the serial path, which knows retention, failover
        and end of queue."""
        r = self.range
        if r.size == 0:
            return
        mq = MessageQueue(r.topic, r.broker, r.queue_id)
        consumer = PullConsumer(reader_group(), namesrv=self.namesrv, security=self.security)
        await consumer.start()
        offset, ahead = r.start, r.start
        inflight: deque[tuple[int, asyncio.Task[PullResult]]] = deque()
        try:
            while offset < r.end:
                while len(inflight) < PIPELINE and ahead < r.end:
                    pull = consumer.pull(mq, self.expression, ahead, self.batch)
                    inflight.append((ahead, asyncio.ensure_future(pull)))
                    ahead += self.batch
                result = await self._head(inflight, offset) if inflight else None
                if result is None:
                    result = await self._pull(consumer, mq, offset)
                if result.status is PullStatus.FOUND:
                    chunk = [m for m in result.messages if offset <= m.queue_offset < r.end]
                    if chunk:
                        yield chunk
                offset = self._next(result, offset)
                ahead = max(ahead, offset)
        finally:
            for _, task in inflight:
                task.cancel()
            await asyncio.gather(*(task for _, task in inflight), return_exceptions=True)
            await consumer.shutdown()

    @staticmethod
    async def _head(inflight: deque[tuple[int, asyncio.Task[PullResult]]], offset: int) -> PullResult | None:
        """The oldest pipelined answer when it starts at or before the cursor and found messages."""
        start, task = inflight[0]
        if start > offset:
            return None
        inflight.popleft()
        try:
            result = await task
        except CLIENT_ERRORS:
            return None
        useful = result.status is PullStatus.FOUND and result.messages and result.next_begin_offset > offset
        return result if useful else None

    def _next(self, result: PullResult, offset: int) -> int:
        """The cursor after an answer; raises when the plan's range cannot be read."""
        r = self.range
        if result.status is PullStatus.FOUND:
            return max(result.next_begin_offset, offset + 1) if result.messages else result.next_begin_offset
        if result.status is PullStatus.NO_MATCHED_MSG:
            return max(result.next_begin_offset, offset + 1)
        if result.status is PullStatus.OFFSET_ILLEGAL and offset < result.min_offset:
            return self._lost(offset, result.min_offset)
        raise TimeoutError(f"{r.topic} {r.broker}:{r.queue_id}: offset {offset} is not readable "
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

    async def _pull(self, consumer: PullConsumer, mq: MessageQueue, offset: int) -> PullResult:
        """A pull that rides out a master failure: on an error or a not-yet-replicated offset, refresh the
        route (the slave takes over when the master leaves it) and retry until the timeout."""
        deadline = time.monotonic() + self.pull_timeout
        while True:
            try:
                result = await consumer.pull(mq, self.expression, offset, self.batch)
                waiting = result.status is PullStatus.NO_NEW_MSG or (
                    result.status is PullStatus.OFFSET_ILLEGAL and offset >= result.max_offset)
                if not waiting or time.monotonic() >= deadline:
                    return result
            except CLIENT_ERRORS:
                if time.monotonic() >= deadline:
                    raise
            await asyncio.sleep(RETRY_PAUSE_S)
            with contextlib.suppress(*CLIENT_ERRORS):
                await consumer.fetch_queues(mq.topic)


def read_batches(namesrv: str, r: QueueRange, **options: Any) -> Iterator[pa.RecordBatch]:
    """The rows of one range as Arrow batches, for the data source's partitions. The whole read, Arrow
    batches included, runs on a client loop thread and this thread waits once per batch: a hand-off per
    pull made the two threads take turns on the GIL, each waiting out the other's switch interval."""
    loop = LoopThread("mq-spark-reader")
    batches = RangeReader(namesrv, r, **options).batches()
    try:
        while True:
            try:
                batch = loop.run(anext(batches))
            except StopAsyncIteration:
                return
            yield batch
    finally:
        loop.run(batches.aclose())
        loop.close()
