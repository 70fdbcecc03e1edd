"""Typed results of the topic operations: the catalogue, usage, per-queue status, changes.

Like `models.py`, a figure the cluster did not give is None (never 0 or -1), so views print n/a.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqtools.common.topics import is_dlq_topic, is_retry_topic, is_system_topic
from mqtools.remoting.bodies import MessageQueue, TopicConfig


def topic_kind(topic: str, reserved: set[str]) -> str:
    """normal, retry, dlq or system; `reserved` holds the cluster and broker names, which brokers
    register as topics of their own."""
    if is_retry_topic(topic):
        return "retry"
    if is_dlq_topic(topic):
        return "dlq"
    if is_system_topic(topic) or topic in reserved:
        return "system"
    return "normal"


@dataclass(frozen=True, slots=True)
class TopicEntry:
    """One topic the name servers know, with its kind and the clusters that host it."""

    topic: str
    kind: str
    clusters: list[str]


@dataclass(frozen=True, slots=True)
class TopicUsage:
    """A topic with its clusters and the groups consuming it (mqadmin's `topicList -c`)."""

    topic: str
    clusters: list[str]
    groups: list[str] | None
    """None when the topic's brokers could not be asked."""


@dataclass(frozen=True, slots=True)
class QueueStats:
    """One queue of a topic as its broker reports it (GET_TOPIC_STATS_INFO)."""

    queue: MessageQueue
    min_offset: int
    max_offset: int
    last_update_ms: int | None
    """Store time of the newest message; None for an empty queue."""

    @property
    def messages(self) -> int:
        return self.max_offset - self.min_offset


@dataclass(frozen=True, slots=True)
class TopicStatus:
    """Every queue of a topic, sorted as mqadmin sorts them, with the topic's put TPS."""

    topic: str
    queues: list[QueueStats]
    put_tps: float | None
    """Summed over the masters of the last minute; None when no master's stats could be read."""

    @property
    def messages(self) -> int:
        return sum(q.messages for q in self.queues)


@dataclass(frozen=True, slots=True)
class TopicChange:
    """A topic config written to one broker: what it held before (None: created there) and now."""

    broker_name: str | None
    addr: str
    old: TopicConfig | None
    new: TopicConfig
