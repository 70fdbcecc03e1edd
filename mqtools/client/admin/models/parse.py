"""Parsing helpers the models share: a figure the server did not give is None, never 0 or -1."""

from __future__ import annotations

from typing import Any

from mqtools.remoting.bodies import MessageQueue


def opt_int(raw: dict[str, Any], key: str) -> int | None:
    value = raw.get(key)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def opt_float(raw: dict[str, Any], key: str, *, first: bool = False) -> float | None:
    """A number, or the first of RocketMQ's space-separated triples ("12.00 10.50 9.80")."""
    value = raw.get(key)
    if value is None or value == "":
        return None
    text = str(value).split()[0] if first and str(value).strip() else value
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def opt_bool(raw: dict[str, Any], key: str) -> bool | None:
    value = raw.get(key)
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    return None


def opt_ms(raw: dict[str, Any], key: str) -> int | None:
    """A timestamp in ms; RocketMQ writes 0 for 'never', which is not a time."""
    value = opt_int(raw, key)
    return value if value and value > 0 else None


def queue_key(mq: MessageQueue) -> tuple[str, str, int]:
    """The order mqadmin sorts queues in: topic, broker name, queue id."""
    return (mq.topic, mq.broker_name, mq.queue_id)
