"""Typed results of the operations a live view polls: each name server's health and one line per topic.

Like `models.py`, a figure the cluster did not give is None (never 0 or -1), so views print n/a.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mqtools.common.presentation import Unreachable


@dataclass(frozen=True, slots=True)
class NamesrvStatus:
    """One name server as a client sees it right now: reachable, how fast, which brokers it knows."""

    addr: str
    reachable: bool
    rtt_ms: float | None
    """Round trip of GET_BROKER_CLUSTER_INFO; None when it did not answer."""
    broker_addrs: frozenset[str] | None
    """Every broker address (masters and slaves) in its cluster info; None when it did not answer."""
    live_table: bool | None
    """Whether it answers mq's private GET_BROKER_LIVE_TABLE (Apache RocketMQ does not)."""
    error: str | None = None
    certificate_not_after: float | None = None
    """When the TLS certificate it served expires (epoch seconds); None without TLS or when not verified."""

    @property
    def brokers(self) -> int | None:
        return None if self.broker_addrs is None else len(self.broker_addrs)

    def knows(self, broker_addr: str) -> bool | None:
        """Whether it lists the broker; None when it could not be asked."""
        return None if self.broker_addrs is None else broker_addr in self.broker_addrs


@dataclass(frozen=True, slots=True)
class TopicLine:
    """One topic across the masters that hold its config: queues, permission, size and put rate."""

    topic: str
    kind: str
    """normal or system (retry and DLQ topics belong to their groups and are left out)."""
    brokers: list[str]
    """Names of the broker sets holding the topic's config, sorted."""
    read_queues: int
    write_queues: int
    """Summed over those sets."""
    perm: int | None
    """The topic's permission bits where every set agrees; None where they differ."""
    messages: int | None
    """Max minus min offset summed over every queue; None when a set's replica could not be asked."""
    put_tps: float | None
    """Messages put per second over the last minute; None when a set's replica could not be asked."""


@dataclass(frozen=True, slots=True)
class TopicOverview:
    """Every topic, the broker sets whose topic configs could not be read, and those read from a slave."""

    lines: list[TopicLine]
    unreachable: list[Unreachable] = field(default_factory=list)
    """Sets no replica answered for (or whose master refused): their topics are missing, and the figures of
    topics they also hold leave them out."""
    from_slaves: list[str] = field(default_factory=list)
    """Sets read from a slave (no master answering): their topics' offsets and put TPS are that slave's."""
