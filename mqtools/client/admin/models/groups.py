"""Typed results of the group and offset operations: where a group is configured, what a change did,
one-line summaries, reset targets and the running info a Java client reports about itself.

Like `models.py`, a figure the cluster did not give is None (never 0 or -1), so views print n/a.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mqtools.client.admin.models.parse import queue_key
from mqtools.common.mqversion import version_desc
from mqtools.common.topics import is_system_group
from mqtools.remoting import fastjson
from mqtools.remoting.bodies import (
    ConsumerConnection,
    MessageQueue,
    ProducerConnection,
    SubscriptionGroupConfig,
)


@dataclass(frozen=True, slots=True)
class QueueProgress:
    """One queue of a group's progress (an OffsetWrapper of ConsumeStats)."""

    queue: MessageQueue
    broker_offset: int
    consumer_offset: int | None
    """None when the group has not committed an offset for this queue."""
    last_timestamp_ms: int | None
    """Store time of the last consumed message; None when nothing was consumed."""
    pull_offset: int | None = None
    """Where the group's clients pull next (RocketMQ 5 brokers); None when the broker did not say."""

    @property
    def diff(self) -> int:
        return max(0, self.broker_offset - (self.consumer_offset or 0))

    @property
    def inflight(self) -> int | None:
        """Pulled but not yet committed (mqadmin's #Inflight)."""
        if self.pull_offset is None:
            return None
        return max(0, self.pull_offset - (self.consumer_offset or 0))


@dataclass(slots=True)
class ConsumerProgress:
    group: str
    queues: list[QueueProgress] = field(default_factory=list)
    consume_tps: float | None = None
    """Summed over brokers; None when no broker answered."""

    @property
    def total_diff(self) -> int:
        return sum(q.diff for q in self.queues)


@dataclass(frozen=True, slots=True)
class OffsetReset:
    queue: MessageQueue
    old: int | None
    """The committed offset before the reset; None when the group had none."""
    new: int
    pushed: bool | None = None
    """A reset by time: True when the queue's broker pushed the offset to the group's consumers registered
    there, False when none was (CONSUMER_NOT_ONLINE) and the offset was only committed; None otherwise."""


def unpushed_warning(group: str, rows: list[OffsetReset]) -> str | None:
    """Why a reset may not hold: some brokers pushed it to online consumers and others had none of the group
    registered (a broker restarted since the consumers' last heartbeat, every 30 s). A consumer running on
    those brokers' queues was told nothing and commits its own offsets over the committed ones."""
    if not any(r.pushed for r in rows):
        return None
    brokers = sorted({r.queue.broker_name for r in rows if r.pushed is False})
    if not brokers:
        return None
    return (f"{', '.join(brokers)} had no consumer of {group} registered while other brokers did: the offsets "
            "there were committed, not pushed, and a consumer running on those queues will commit its own over "
            "them; run the reset again after its next heartbeat (every 30 s)")


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """One online client of a group (RocketMQ's Connection)."""

    client_id: str
    client_addr: str
    language: str
    version: int

    @classmethod
    def from_wire(cls, conn: Any) -> ClientConnection:
        return cls(conn.client_id, conn.client_addr, conn.language, conn.version)


@dataclass(frozen=True, slots=True)
class GroupConnections:
    """Who is online in a consumer group, and what it subscribes to."""

    group: str
    connections: list[ClientConnection]
    subscriptions: dict[str, str]
    """topic -> subscription expression."""
    consume_type: str | None
    message_model: str | None
    consume_from_where: str | None

    @classmethod
    def from_wire(cls, group: str, body: ConsumerConnection) -> GroupConnections:
        return cls(group, [ClientConnection.from_wire(c) for c in body.connection_set],
                   {topic: sub.sub_string for topic, sub in sorted(body.subscription_table.items())},
                   body.consume_type, body.message_model, body.consume_from_where)


def producer_connections(body: ProducerConnection) -> list[ClientConnection]:
    return [ClientConnection.from_wire(c) for c in body.connection_set]


@dataclass(frozen=True, slots=True)
class GroupPlacement:
    """A group's subscription config on one master."""

    broker_name: str
    addr: str
    config: SubscriptionGroupConfig


@dataclass(frozen=True, slots=True)
class GroupEntry:
    """A consumer group and the masters that hold its subscription config."""

    group: str
    placements: list[GroupPlacement]

    @property
    def system(self) -> bool:
        return is_system_group(self.group)


@dataclass(frozen=True, slots=True)
class GroupChange:
    """A subscription config written to one broker: before (None: created there) and after."""

    broker_name: str | None
    addr: str
    old: SubscriptionGroupConfig | None
    new: SubscriptionGroupConfig


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """One line per group: who is online, how far behind, how fast (mqadmin's consumerProgress without -g)."""

    group: str
    online: int | None
    """Online clients; None when the group's brokers could not be asked."""
    min_version: int | None
    """Lowest client version (MQVersion ordinal) among the online clients; None when nobody is online."""
    consume_type: str | None
    message_model: str | None
    consume_tps: float | None
    """None when the group's consume stats could not be read."""
    diff_total: int | None

    @property
    def version_desc(self) -> str | None:
        return None if self.min_version is None else version_desc(self.min_version)

    @property
    def pull_or_push(self) -> str | None:
        if not self.online or self.consume_type is None:
            return None
        return "PULL" if self.consume_type == "CONSUME_ACTIVELY" else "PUSH"


@dataclass(frozen=True, slots=True)
class ResetTarget:
    """Where `reset_offsets` moves a group: a time, an offset, a shift, the start or the end of each
    queue; `broker_name` with `queue_id` narrows it to one queue."""

    kind: str
    value: int | None = None
    broker_name: str | None = None
    queue_id: int | None = None

    KINDS = ("time", "offset", "shift", "earliest", "latest")

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise ValueError(f"reset target kind must be one of {', '.join(self.KINDS)}")
        if (self.value is None) != (self.kind in ("earliest", "latest")):
            raise ValueError(f"a {self.kind} reset {'takes no' if self.value is not None else 'needs a'} value")
        if (self.broker_name is None) != (self.queue_id is None):
            raise ValueError("give the broker name and the queue id together")

    @property
    def single_queue(self) -> bool:
        return self.queue_id is not None

    def describe(self) -> str:
        what = self.kind if self.value is None else f"{self.kind} {self.value}"
        return what + (f" on {self.broker_name}:{self.queue_id}" if self.single_queue else "")


@dataclass(frozen=True, slots=True)
class ProcessQueueInfo:
    """A held queue's state as its client reports it (RocketMQ's ProcessQueueInfo); None where not told."""

    committed: int | None
    cached: int | None
    locked: bool | None
    last_pull_ms: int | None
    last_consume_ms: int | None

    @classmethod
    def from_dict(cls, data: Any) -> ProcessQueueInfo:
        data = data if isinstance(data, dict) else {}

        def stamp(key: str) -> int | None:
            value = data.get(key)
            return int(value) if isinstance(value, (int, float)) and value > 0 else None

        committed, cached, locked = data.get("commitOffset"), data.get("cachedMsgCount"), data.get("locked")
        return cls(int(committed) if isinstance(committed, (int, float)) and committed >= 0 else None,
                   int(cached) if isinstance(cached, (int, float)) else None,
                   locked if isinstance(locked, bool) else None, stamp("lastPullTimestamp"),
                   stamp("lastConsumeTimestamp"))


@dataclass(frozen=True, slots=True)
class ConsumerRunningInfo:
    """What a client reports about itself (GET_CONSUMER_RUNNING_INFO, relayed by a broker)."""

    client_id: str
    properties: dict[str, str]
    subscriptions: dict[str, str]
    """topic -> subscription expression."""
    queues: list[MessageQueue]
    """The queues this client holds after rebalance."""
    raw: str
    """The client's answer as JSON, for a file an operator reads."""
    process_queues: dict[MessageQueue, ProcessQueueInfo] = field(default_factory=dict)
    """Each held queue's state, as the client reports it."""

    @property
    def orderly(self) -> bool | None:
        """Whether it consumes orderly (PROP_CONSUMEORDERLY); None when it does not say."""
        value = self.properties.get("PROP_CONSUMEORDERLY")
        return None if value is None else value.lower() == "true"

    @classmethod
    def from_json(cls, client_id: str, body: bytes) -> ConsumerRunningInfo:
        data: dict[str, Any] = fastjson.loads(body)
        subs = {str(s.get("topic")): str(s.get("subString", "*")) for s in data.get("subscriptionSet") or []
                if isinstance(s, dict)}
        held = sorted(((MessageQueue(str(k["topic"]), str(k["brokerName"]), int(k["queueId"])), v)
                       for k, v in (data.get("mqTable") or {}).items() if isinstance(k, dict)),
                      key=lambda kv: queue_key(kv[0]))
        queues = [mq for mq, _ in held]
        props = {str(k): str(v) for k, v in (data.get("properties") or {}).items()}
        readable = {**data, "mqTable": {f"{mq.topic}@{mq.broker_name}@{mq.queue_id}": v for mq, v in held}}
        raw = json.dumps(readable, indent=2, default=str)
        return cls(client_id, props, subs, queues, raw, {mq: ProcessQueueInfo.from_dict(v) for mq, v in held})


def same_subscriptions(infos: list[ConsumerRunningInfo]) -> bool:
    """Every client of the group subscribes to the same topics with the same expressions."""
    return all(i.subscriptions == infos[0].subscriptions for i in infos)


def rebalance_ok(infos: list[ConsumerRunningInfo]) -> bool:
    """No queue is held by two clients at once."""
    held = [mq for i in infos for mq in i.queues]
    return len(held) == len(set(held))
