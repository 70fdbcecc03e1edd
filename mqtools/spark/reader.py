"""Executor side of a read: pull one queue range and turn messages into rows, without pyspark.

A range is keyed by broker name and queue id; the client sends pulls to the broker's master, or to its
slave once the master has left the route (same consume-queue offsets), so a pull that fails refreshes
the route and tries again until `pull_timeout_ms` has passed without progress.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from mqtools.client.client_api import CLIENT_ERRORS
from mqtools.client.sync import SyncPullConsumer
from mqtools.client.types import PullResult, PullStatus
from mqtools.common import properties as P
from mqtools.common.message import Host, MessageExt
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.security import ClientSecurity
from mqtools.spark.offsets import DataLossError, QueueRange

#: The rows' schema, in the order `message_row` builds them.
SCHEMA = ("topic string, broker string, queue_id int, queue_offset long, msg_id string, keys string, tags string, "
          "body binary, properties map<string,string>, born_timestamp timestamp, store_timestamp timestamp, "
          "born_host string, store_host string")
RETRY_PAUSE_S = 0.2


def _host(host: Host) -> str:
    return f"{host[0]}:{host[1]}"


def _time(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def message_row(broker: str, msg: MessageExt) -> tuple[Any, ...]:
    """One row; msg_id is the producer's unique key when there is one (what `mq admin msg` shows)."""
    return (msg.topic, broker, msg.queue_id, msg.queue_offset, msg.unique_key or msg.msg_id,
            msg.properties.get(P.KEYS), msg.tags, bytes(msg.body), dict(msg.properties),
            _time(msg.born_timestamp), _time(msg.store_timestamp), _host(msg.born_host), _host(msg.store_host))


def reader_group() -> str:
    """A pull consumer group of its own: a read commits nothing and must not disturb real groups."""
    return f"mq-spark-reader-{uuid.uuid4().hex[:12]}"


class RangeReader:
    """Pulls [start, end) of one queue; `lost` counts offsets skipped under failOnDataLoss=false."""

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
        self.lost = 0

    def messages(self) -> Iterator[MessageExt]:
        r = self.range
        if r.size == 0:
            return
        mq = MessageQueue(r.topic, r.broker, r.queue_id)
        with SyncPullConsumer(reader_group(), namesrv=self.namesrv, security=self.security) as consumer:
            offset = r.start
            while offset < r.end:
                result = self._pull(consumer, mq, offset)
                if result.status is PullStatus.FOUND:
                    for msg in result.messages:
                        if r.start <= msg.queue_offset < r.end:
                            yield msg
                    offset = max(result.next_begin_offset, offset + 1) if result.messages else result.next_begin_offset
                elif result.status is PullStatus.NO_MATCHED_MSG:
                    offset = max(result.next_begin_offset, offset + 1)
                elif result.status is PullStatus.OFFSET_ILLEGAL and offset < result.min_offset:
                    offset = self._lost(offset, result.min_offset)
                else:
                    raise TimeoutError(f"{r.topic} {r.broker}:{r.queue_id}: offset {offset} is not readable "
                                       f"({result.status.value}, queue max {result.max_offset}) though the plan "
                                       f"reads to {r.end}")

    def _lost(self, offset: int, low: int) -> int:
        r = self.range
        if self.fail_on_data_loss:
            raise DataLossError(f"{r.topic} {r.broker}:{r.queue_id}: offsets {offset}..{low - 1} were removed "
                                "(retention) before they were read; set failOnDataLoss=false to skip them")
        self.lost += min(low, r.end) - offset
        return low

    def _pull(self, consumer: SyncPullConsumer, mq: MessageQueue, offset: int) -> PullResult:
        """A pull that rides out a master failure: on an error or a not-yet-replicated offset, refresh the
        route (the slave takes over when the master leaves it) and retry until the timeout."""
        deadline = time.monotonic() + self.pull_timeout
        while True:
            try:
                result = consumer.pull(mq, self.expression, offset, self.batch)
                waiting = result.status is PullStatus.NO_NEW_MSG or (
                    result.status is PullStatus.OFFSET_ILLEGAL and offset >= result.max_offset)
                if not waiting or time.monotonic() >= deadline:
                    return result
            except CLIENT_ERRORS:
                if time.monotonic() >= deadline:
                    raise
            time.sleep(RETRY_PAUSE_S)
            try:
                consumer.fetch_queues(mq.topic)
            except CLIENT_ERRORS:
                pass


def read_rows(namesrv: str, r: QueueRange, **options: Any) -> Iterator[tuple[Any, ...]]:
    """The rows of one range, for the data source's partitions."""
    for msg in RangeReader(namesrv, r, **options).messages():
        yield message_row(r.broker, msg)
