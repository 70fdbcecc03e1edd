"""Typed results of the group and offset operations: where a group is configured, what a change did,
one-line summaries, reset targets and the running info a Java client reports about itself.

Like `models.py`, a figure the cluster did not give is None (never 0 or -1), so views print n/a. Each
result's document (table and JSON) is rendered here, by the renderer registered for its kind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mqtools.client.admin.models.parse import queue_key
from mqtools.client.errors import MQClientError, SubscriptionGroupNotExistError, UnreachableError
from mqtools.common.mqversion import version_desc
from mqtools.common.presentation import (
    Column,
    ReadSource,
    Unreachable,
    View,
    cell,
    from_slaves_note,
    renders,
    sets_missed,
    slave_marked,
    when,
)
from mqtools.common.topics import is_system_group
from mqtools.remoting import fastjson
from mqtools.remoting.bodies import (
    ConsumerConnection,
    MessageQueue,
    ProducerConnection,
    SubscriptionGroupConfig,
)
from mqtools.remoting.codes import ResponseCode


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
    source: ReadSource = ReadSource.MASTER
    """Which replica of the broker set answered: master, or slave when the master is gone or silent."""
    pop_inflight: int | None = None
    """POP: popped and not acknowledged (the broker committed past them when it popped them, so `diff`
    leaves them out); None when the broker does not say (Apache's, a slave's)."""
    revive_due: int | None = None
    """POP: of `pop_inflight`, those past their invisible time: about to come back through the retry topic."""

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
    """Summed over brokers; None when no broker answered, or some broker set could not be read."""
    unreachable: list[Unreachable] = field(default_factory=list)
    """Broker sets no replica answered for: their queues (and lag) are not in `queues`."""
    pop: PopFigures | None = None
    """The group's POP figures, summed over the sets whose broker gave them; None when none did."""

    @property
    def total_diff(self) -> int:
        return sum(q.diff for q in self.queues)


@dataclass(slots=True)
class PopFigures:
    """What mq's brokers say of a group's POP consumption (mq's private GET_POP_IN_FLIGHT)."""

    popped: bool = False
    """The group pops (since a broker started, or has messages in flight): its offsets are the broker's."""
    inflight: int = 0
    """Popped and not acknowledged."""
    revive_due: int = 0
    """Of `inflight`, those past their invisible time."""
    revived: int = 0
    """Messages put back after their invisible time since the brokers started."""
    retry_inflight: int = 0
    """Of `inflight` and `revive_due`, those popped from the POP retry topics (not in `queues`)."""
    complete: bool = True
    """Every set gave them (False: some set could not be read, or its broker is Apache's or a slave, so the sums
    leave it out)."""


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
class ProducerClients:
    """A producer group's clients connected to the masters serving a topic, each once, and the masters that
    did not answer: a producer connected only to one of those is not in `clients`."""

    clients: list[ClientConnection]
    unreachable: list[Unreachable] = field(default_factory=list)


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
class GroupCatalogue:
    """Every group the broker sets that answered hold; the sets none of whose replicas answered, and those read
    from a slave (which learns its master's groups every few seconds: a group created meanwhile is not there)."""

    entries: list[GroupEntry]
    unreachable: list[Unreachable] = field(default_factory=list)
    from_slaves: list[str] = field(default_factory=list)

    def doubted(self) -> list[Unreachable]:
        """The sets whose answer cannot say a group is not there: not read, or read from a slave."""
        return [*self.unreachable, *(Unreachable(name, None, "read from a slave, which may not know the group yet")
                                     for name in self.from_slaves)]

    def not_found(self, groups: list[str]) -> MQClientError:
        """The error for groups not listed: not there (every set's master answered), or not known."""
        names = ", ".join(groups)
        doubted = self.doubted()
        if doubted:
            return UnreachableError(f"subscription group {names} is not on the broker sets read, and could not be "
                                    f"looked for on: {'; '.join(str(u) for u in doubted)}")
        return SubscriptionGroupNotExistError(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                              f"subscription group {names} does not exist on any master")


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
    pop: bool | None = None
    """RocketMQ 5: some broker serves the group by POP (its consume mode set so on a topic) or its clients pop
    (gRPC); None when no broker told."""
    unreachable: list[Unreachable] = field(default_factory=list)
    """Sets of the group no replica answered for: their lag is not in `diff_total`."""

    @property
    def version_desc(self) -> str | None:
        return None if self.min_version is None else version_desc(self.min_version)

    @property
    def pull_or_push(self) -> str | None:
        """What mqadmin's consumerProgress prints (GroupConsumeInfo.consumeTypeDesc): PULL, else PUSH."""
        if not self.online or self.consume_type is None:
            return None
        return "PULL" if self.consume_type == "CONSUME_ACTIVELY" else "PUSH"

    @property
    def kind(self) -> str | None:
        """PULL, PUSH or POP (a gRPC client's), with " (POP)" when the brokers serve a pulling or pushing
        client by POP; POP alone for a group nobody is online in that brokers would serve by POP."""
        if not self.online or self.consume_type is None:
            return "POP" if self.pop else None
        kind = "POP" if self.consume_type == "CONSUME_POP" else self.pull_or_push
        return f"{kind} (POP)" if self.pop and kind != "POP" else kind


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


# -- documents ---------------------------------------------------------------------------------------

GROUP_CONFIG_FIELDS = {
    # short name (the CLI's option) -> (SubscriptionGroupConfig field, JSON name, column)
    "consume": ("consume_enable", "consumeEnable", "CONSUME"),
    "broadcast": ("consume_broadcast_enable", "consumeBroadcastEnable", "BROADCAST"),
    "orderly": ("consume_message_orderly", "consumeMessageOrderly", "ORDERLY"),
    "from_min": ("consume_from_min_enable", "consumeFromMinEnable", "FROM MIN"),
    "retry_queues": ("retry_queue_nums", "retryQueueNums", "RETRY Q"),
    "retry_max": ("retry_max_times", "retryMaxTimes", "RETRY MAX"),
    "broker_id": ("broker_id", "brokerId", "READ FROM"),
    "slow_broker_id": ("which_broker_when_consume_slowly", "whichBrokerWhenConsumeSlowly", "WHEN SLOW"),
    "notify": ("notify_consumer_ids_changed_enable", "notifyConsumerIdsChangedEnable", "NOTIFY"),
}
"""The subscription group settings the documents show, in their order."""
def group_config_json(config: SubscriptionGroupConfig | None) -> dict[str, Any] | None:
    if config is None:
        return None
    return {json_name: getattr(config, name) for name, json_name, _ in GROUP_CONFIG_FIELDS.values()}


def _config_columns() -> list[Column]:
    return [Column(column) for _, _, column in GROUP_CONFIG_FIELDS.values()]


@renders("GroupList")
def group_list_view(listed: GroupCatalogue) -> View:
    entries = listed.entries
    rows = [[e.group, e.system, slave_marked(p.broker_name, ReadSource.SLAVE if p.broker_name in listed.from_slaves else ReadSource.MASTER),
             *(getattr(p.config, f[0]) for f in GROUP_CONFIG_FIELDS.values())]
            for e in entries for p in e.placements]
    data = {"groups": [{"group": e.group, "system": e.system, "brokers": [
        {"brokerName": p.broker_name, "addr": p.addr, **(group_config_json(p.config) or {})} for p in e.placements]}
        for e in entries]}
    return View("GroupList", [Column("GROUP"), Column("SYSTEM"), Column("BROKER"), *_config_columns()], rows, data,
                footer=[f"{len(entries)} groups, {sum(e.system for e in entries)} of them system groups",
                        *from_slaves_note(listed.from_slaves)], unreachable=listed.unreachable)


@renders("GroupChange")
def group_change_view(group: str, operation: str, changes: list[GroupChange]) -> View:
    """What a create or update wrote, broker by broker (old -> new where it changed)."""
    rows = []
    for c in changes:
        row: list[Any] = [c.broker_name, c.addr]
        for name, _, _ in GROUP_CONFIG_FIELDS.values():
            old, new = (None if c.old is None else getattr(c.old, name)), getattr(c.new, name)
            row.append(new if old is None or old == new else f"{cell(old)} -> {cell(new)}")
        rows.append(row)
    data = {"group": group, "operation": operation, "brokers": [
        {"brokerName": c.broker_name, "addr": c.addr, "old": group_config_json(c.old),
         "new": group_config_json(c.new)} for c in changes]}
    return View("GroupChange", [Column("BROKER"), Column("ADDR"), *_config_columns()], rows, data,
                title=f"{operation} {group}")


@renders("GroupProgress")
def group_progress_view(p: ConsumerProgress, topic: str | None = None) -> View:
    """Per queue, with totals; `topic` is the filter the progress was read with (None: every topic)."""
    rows = [[q.queue.topic, slave_marked(q.queue.broker_name, q.source), q.queue.queue_id, q.broker_offset,
             q.consumer_offset, q.diff, q.inflight, q.pop_inflight, when(q.last_timestamp_ms)] for q in p.queues]
    inflight = [q.inflight for q in p.queues]
    inflight_total = None if None in inflight else sum(i for i in inflight if i is not None)
    pop = p.pop
    data = {"group": p.group, "topic": topic, "consumeTps": p.consume_tps, "diffTotal": p.total_diff,
            "inflightTotal": inflight_total,
            "pop": None if pop is None else {
                "popped": pop.popped, "inflightTotal": pop.inflight, "reviveDueTotal": pop.revive_due,
                "retryInflight": pop.retry_inflight, "revived": pop.revived, "complete": pop.complete},
            "queues": [
                {"topic": q.queue.topic, "brokerName": q.queue.broker_name, "queueId": q.queue.queue_id,
                 "brokerOffset": q.broker_offset, "consumerOffset": q.consumer_offset, "diff": q.diff,
                 "inflight": q.inflight, "popInflight": q.pop_inflight, "reviveDue": q.revive_due,
                 "lastTimestampMs": q.last_timestamp_ms, "source": q.source}
                for q in p.queues]}
    least = "at least " if p.unreachable else ""
    footer = [(f"total: diff {least}{p.total_diff}, in flight {cell(inflight_total)}, "
               f"consume TPS {cell(p.consume_tps)}")]
    if pop is not None and pop.popped:
        some = "" if pop.complete else "at least "
        footer.append(f"POP: {some}{pop.inflight} popped and not acknowledged ({pop.revive_due} past their "
                      f"invisible time, {pop.retry_inflight} from retry topics), {pop.revived} came back since the "
                      f"brokers started; consumer offsets move when the broker pops")
    footer += from_slaves_note(sorted({q.queue.broker_name for q in p.queues if q.source == ReadSource.SLAVE}))
    return View("GroupProgress", [Column("TOPIC"), Column("BROKER"), Column("QID", True),
                                  Column("BROKER OFFSET", True), Column("CONSUMER OFFSET", True),
                                  Column("DIFF", True), Column("INFLIGHT", True), Column("POP INFLIGHT", True),
                                  Column("LAST CONSUMED")],
                rows, data, footer=footer, unreachable=p.unreachable)


@renders("GroupStatus")
def group_status_view(summaries: list[GroupSummary]) -> View:
    rows = [[s.group, s.online, s.version_desc, s.kind, s.message_model, s.consume_tps, s.diff_total]
            for s in summaries]
    data = {"groups": [
        {"group": s.group, "online": s.online, "minVersion": s.min_version, "versionDesc": s.version_desc,
         "consumeType": s.consume_type, "messageModel": s.message_model, "consumeTps": s.consume_tps,
         "diffTotal": s.diff_total, "pop": s.pop} for s in summaries]}
    return View("GroupStatus", [Column("GROUP"), Column("ONLINE", True), Column("VERSION"), Column("TYPE"),
                                Column("MODEL"), Column("TPS", True), Column("DIFF", True)], rows, data,
                unreachable=sets_missed(s.unreachable for s in summaries))


@renders("OffsetReset")
def offset_reset_view(group: str, topic: str, operation: str, target: str, rows: list[OffsetReset], *,
                      dry_run: bool, source: str | None = None) -> View:
    """old -> new per queue, and how far each moved (negative: back, to be consumed again)."""
    table = [[r.queue.broker_name, r.queue.queue_id, r.old, r.new, None if r.old is None else r.new - r.old]
             for r in rows]
    data = {"group": group, "topic": topic, "operation": operation, "target": target, "source": source,
            "dryRun": dry_run, "queues": [{"brokerName": r.queue.broker_name, "queueId": r.queue.queue_id,
                                           "old": r.old, "new": r.new, "pushed": r.pushed} for r in rows]}
    title = f"{'dry run, nothing changed: ' if dry_run else ''}{operation} {group} on {topic} to {target}"
    warning = unpushed_warning(group, rows)
    return View("OffsetReset", [Column("BROKER"), Column("QID", True), Column("OLD", True), Column("NEW", True),
                                Column("MOVE", True)], table, data, title=title,
                footer=[f"warning: {warning}"] if warning else [])
