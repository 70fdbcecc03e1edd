"""Typed results about brokers and the cluster: runtime figures, heartbeats, consume stats, send RT.

Their documents (cluster list and RT, a broker's status, configuration, consume stats, statsAll) are
rendered here; `broker_json` is a broker's row wherever a document lists brokers (mq top's too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqtools.client.admin.models.parse import opt_bool, opt_float, opt_int, opt_ms
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.presentation import Column, Unreachable, View, cell, renders, when
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
    reason: str | None = None
    """The same in a few words (connection refused, timed out, TLS: certificate has expired), as a partial
    document names it."""

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
    sums_partial: bool = False
    """The TPS and 24-hour sums leave out a set of the topic with no master (its counters are its master's):
    lower bounds, not totals."""
    backlog_partial: bool = False
    """The backlog leaves out a set whose offsets of the group could not be read: a lower bound."""


@dataclass(frozen=True, slots=True)
class StatsAll:
    """statsAll's rows, and the broker sets whose figures are not in them: a set of a topic's route with no
    master (the put and get counters are its master's), or whose groups no replica answered for."""

    rows: list[TopicGroupStats]
    unreachable: list[Unreachable] = field(default_factory=list)


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


# -- documents ---------------------------------------------------------------------------------------


def _diff(now: int | None, then: int | None) -> int | None:
    return None if now is None or then is None else now - then


def _totals(r: BrokerRuntime | None) -> list[int | None]:
    """Messages in and out yesterday and today so far (mqadmin's clusterList -m)."""
    if r is None:
        return [None] * 4
    return [_diff(r.put_total_today_morning, r.put_total_yesterday_morning),
            _diff(r.get_total_today_morning, r.get_total_yesterday_morning),
            _diff(r.put_total_today_now, r.put_total_today_morning),
            _diff(r.get_total_today_now, r.get_total_today_morning)]


def _expires(b: BrokerRow) -> int | None:
    known = [h.expires_in_ms for h in b.heartbeats.values() if h is not None]
    return max(known) if known else None


def _age(ms: int | None) -> str | None:
    return None if ms is None else f"{ms / 1000:.1f}s"


def _ratio(value: float | None) -> str | None:
    return None if value is None else f"{value * 100:.1f}%"


def broker_json(b: BrokerRow, runtime: BrokerRuntime | None) -> dict[str, Any]:
    """One broker as a JSON document lists it (cluster list; mq top's brokers view takes the keys it shares);
    `runtime` is the broker's latest runtime answer, None when it has none."""
    r = runtime
    in_y, out_y, in_t, out_t = _totals(r)
    return {
        "cluster": b.cluster, "brokerName": b.broker_name, "brokerId": b.broker_id, "addr": b.addr,
        "role": "MASTER" if b.is_master else "SLAVE", "version": r.version_desc if r else None,
        "inTps": r.put_tps if r else None, "outTps": r.get_transferred_tps if r else None,
        "heartbeatAgeMs": b.heartbeat_age_ms, "expiresInMs": _expires(b),
        "heartbeats": {ns: None if h is None else {"ageMs": h.age_ms, "timeoutMs": h.timeout_ms}
                       for ns, h in b.heartbeats.items()},
        "commitLogMinOffset": r.commitlog_min_offset if r else None,
        "commitLogMaxOffset": r.commitlog_max_offset if r else None,
        "diskRatio": r.commitlog_disk_ratio if r else None,
        "inTotalYesterday": in_y, "outTotalYesterday": out_y, "inTotalToday": in_t, "outTotalToday": out_t,
        "error": b.error,
    }


@renders("ClusterList")
def cluster_list_view(snap: ClusterSnapshot, cluster: str | None, more: bool) -> View:
    """Every broker of `cluster` (None: all), with a row of its own for each broker set without a master;
    `more`: yesterday's and today's message totals in place of load, heartbeats and disk."""
    rows = [b for b in snap.brokers if cluster is None or b.cluster == cluster]
    if more:
        columns = [Column("CLUSTER"), Column("BROKER"), Column("BID", True), Column("IN YESTERDAY", True),
                   Column("OUT YESTERDAY", True), Column("IN TODAY", True), Column("OUT TODAY", True)]
        table = [[b.cluster, b.broker_name, b.broker_id, *_totals(b.runtime)] for b in rows]
    else:
        columns = [Column("CLUSTER"), Column("BROKER"), Column("BID", True), Column("ROLE"), Column("ADDR"),
                   Column("VERSION"), Column("IN TPS", True), Column("OUT TPS", True), Column("HEARTBEAT", True),
                   Column("EXPIRES IN", True), Column("COMMITLOG MAX", True), Column("DISK", True)]
        table = [[b.cluster, b.broker_name, b.broker_id, "master" if b.is_master else "slave", b.addr,
                  b.runtime.version_desc if b.runtime else None,
                  b.runtime.put_tps if b.runtime else None, b.runtime.get_transferred_tps if b.runtime else None,
                  _age(b.heartbeat_age_ms), _age(_expires(b)),
                  b.runtime.commitlog_max_offset if b.runtime else None,
                  _ratio(b.runtime.commitlog_disk_ratio) if b.runtime else None] for b in rows]
    footer = [] if snap.live_table_available else [
        "heartbeat ages: n/a (the name servers do not answer mq's private GET_BROKER_LIVE_TABLE)"]
    orphans = snap.without_master(cluster)
    for c, name in orphans:
        marker = [] if more else ["no master"]
        table.append([c, name, 0, *marker, *([None] * (len(columns) - 3 - len(marker)))])
        footer.append(f"broker set {name} has no master registered: its slaves serve reads only "
                      f"(mq admin ha status -b {name})")
    data = {"namesrv": snap.namesrv_addrs, "clusters": {c: n for c, n in snap.clusters.items()
                                                        if cluster is None or c == cluster},
            "brokers": [broker_json(b, b.runtime) for b in rows],
            "brokerSetsWithoutMaster": [{"cluster": c, "brokerName": name} for c, name in orphans]}
    unreachable = [Unreachable(b.broker_name, b.addr, b.reason or b.error) for b in rows if b.error]
    return View("ClusterList", columns, table, data, footer=footer, unreachable=unreachable)


@renders("ClusterRT")
def cluster_rt_view(probes: list[SendRT], masters: dict[str, str], amount: int, size: int) -> View:
    """Send RT per master; `masters` maps each probed broker name to its address."""
    rows = [[p.broker_name, masters[p.broker_name], p.ok, p.failed, p.avg_ok_ms] for p in probes]
    data = [{"brokerName": p.broker_name, "addr": masters[p.broker_name], "ok": p.ok, "failed": p.failed,
             "avgRtMs": p.avg_ok_ms} for p in probes]
    return View("ClusterRT", [Column("BROKER"), Column("ADDR"), Column("OK", True), Column("FAILED", True),
                              Column("AVG RT MS", True)], rows, {"amount": amount, "size": size, "brokers": data})


def _key_values(kind: str, addr: str, values: dict[str, str], field_name: str) -> View:
    ordered = dict(sorted(values.items()))
    return View(kind, [Column("KEY"), Column("VALUE")], [[k, v] for k, v in ordered.items()],
                {"brokerAddr": addr, field_name: ordered})


@renders("BrokerStatus")
def broker_status_view(addr: str, runtime: BrokerRuntime) -> View:
    """The broker's runtime table as it sent it (strings), sorted by key."""
    return _key_values("BrokerStatus", addr, runtime.raw, "runtime")


@renders("BrokerConfig")
def broker_config_view(addr: str, config: dict[str, str]) -> View:
    return _key_values("BrokerConfig", addr, config, "config")


@renders("BrokerConsumeStats")
def broker_consume_stats_view(addr: str, stats: BrokerConsumeStats, level: int = 0) -> View:
    """The queues with a lag of at least `level`; the total is the broker's, over every queue."""
    shown = [q for q in stats.queues if q.diff >= level]
    rows = [[q.queue.topic, q.group, q.queue.broker_name, q.queue.queue_id, q.broker_offset, q.consumer_offset,
             q.diff, when(q.last_timestamp_ms)] for q in shown]
    data = {"brokerAddr": addr, "totalDiff": stats.total_diff, "queues": [
        {"topic": q.queue.topic, "group": q.group, "brokerName": q.queue.broker_name, "queueId": q.queue.queue_id,
         "brokerOffset": q.broker_offset, "consumerOffset": q.consumer_offset, "diff": q.diff,
         "lastTimestamp": q.last_timestamp_ms} for q in shown]}
    return View("BrokerConsumeStats", [Column("TOPIC"), Column("GROUP"), Column("BROKER"), Column("QID", True),
                                       Column("BROKER OFFSET", True), Column("CONSUMER OFFSET", True),
                                       Column("DIFF", True), Column("LAST CONSUMED")], rows, data,
                footer=[f"total diff: {stats.total_diff}"])


def _at_least(value: float | None, partial: bool) -> float | str | None:
    """A table's sum that leaves a set out, marked as the lower bound it is ("at least", as partial totals say)."""
    return f"at least {cell(value)}" if partial and value is not None else value


@renders("StatsAll")
def stats_all_view(stats: StatsAll) -> View:
    rows = stats.rows
    table = [[r.topic, r.group, _at_least(r.accumulation, r.backlog_partial),
              *(_at_least(v, r.sums_partial) for v in (r.in_tps, r.out_tps, r.in_24h, r.out_24h))] for r in rows]
    data = {"rows": [{"topic": r.topic, "group": r.group, "accumulation": r.accumulation, "inTps": r.in_tps,
                      "outTps": r.out_tps, "inMsg24Hour": r.in_24h, "outMsg24Hour": r.out_24h} for r in rows]}
    return View("StatsAll", [Column("TOPIC"), Column("GROUP"), Column("BACKLOG", True), Column("IN TPS", True),
                             Column("OUT TPS", True), Column("IN 24H", True), Column("OUT 24H", True)], table, data,
                unreachable=stats.unreachable)
