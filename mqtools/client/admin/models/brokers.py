"""Typed results about brokers and the cluster: runtime figures, heartbeats, consume stats, send RT."""

from __future__ import annotations

from dataclasses import dataclass, field

from mqtools.client.admin.models.parse import opt_bool, opt_float, opt_int, opt_ms
from mqtools.common.brokerrole import MASTER_ID
from mqtools.remoting.bodies import MessageQueue


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
            put_tps=opt_float(raw, "putTps", first=True),
            get_transferred_tps=opt_float(raw, "getTransferredTps", first=True)
            if "getTransferredTps" in raw else opt_float(raw, "getTransferedTps", first=True),
            get_found_tps=opt_float(raw, "getFoundTps", first=True),
            get_miss_tps=opt_float(raw, "getMissTps", first=True),
            commitlog_min_offset=opt_int(raw, "commitLogMinOffset"),
            commitlog_max_offset=opt_int(raw, "commitLogMaxOffset"),
            commitlog_disk_ratio=opt_float(raw, "commitLogDiskRatio"),
            dispatch_behind_bytes=opt_int(raw, "dispatchBehindBytes"),
            put_message_times_total=opt_int(raw, "putMessageTimesTotal"),
            put_message_size_total=opt_int(raw, "putMessageSizeTotal"),
            put_total_today_now=opt_int(raw, "msgPutTotalTodayNow"),
            put_total_today_morning=opt_int(raw, "msgPutTotalTodayMorning"),
            put_total_yesterday_morning=opt_int(raw, "msgPutTotalYesterdayMorning"),
            get_total_today_now=opt_int(raw, "msgGetTotalTodayNow"),
            get_total_today_morning=opt_int(raw, "msgGetTotalTodayMorning"),
            get_total_yesterday_morning=opt_int(raw, "msgGetTotalYesterdayMorning"),
            send_queue_size=opt_int(raw, "sendThreadPoolQueueSize"),
            send_queue_head_wait_ms=opt_int(raw, "sendThreadPoolQueueHeadWaitTimeMills"),
            pull_queue_size=opt_int(raw, "pullThreadPoolQueueSize"),
            pull_queue_head_wait_ms=opt_int(raw, "pullThreadPoolQueueHeadWaitTimeMills"),
            page_cache_lock_time_ms=opt_int(raw, "pageCacheLockTimeMills"),
            earliest_message_ms=opt_ms(raw, "earliestMessageTimeStamp"),
            boot_timestamp_ms=opt_ms(raw, "bootTimestamp"),
            broker_active=opt_bool(raw, "brokerActive"),
            ha_connection_count=opt_int(raw, "haConnectionCount"),
            slave_fall_behind_bytes=opt_int(raw, "slaveFallBehindMuch"),
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

    def without_master(self, cluster: str | None = None) -> list[tuple[str, str]]:
        """(cluster, broker name) of the sets with brokers registered but no master among them: read-only
        until a master returns or is elected."""
        return [(c, name) for c, names in sorted(self.clusters.items()) if cluster is None or c == cluster
                for name in names if self.group(name) and not any(b.is_master for b in self.group(name))]


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
