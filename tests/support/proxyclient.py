"""What the proxy tests build for the official RocketMQ 5 Python client (5.1.2): its messages and the clock."""

from __future__ import annotations

import time
from typing import Any

from rocketmq.v5.model import Message


def now_ms() -> int:
    return int(time.time() * 1000)


def new_message(topic: str, body: bytes, **fields: Any) -> Message:
    """A client Message with `fields` (tag, keys, message_group, delivery_timestamp, ...) set by name."""
    m = Message()
    m.topic = topic
    m.body = body
    for key, value in fields.items():
        setattr(m, key, value)
    return m
