"""Executor side of a write: one producer per task sends each row, pipelined, without pyspark.

At-least-once: a send the broker refused (or that timed out after the producer's retries) fails the
task with the RocketMQ code, and Spark's retry of the task sends its rows again.
"""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from mqtools.client.errors import MQClientError
from mqtools.client.producer import Producer
from mqtools.client.types import SendResult, SendStatus
from mqtools.common import properties as P
from mqtools.common.loop import run as run_loop
from mqtools.common.message import Message
from mqtools.common.security import ClientSecurity
from mqtools.spark.stats import TaskStats, encode, error_code, new_histogram, record

#: Sends in flight per write task by default (option maxInFlight).
WRITE_WINDOW = 256


class SendFailed(RuntimeError):
    """A row could not be sent; the message carries the RocketMQ code, so the task failure names it."""


def _body(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


def row_message(row: Mapping[str, Any], default_topic: str | None) -> Message:
    """A Message from a row's topic (or the option), body (binary or string), tags, keys and properties."""
    topic = row.get("topic") or default_topic
    if not topic:
        raise SendFailed("a row has no topic: give a topic column or the topic option")
    props = {str(k): str(v) for k, v in (row.get("properties") or {}).items() if v is not None}
    if row.get("tags"):
        props[P.TAGS] = str(row["tags"])
    keys = row.get("keys")
    if keys:
        props[P.KEYS] = keys if isinstance(keys, str) else " ".join(str(k) for k in keys)
    return Message(topic, _body(row.get("body")), properties=props)


def rows_from_batches(batches: Iterable[pa.RecordBatch]) -> Iterator[dict[str, Any]]:
    """The rows of Spark's Arrow batches as the mappings row_message takes. Each column becomes Python values once a
    batch (a map through its flat keys and values, not a list of pairs a row); a Spark Row a row cost more (a row and
    its Message 3.8-5.4 against 2.7-3.0 us, with a 1 KiB body, tags, keys and two properties)."""
    for batch in batches:
        names = batch.schema.names
        for values in zip(*(_values(column) for column in batch.columns), strict=True):
            yield dict(zip(names, values, strict=True))


def _values(column: pa.Array) -> list[Any]:
    if not pa.types.is_map(column.type):
        return column.to_pylist()
    keys, items, offsets = column.keys.to_pylist(), column.items.to_pylist(), column.offsets.to_pylist()
    valid = column.is_valid().to_pylist()
    return [dict(zip(keys[a:b], items[a:b], strict=True)) if ok else None
            for ok, a, b in zip(valid, offsets, offsets[1:], strict=False)]


def write_rows(namesrv: str, rows: Iterable[Mapping[str, Any]], *, topic: str | None, task: int,
               send_timeout_ms: int = 3000, security: ClientSecurity | None = None,
               in_flight: int = WRITE_WINDOW, latency_fault: bool = False) -> TaskStats:
    """Send every row with up to `in_flight` sends outstanding (rows bound for one queue travel together as
    the producer's auto-batching packs them, as Kafka's producer batches per partition; 1 sends one row at
    a time, in order); every answer is awaited. The first failure raises SendFailed once the sends in
    flight have ended, and no further row is sent. `latency_fault` is the Java producer's
    sendLatencyFaultEnable: a broker whose send failed or was slow is kept out of the task's choice for a
    while, so a hung master costs the task one send timeout, not one for every row that lands on it."""
    return run_loop(_write(namesrv, rows, topic, task, send_timeout_ms / 1000, security, max(1, in_flight),
                           latency_fault))


async def _write(namesrv: str, rows: Iterable[Mapping[str, Any]], topic: str | None, task: int, timeout: float,
                 security: ClientSecurity | None, in_flight: int, latency_fault: bool) -> TaskStats:
    stats = TaskStats(task, started=time.time())
    hist = new_histogram()
    window = asyncio.Semaphore(in_flight)
    failure: list[str] = []

    def answered(began: float, size: int, future: asyncio.Future[SendResult]) -> None:
        window.release()
        error = asyncio.CancelledError("send cancelled") if future.cancelled() else future.exception()
        if error is not None:
            code = error_code(error) if isinstance(error, MQClientError) else type(error).__name__
            stats.fail(code)
            failure.append(f"CODE {code} {error}")
        elif (result := future.result()).status is not SendStatus.SEND_OK:
            stats.fail(result.status.value)
            failure.append(f"answered {result.status.value}")
        else:
            record(hist, (time.perf_counter() - began) * 1_000_000)
            stats.messages += 1
            stats.bytes += size

    group = f"mq-spark-writer-{uuid.uuid4().hex[:12]}"
    async with Producer(group, namesrv=namesrv, send_timeout=timeout, security=security,
                        auto_batch=in_flight > 1, latency_fault_enabled=latency_fault) as producer:
        for row in rows:
            msg = row_message(row, topic)
            await window.acquire()
            if failure:  # this row is not sent: give its permit back, the drain below needs every one
                window.release()
                break
            producer.send_async(msg).add_done_callback(
                functools.partial(answered, time.perf_counter(), len(msg.body)))
        for _ in range(in_flight):  # every send has answered once the whole window is free again
            await window.acquire()
    stats.ended = time.time()
    stats.histogram = encode(hist)
    if failure:
        where = topic or "a row's topic"
        raise SendFailed(f"send to {where} failed after {stats.messages} sent: {failure[0]}")
    return stats
