"""Executor side of a write: one producer per task sends each row, without pyspark.

At-least-once: a send the broker refused (or that timed out after the producer's retries) fails the
task with the RocketMQ code, and Spark's retry of the task sends its rows again.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from mqtools.client.errors import MQClientError
from mqtools.client.sync import SyncProducer
from mqtools.client.types import SendStatus
from mqtools.common import properties as P
from mqtools.common.message import Message
from mqtools.common.security import ClientSecurity
from mqtools.spark.stats import TaskStats, encode, error_code, new_histogram, record


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


def write_rows(namesrv: str, rows: Iterable[Mapping[str, Any]], *, topic: str | None, task: int,
               send_timeout_ms: int = 3000, security: ClientSecurity | None = None) -> TaskStats:
    """Send every row synchronously; the first failure raises SendFailed after the producer has stopped."""
    stats = TaskStats(task, started=time.time())
    hist = new_histogram()
    group = f"mq-spark-writer-{uuid.uuid4().hex[:12]}"
    with SyncProducer(group, namesrv=namesrv, send_timeout=send_timeout_ms / 1000, security=security) as producer:
        for row in rows:
            msg = row_message(row, topic)
            began = time.perf_counter()
            try:
                result = producer.send(msg)
            except MQClientError as exc:
                stats.fail(error_code(exc))
                raise SendFailed(f"send to {msg.topic} failed after {stats.messages} sent: "
                                 f"CODE {error_code(exc)} {exc}") from None
            if result.status is not SendStatus.SEND_OK:
                stats.fail(result.status.value)
                raise SendFailed(f"send to {msg.topic} answered {result.status.value} after {stats.messages} sent")
            record(hist, (time.perf_counter() - began) * 1_000_000)
            stats.messages += 1
            stats.bytes += len(msg.body)
    stats.ended = time.time()
    stats.histogram = encode(hist)
    return stats
