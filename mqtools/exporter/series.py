"""Admin API answers in, samples out (sans-IO): what each poll of `mq exporter` contributes to a scrape.

A figure the cluster did not give (a key missing from a runtime table, a slave whose diff is not known, a
value that does not parse) gives no sample: the series is absent from the scrape, never 0.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from mqtools.client.admin.models.brokers import BrokerRuntime, ClusterSnapshot
from mqtools.client.admin.models.groups import ConsumerProgress, GroupConnections
from mqtools.client.admin.models.ha_readiness import HAReadiness
from mqtools.client.admin.models.live import NamesrvStatus
from mqtools.client.admin.models.proxies import ProxyClients
from mqtools.client.admin.models.timer import TimerStatus
from mqtools.client.admin.models.topics import TopicStatus
from mqtools.common.topics import is_dlq_topic, is_retry_topic
from mqtools.exporter.catalogue import PUT_DISTRIBUTION, RUNTIME_KEYS

#: rocketmq-exporter's msgModel label: MessageModel's ordinal (BROADCASTING 0, CLUSTERING 1); a group with
#: nobody online counts as CLUSTERING, as there.
MSG_MODEL = {"BROADCASTING": "0", "CLUSTERING": "1"}
UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4, "KB": 1024, "MB": 1024**2,
         "GB": 1024**3, "TB": 1024**4}
_SIZE = re.compile(r"(Total|Free)\s*:\s*([\d.]+)\s*([KMGT]i?B|B)")
#: Runtime info keys RocketMQ 5 renamed (apache/rocketmq #4785, a spelling fix): the 4.x name catalogue.RUNTIME_KEYS
#: reads -> the 5.x one, read where the 4.x one is missing (an Apache 5.5.0 broker gives only the new one).
RENAMED_KEYS = {"getTransferedTps": "getTransferredTps"}


class Sample(NamedTuple):
    name: str
    labels: tuple[str, ...]
    """Values in the order the family's label names go (catalogue.FAMILIES)."""
    value: float


def _number(text: str | None, index: int | None = None) -> float | None:
    if text is None:
        return None
    parts = text.split()
    if index is not None:
        if index >= len(parts):
            return None
        text = parts[index]
    elif len(parts) == 2 and parts[1] in UNITS:  # "12.5 MiB", as 4.x writes remainHowManyDataToFlush
        value = _number(parts[0])
        return None if value is None else value * UNITS[parts[1]]
    try:
        return float(text)
    except ValueError:
        return None


def runtime_samples(cluster: str, addr: str, runtime: BrokerRuntime) -> list[Sample]:
    """rocketmq_brokeruntime_* of one broker node, labelled as rocketmq-exporter labels them."""
    raw = runtime.raw
    labels = (cluster, addr, "", runtime.version_desc or "", raw.get("bootTimestamp", ""), raw.get("brokerVersion", ""))
    out = []
    for suffix, (key, index) in RUNTIME_KEYS.items():
        value = _number(raw.get(key, raw.get(RENAMED_KEYS.get(key, ""))), index)
        if value is not None:
            out.append(Sample(f"rocketmq_brokeruntime_{suffix}", labels, value))
    for kind, amount, unit in _SIZE.findall(raw.get("commitLogDirCapacity", "")):
        out.append(Sample(f"rocketmq_brokeruntime_commitlogdir_capacity_{kind.lower()}", labels,
                          float(amount) * UNITS[unit]))
    buckets = dict(re.findall(r"\[([^\]]+)\]:(\d+)", raw.get("putMessageDistributeTime", "")))
    for suffix, bucket in PUT_DISTRIBUTION.items():
        if bucket in buckets:
            out.append(Sample(f"rocketmq_brokeruntime_pmdt_{suffix}", labels, float(buckets[bucket])))
    return out


#: mq's own figures of a broker process, from its runtime info: family -> key, and the factor to the family's unit.
NODE_FIGURES = {"mq_broker_open_files": ("openFileDescriptors", 1.0),
                "mq_broker_open_files_limit": ("maxOpenFileDescriptors", 1.0),
                "mq_broker_tls_certificate_expiry_timestamp_seconds": ("tlsCertificateNotAfter", 0.001)}


def node_samples(cluster: str, addr: str, runtime: BrokerRuntime) -> list[Sample]:
    """mq's own figures of the broker process (NODE_FIGURES), for every node (a slave holds queue files and serves
    TLS too); nothing from a broker that does not report them (Apache's)."""
    labels = (cluster, addr)
    return [Sample(name, labels, value * factor) for name, (key, factor) in NODE_FIGURES.items()
            if (value := _number(runtime.raw.get(key))) is not None]


def commitlog_diffs(snapshot: ClusterSnapshot, runtimes: Mapping[str, BrokerRuntime]) -> list[Sample]:
    """rocketmq_broker_commitlog_diff: each slave's distance from its master, both max offsets known."""
    out = []
    for master in snapshot.masters():
        top = runtimes.get(master.addr)
        for slave in snapshot.group(master.broker_name):
            low = runtimes.get(slave.addr)
            if slave.is_master or top is None or low is None or top.commitlog_max_offset is None \
                    or low.commitlog_max_offset is None:
                continue
            out.append(Sample("rocketmq_broker_commitlog_diff", (slave.cluster, slave.addr, slave.broker_name),
                              float(top.commitlog_max_offset - low.commitlog_max_offset)))
    return out


def master_up_samples(snapshot: ClusterSnapshot, answered: Mapping[str, bool]) -> list[Sample]:
    """mq_broker_set_master_up per broker set the name servers list: 0 without a registered master, or when the
    master's last runtime poll failed (`answered`: address -> its last poll's outcome); none for a master not
    polled yet (a new one, or any at the exporter's start: up to one poll's timeout against a hung one)."""
    out = []
    for cluster, names in sorted(snapshot.clusters.items()):
        for name in names:
            master = next((b for b in snapshot.group(name) if b.is_master), None)
            up = False if master is None else answered.get(master.addr)
            if up is not None:
                out.append(Sample("mq_broker_set_master_up", (cluster, name), 1.0 if up else 0.0))
    return out


def broker_up_samples(snapshot: ClusterSnapshot, answered: Mapping[str, bool]) -> list[Sample]:
    """mq_broker_up per broker the name servers list: 1 when its last runtime poll answered, 0 when it did not (a
    slave that stopped answering, or whose certificate expired, has no other series that says so); none for a
    broker not polled yet."""
    return [Sample("mq_broker_up", (b.cluster, b.addr, b.broker_name, "master" if b.is_master else "slave"),
                   1.0 if ok else 0.0)
            for b in snapshot.brokers if (ok := answered.get(b.addr)) is not None]


def namesrv_samples(probed: Iterable[NamesrvStatus]) -> list[Sample]:
    """Per configured name server, each asked on its own (the client's failover would hide one that is down):
    mq_namesrv_up, the brokers it lists (one that misses some, partitioned from them, routes clients past them),
    and mq_namesrv_tls_certificate_expiry_timestamp_seconds where the exporter's own verified handshake saw it (a
    name server reports nothing of its own; none without TLS or verification)."""
    out = []
    for status in probed:
        ns = (status.addr,)
        out.append(Sample("mq_namesrv_up", ns, 1.0 if status.reachable else 0.0))
        if status.brokers is not None:
            out.append(Sample("mq_namesrv_brokers", ns, float(status.brokers)))
        if status.certificate_not_after is not None:
            out.append(Sample("mq_namesrv_tls_certificate_expiry_timestamp_seconds", ns, status.certificate_not_after))
    return out


def heartbeat_samples(snapshot: ClusterSnapshot) -> list[Sample]:
    """mq_namesrv_heartbeat_age_seconds, where the name server tells it (mq's live table; not Apache's)."""
    return [Sample("mq_namesrv_heartbeat_age_seconds", (ns, b.cluster, b.broker_name, b.addr), beat.age_ms / 1000)
            for b in snapshot.brokers for ns, beat in b.heartbeats.items() if beat is not None]


def topic_samples(cluster_of: Mapping[str, str], status: TopicStatus) -> list[Sample]:
    """rocketmq_producer_offset (rocketmq_topic_retry_offset for a retry topic) per broker."""
    if is_dlq_topic(status.topic):
        return []
    sums: dict[str, int] = {}
    for q in status.queues:
        sums[q.queue.broker_name] = sums.get(q.queue.broker_name, 0) + q.max_offset
    name = "rocketmq_topic_retry_offset" if is_retry_topic(status.topic) else "rocketmq_producer_offset"
    return [Sample(name, (cluster_of.get(broker, ""), broker, status.topic), float(total))
            for broker, total in sorted(sums.items())]


def group_samples(cluster_of: Mapping[str, str], progress: ConsumerProgress, conns: GroupConnections | None,
                  store_latency_ms: Mapping[tuple[str, str], int]) -> list[Sample]:
    """A group's diff per topic (retry and dead-letter topics in their own families; none while some broker set
    could not be read), its committed offsets per broker and topic, and the store-time latency per broker and topic (`store_latency_ms`, read by the
    poll: the oldest unconsumed message's age, 0 when caught up)."""
    online = str(len(conns.connections)) if conns is not None else "0"
    model = MSG_MODEL.get((conns.message_model or "CLUSTERING") if conns is not None else "CLUSTERING", "1")
    diffs: dict[str, int] = {}
    offsets: dict[tuple[str, str], int] = {}
    for q in progress.queues:
        diffs[q.queue.topic] = diffs.get(q.queue.topic, 0) + q.diff
        if q.consumer_offset is not None:
            key = (q.queue.broker_name, q.queue.topic)
            offsets[key] = offsets.get(key, 0) + q.consumer_offset
    out = []
    # as rocketmq-exporter, a broadcast group's diff means nothing; and a diff summed without a broker set that
    # could not be read is an undercount (the series has no broker label to say which): not known, so absent
    if model == MSG_MODEL["CLUSTERING"] and not progress.unreachable:
        for topic, diff in sorted(diffs.items()):
            name = "rocketmq_group_retrydiff" if is_retry_topic(topic) else \
                "rocketmq_group_dlqdiff" if is_dlq_topic(topic) else "rocketmq_group_diff"
            out.append(Sample(name, (progress.group, topic, online, model), float(diff)))
    for (broker, topic), total in sorted(offsets.items()):
        out.append(Sample("rocketmq_consumer_offset", (cluster_of.get(broker, ""), broker, topic, progress.group),
                          float(total)))
    for (broker, topic), ms in sorted(store_latency_ms.items()):
        out.append(Sample("rocketmq_group_get_latency_by_storetime",
                          (cluster_of.get(broker, ""), broker, topic, progress.group), float(ms)))
    return out


def timer_samples(cluster_of: Mapping[str, str], status: TimerStatus) -> list[Sample]:
    """mq_timer_*: per broker set read (its master, else a slave), what its timer wheel holds and how far
    behind it is; a broker without a timer store, or a figure it did not give, has no sample."""
    out = []
    for b in status.brokers:
        cluster = cluster_of.get(b.broker_name, "")
        for topic, count in sorted((b.pending or {}).items()):
            out.append(Sample("mq_timer_pending", (cluster, b.broker_name, topic), float(max(count, 0))))
        for name, value in (("mq_timer_read_behind_seconds", b.read_behind_s),
                            ("mq_timer_offset_behind", b.offset_behind)):
            if b.enabled and value is not None:
                out.append(Sample(name, (cluster, b.broker_name), float(value)))
    return out


def proxy_samples(read: ProxyClients) -> list[Sample]:
    """mq_proxy_*: per proxy asked, whether it answered, and its clients by kind and language (distinct client
    ids); a proxy that does not list producers (Apache's) has no PRODUCER series, not 0. When the cluster's groups
    and topics could not be listed, nothing was asked: only whether each proxy answered is known."""
    out = [Sample("mq_proxy_up", (u.addr or "",), 0.0) for u in read.unreachable]
    for p in read.proxies:
        out.append(Sample("mq_proxy_up", (p.addr,), 1.0))
        if read.listing_error is not None:
            continue
        out.append(Sample("mq_proxy_consumer_groups", (p.addr,), float(p.consumer_groups)))
        kinds = {"PUSH", "SIMPLE", *(["PRODUCER"] if p.lists_producers else [])}
        seen = {(c.kind, c.language, c.client_id) for c in p.clients}
        counts = Counter((kind, lang) for kind, lang, _ in seen)
        languages = {lang for _, lang, _ in seen}
        for kind in sorted(kinds | {k for k, _, _ in seen}):
            for lang in sorted(languages):
                out.append(Sample("mq_proxy_clients", (p.addr, kind, lang), float(counts.get((kind, lang), 0))))
    return out


def pop_samples(progress: ConsumerProgress) -> list[Sample]:
    """mq_group_pop_*: a POP group's messages in flight, only where every set gave the figures (a sum leaving
    out an Apache broker, a slave or an unreachable set would undercount)."""
    pop = progress.pop
    if pop is None or not pop.popped or not pop.complete:
        return []
    return [Sample("mq_group_pop_inflight", (progress.group,), float(pop.inflight)),
            Sample("mq_group_pop_revive_due", (progress.group,), float(pop.revive_due))]


def ha_samples(ready: HAReadiness) -> list[Sample]:
    """mq_ha_*: each slave's replication, the group's readiness and, in controller mode, its epoch and
    SyncStateSet size."""
    group = ready.group
    cluster = (group.cluster if group is not None else None) or ""
    out = []
    if ready.safe is not None:
        out.append(Sample("mq_ha_ready", (cluster, ready.broker_name), 1.0 if ready.safe else 0.0))
    if group is None:
        return out
    master = group.master_addr or ""
    for s in group.slaves:
        slave = s.slave.broker_addr if s.slave is not None else s.connection
        labels = (cluster, ready.broker_name, master, slave or "")
        figures = (("mq_ha_diff_bytes", s.diff_bytes), ("mq_ha_diff_messages", s.diff_messages),
                   ("mq_ha_catchup_seconds", s.catch_up_s),
                   ("mq_ha_in_sync", None if s.in_sync is None else int(s.in_sync)))
        out += [Sample(name, labels, float(v)) for name, v in figures if v is not None]
    ctl = group.controller
    if ctl is not None and ctl.error is None:
        if ctl.master_epoch is not None:
            out.append(Sample("mq_controller_epoch", (cluster, ready.broker_name), float(ctl.master_epoch)))
        out.append(Sample("mq_controller_sync_state_set_size", (cluster, ready.broker_name),
                          float(len(ctl.sync_state_set))))
    return out


def stats_sample(name: str, labels: tuple[str, ...], tps: float | None) -> Iterable[Sample]:
    """A VIEW_BROKER_STATS_DATA figure (its minute's TPS), rounded as rocketmq-exporter rounds it."""
    return [] if tps is None else [Sample(name, labels, round(tps, 2))]
