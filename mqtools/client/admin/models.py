"""Typed results of the admin API: what `mq admin`, `mq top` and drills show, and nothing raw.

The wire bodies (`mqtools.remoting.bodies`) are RocketMQ's shapes; these models are the toolkit's.
Each one is built by a `from_*` parser from the server's answer, in one place. A figure the server
did not give (a key missing from runtime info, a private request Apache RocketMQ does not answer, a
broker that timed out) is None, never 0 or -1, so views can print `n/a` and JSON `null`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqtools.common.brokerrole import MASTER_ID
from mqtools.remoting.bodies import ConsumerConnection, MessageQueue, ProducerConnection


def _int(raw: dict[str, Any], key: str) -> int | None:
    value = raw.get(key)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _float(raw: dict[str, Any], key: str, *, first: bool = False) -> float | None:
    """A number, or the first of RocketMQ's space-separated triples ("12.00 10.50 9.80")."""
    value = raw.get(key)
    if value is None or value == "":
        return None
    text = str(value).split()[0] if first and str(value).strip() else value
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _bool(raw: dict[str, Any], key: str) -> bool | None:
    value = raw.get(key)
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    return None


def _ms(raw: dict[str, Any], key: str) -> int | None:
    """A timestamp in ms; RocketMQ writes 0 for 'never', which is not a time."""
    value = _int(raw, key)
    return value if value and value > 0 else None


def queue_key(mq: MessageQueue) -> tuple[str, str, int]:
    """The order mqadmin sorts queues in: topic, broker name, queue id."""
    return (mq.topic, mq.broker_name, mq.queue_id)


# -- brokers -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BrokerRuntime:
    """GET_BROKER_RUNTIME_INFO parsed into numbers (RocketMQ's runtime KV table)."""

    version_desc: str | None
    put_tps: float | None
    get_transferred_tps: float | None
    get_found_tps: float | None
    get_miss_tps: float | None
    commitlog_min_offset: int | None
    commitlog_max_offset: int | None
    commitlog_disk_ratio: float | None
    dispatch_behind_bytes: int | None
    put_message_times_total: int | None
    put_message_size_total: int | None
    put_total_today_now: int | None
    put_total_today_morning: int | None
    put_total_yesterday_morning: int | None
    get_total_today_now: int | None
    get_total_today_morning: int | None
    get_total_yesterday_morning: int | None
    send_queue_size: int | None
    send_queue_head_wait_ms: int | None
    pull_queue_size: int | None
    pull_queue_head_wait_ms: int | None
    page_cache_lock_time_ms: int | None
    earliest_message_ms: int | None
    boot_timestamp_ms: int | None
    broker_active: bool | None
    ha_connection_count: int | None
    slave_fall_behind_bytes: int | None
    master_addr: str | None
    raw: dict[str, str] = field(repr=False)

    @classmethod
    def from_table(cls, raw: dict[str, str]) -> BrokerRuntime:
        return cls(
            version_desc=raw.get("brokerVersionDesc") or None,
            put_tps=_float(raw, "putTps", first=True),
            get_transferred_tps=_float(raw, "getTransferredTps", first=True)
            if "getTransferredTps" in raw else _float(raw, "getTransferedTps", first=True),
            get_found_tps=_float(raw, "getFoundTps", first=True),
            get_miss_tps=_float(raw, "getMissTps", first=True),
            commitlog_min_offset=_int(raw, "commitLogMinOffset"),
            commitlog_max_offset=_int(raw, "commitLogMaxOffset"),
            commitlog_disk_ratio=_float(raw, "commitLogDiskRatio"),
            dispatch_behind_bytes=_int(raw, "dispatchBehindBytes"),
            put_message_times_total=_int(raw, "putMessageTimesTotal"),
            put_message_size_total=_int(raw, "putMessageSizeTotal"),
            put_total_today_now=_int(raw, "msgPutTotalTodayNow"),
            put_total_today_morning=_int(raw, "msgPutTotalTodayMorning"),
            put_total_yesterday_morning=_int(raw, "msgPutTotalYesterdayMorning"),
            get_total_today_now=_int(raw, "msgGetTotalTodayNow"),
            get_total_today_morning=_int(raw, "msgGetTotalTodayMorning"),
            get_total_yesterday_morning=_int(raw, "msgGetTotalYesterdayMorning"),
            send_queue_size=_int(raw, "sendThreadPoolQueueSize"),
            send_queue_head_wait_ms=_int(raw, "sendThreadPoolQueueHeadWaitTimeMills"),
            pull_queue_size=_int(raw, "pullThreadPoolQueueSize"),
            pull_queue_head_wait_ms=_int(raw, "pullThreadPoolQueueHeadWaitTimeMills"),
            page_cache_lock_time_ms=_int(raw, "pageCacheLockTimeMills"),
            earliest_message_ms=_ms(raw, "earliestMessageTimeStamp"),
            boot_timestamp_ms=_ms(raw, "bootTimestamp"),
            broker_active=_bool(raw, "brokerActive"),
            ha_connection_count=_int(raw, "haConnectionCount"),
            slave_fall_behind_bytes=_int(raw, "slaveFallBehindMuch"),
            master_addr=raw.get("masterAddr") or None,
            raw=dict(raw),
        )

    @property
    def average_message_size(self) -> float | None:
        """Bytes per stored message since boot: turns a byte diff into a message count."""
        if not self.put_message_times_total or self.put_message_size_total is None:
            return None
        return self.put_message_size_total / self.put_message_times_total


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """One name server's view of one broker: when it last heard it, by the name server's own clock."""

    namesrv: str
    last_update_ms: int
    now_ms: int
    timeout_ms: int

    @property
    def age_ms(self) -> int:
        return max(0, self.now_ms - self.last_update_ms)

    @property
    def expires_in_ms(self) -> int:
        """Time left before this name server would drop the broker."""
        return self.timeout_ms - self.age_ms


@dataclass(slots=True)
class BrokerRow:
    """One broker of a cluster snapshot: identity, heartbeats per name server, runtime figures."""

    cluster: str
    broker_name: str
    broker_id: int
    addr: str
    heartbeats: dict[str, Heartbeat | None] = field(default_factory=dict)
    """name server -> its live-table entry; None where the name server lacks the private request."""
    runtime: BrokerRuntime | None = None
    error: str | None = None
    """Why `runtime` is None (unreachable, timed out, refused), when it was asked for."""

    @property
    def is_master(self) -> bool:
        return self.broker_id == MASTER_ID

    @property
    def heartbeat_age_ms(self) -> int | None:
        """Age of the freshest registration any name server holds; None when none could tell."""
        ages = [h.age_ms for h in self.heartbeats.values() if h is not None]
        return min(ages) if ages else None


@dataclass(slots=True)
class ClusterSnapshot:
    """Every broker the name servers know, one row each, in mqadmin's clusterList order."""

    namesrv_addrs: list[str]
    clusters: dict[str, list[str]]
    """cluster name -> broker names, sorted."""
    brokers: list[BrokerRow]
    live_table_available: bool
    """False when no name server answered the private live-table request (Apache RocketMQ)."""

    def masters(self) -> list[BrokerRow]:
        return [b for b in self.brokers if b.is_master]

    def group(self, broker_name: str) -> list[BrokerRow]:
        return [b for b in self.brokers if b.broker_name == broker_name]


# -- HA ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SlaveConnection:
    """A master's view of one connected slave (HAConnectionRuntimeInfo)."""

    addr: str
    ack_offset: int | None
    """The slave's last acknowledged commitlog offset; None before its first report."""
    diff_bytes: int | None
    in_sync: bool | None
    transfer_bytes_per_s: float | None
    transfer_from: int | None


@dataclass(frozen=True, slots=True)
class HAClientInfo:
    """A slave's view of its replication (HAClientRuntimeInfo)."""

    master_addr: str | None
    max_offset: int | None
    transfer_bytes_per_s: float | None
    last_read_ms: int | None
    last_write_ms: int | None
    master_flush_offset: int | None
    activated: bool | None


@dataclass(frozen=True, slots=True)
class HAStatus:
    """GET_BROKER_HA_STATUS (HARuntimeInfo): a master with its slaves, or a slave with its client."""

    is_master: bool
    commitlog_max_offset: int | None
    in_sync_slaves: int | None
    slaves: list[SlaveConnection]
    client: HAClientInfo | None
    """Only for a slave."""

    @classmethod
    def from_json(cls, info: dict[str, Any]) -> HAStatus:
        is_master = _bool(info, "master")
        if is_master is None:
            is_master = not info.get("haClientRuntimeInfo")
        slaves = [_slave(c) for c in info.get("haConnectionInfo") or [] if isinstance(c, dict)]
        raw_client = info.get("haClientRuntimeInfo")
        client = None if is_master or not isinstance(raw_client, dict) else HAClientInfo(
            master_addr=raw_client.get("masterAddr") or None,
            max_offset=_int(raw_client, "maxOffset"),
            transfer_bytes_per_s=_float(raw_client, "transferredByteInSecond"),
            last_read_ms=_ms(raw_client, "lastReadTimestamp"),
            last_write_ms=_ms(raw_client, "lastWriteTimestamp"),
            master_flush_offset=_int(raw_client, "masterFlushOffset"),
            activated=_bool(raw_client, "activated"),
        )
        return cls(is_master, _int(info, "masterCommitLogMaxOffset"), _int(info, "inSyncSlaveNums"), slaves, client)

    @property
    def replicating(self) -> bool:
        """A slave with a live connection to its master; a master with at least one slave."""
        return bool(self.client and self.client.activated) if not self.is_master else bool(self.slaves)


def _slave(raw: dict[str, Any]) -> SlaveConnection:
    ack = _int(raw, "slaveAckOffset")
    return SlaveConnection(
        addr=str(raw.get("addr") or ""),
        ack_offset=ack if ack is not None and ack >= 0 else None,
        diff_bytes=_int(raw, "diff") if ack is not None and ack >= 0 else None,
        in_sync=_bool(raw, "inSync"),
        transfer_bytes_per_s=_float(raw, "transferredByteInSecond"),
        transfer_from=_int(raw, "transferFromWhere"),
    )


# -- consumers, producers, offsets -------------------------------------------------------------


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


# -- messages, dead letters, broker-wide consume stats -----------------------------------------


@dataclass(frozen=True, slots=True)
class QueueLag:
    """One queue of one group on one broker, as GET_BROKER_CONSUME_STATS tells it."""

    group: str
    queue: MessageQueue
    broker_offset: int
    consumer_offset: int
    last_timestamp_ms: int | None
    """Store time of the last consumed message; None when nothing was consumed."""

    @property
    def diff(self) -> int:
        return self.broker_offset - self.consumer_offset


@dataclass(frozen=True, slots=True)
class BrokerConsumeStats:
    """Every group's lag on one broker (RocketMQ's ConsumeStatsList)."""

    broker_addr: str | None
    total_diff: int
    queues: list[QueueLag]


@dataclass(frozen=True, slots=True)
class MessageTrack:
    """Whether one consumer group has consumed a message (RocketMQ's MessageTrack)."""

    group: str
    track_type: str
    """CONSUMED, CONSUMED_BUT_FILTERED, NOT_CONSUME_YET, NOT_ONLINE, PULL or UNKNOWN."""
    exception_desc: str | None = None


@dataclass(frozen=True, slots=True)
class QueueSpan:
    """The offsets of a queue to read: [begin, end)."""

    queue: MessageQueue
    begin: int
    end: int


@dataclass(frozen=True, slots=True)
class Resend:
    """The outcome of putting one dead message back for its group."""

    msg_id: str
    topic: str | None
    """The topic the message was first sent to; None when the id was not found in the DLQ."""
    queue: MessageQueue | None
    """Where the resent copy was stored; None when it was not resent."""
    offset_msg_id: str | None
    error: str | None
    """Why it was not resent; None when it was."""


@dataclass(frozen=True, slots=True)
class TopicGroupStats:
    """One row of statsAll: a topic and one of its groups (group None: a topic nobody consumes)."""

    topic: str
    group: str | None
    accumulation: int | None
    in_tps: float | None
    out_tps: float | None
    in_24h: int | None
    out_24h: int | None


@dataclass(frozen=True, slots=True)
class SendRT:
    """Timed sync sends to one broker (clusterRT's probe): per send, milliseconds and whether it was stored."""

    broker_name: str
    samples: list[tuple[float, bool]]

    @property
    def ok(self) -> int:
        return sum(1 for _, stored in self.samples if stored)

    @property
    def failed(self) -> int:
        return len(self.samples) - self.ok

    @property
    def avg_ok_ms(self) -> float | None:
        """Mean time of the sends that were stored; None when none was."""
        times = [ms for ms, stored in self.samples if stored]
        return sum(times) / len(times) if times else None

    @property
    def mqadmin_rt_ms(self) -> float | None:
        """mqadmin's figure: the mean over every send but the first (which pays for route and connection),
        failed ones included; None with fewer than two sends."""
        rest = [ms for ms, _ in self.samples[1:]]
        return sum(rest) / len(rest) if rest else None
