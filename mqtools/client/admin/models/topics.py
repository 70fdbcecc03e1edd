"""Typed results of the topic operations: the catalogue, usage, per-queue status, changes.

Like `models.py`, a figure the cluster did not give is None (never 0 or -1), so views print n/a. Each
result's document (table and JSON) is rendered here, by the renderer registered for its kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqtools.common.perm import perm_to_string
from mqtools.common.presentation import (
    NA,
    Column,
    ReadSource,
    Unreachable,
    View,
    cell,
    from_slaves_note,
    renders,
    slave_marked,
    when,
)
from mqtools.common.topics import is_dlq_topic, is_retry_topic, is_system_topic
from mqtools.remoting.bodies import MessageQueue, TopicConfig, TopicRouteData


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
class TopicConsumers:
    """The groups consuming a topic, as the broker sets of its route know them, and the sets no replica
    answered for: a group that consumes only there is missing from `groups`."""

    groups: list[str]
    unreachable: list[Unreachable] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TopicUsage:
    """A topic with its clusters and the groups consuming it (mqadmin's `topicList -c`)."""

    topic: str
    clusters: list[str]
    groups: list[str] | None
    """None when the topic's brokers could not be asked."""
    unreachable: list[Unreachable] = field(default_factory=list)
    """Sets of the topic's route no replica answered for: groups consuming only there are not in `groups`."""


@dataclass(frozen=True, slots=True)
class QueueStats:
    """One queue of a topic as its broker reports it (GET_TOPIC_STATS_INFO)."""

    queue: MessageQueue
    min_offset: int
    max_offset: int
    last_update_ms: int | None
    """Store time of the newest message; None for an empty queue."""
    source: ReadSource = ReadSource.MASTER
    """Which replica of the broker set answered: master, or slave when the master is gone or silent."""

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
    unreachable: list[Unreachable] = field(default_factory=list)
    """Broker sets no replica answered for: their queues are not in `queues`."""

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


# -- documents ---------------------------------------------------------------------------------------


@renders("TopicList")
def topic_list_view(entries: list[TopicEntry], cluster: str | None = None) -> View:
    rows = [[e.topic, e.kind, ",".join(e.clusters) or None] for e in entries]
    data = {"cluster": cluster, "topics": [{"topic": e.topic, "kind": e.kind, "clusters": e.clusters}
                                           for e in entries]}
    return View("TopicList", [Column("TOPIC"), Column("KIND"), Column("CLUSTERS")], rows, data,
                footer=[f"{len(entries)} topics"])


@renders("TopicRoute")
def topic_route_view(topic: str, route: TopicRouteData) -> View:
    queues = {q.broker_name: q for q in route.queue_datas}
    brokers = []
    for b in sorted(route.broker_datas, key=lambda b: b.broker_name):
        q = queues.get(b.broker_name)
        brokers.append({
            "brokerName": b.broker_name, "cluster": b.cluster,
            "addrs": {str(i): a for i, a in sorted(b.broker_addrs.items())},
            "readQueues": q.read_queue_nums if q else None, "writeQueues": q.write_queue_nums if q else None,
            "perm": q.perm if q else None, "permText": perm_to_string(q.perm) if q else None,
            "topicSysFlag": q.topic_sys_flag if q else None})
    total_r = sum(q.read_queue_nums for q in route.queue_datas)
    total_w = sum(q.write_queue_nums for q in route.queue_datas)
    rows = [[b["brokerName"], b["cluster"], b["addrs"].get("0"),
             ",".join(a for i, a in b["addrs"].items() if i != "0") or None,
             b["readQueues"], b["writeQueues"], b["permText"]] for b in brokers]
    footer = [f"total: {len(brokers)} brokers, {total_r} read queues, {total_w} write queues"]
    if route.order_topic_conf:
        footer.append(f"ordered: {route.order_topic_conf}")
    doc = {"topic": topic, "orderTopicConf": route.order_topic_conf, "brokers": brokers,
           "totalReadQueues": total_r, "totalWriteQueues": total_w}
    return View("TopicRoute", [Column("BROKER"), Column("CLUSTER"), Column("MASTER"), Column("SLAVES"),
                               Column("READ Q", True), Column("WRITE Q", True), Column("PERM")],
                rows, doc, footer=footer)


@renders("TopicStatus")
def topic_status_view(st: TopicStatus) -> View:
    rows = [[slave_marked(q.queue.broker_name, q.source), q.queue.queue_id, q.min_offset, q.max_offset, q.messages,
             when(q.last_update_ms)] for q in st.queues]
    data = {"topic": st.topic, "putTps": st.put_tps, "messages": st.messages, "queues": [
        {"brokerName": q.queue.broker_name, "queueId": q.queue.queue_id, "minOffset": q.min_offset,
         "maxOffset": q.max_offset, "messages": q.messages, "lastUpdateMs": q.last_update_ms, "source": q.source}
        for q in st.queues]}
    tps = NA if st.put_tps is None else f"{st.put_tps:.2f}"
    least = "at least " if st.unreachable else ""
    slaves = sorted({q.queue.broker_name for q in st.queues if q.source == ReadSource.SLAVE})
    return View("TopicStatus", [Column("BROKER"), Column("QID", True), Column("MIN", True), Column("MAX", True),
                                Column("MESSAGES", True), Column("LAST STORED")], rows, data,
                footer=[f"total: {least}{len(st.queues)} queues, {least}{st.messages} messages; put TPS {tps}",
                        *from_slaves_note(slaves)], unreachable=st.unreachable)


@renders("TopicClusters")
def topic_clusters_view(topic: str, clusters: list[str]) -> View:
    return View("TopicClusters", [Column("CLUSTER")], [[n] for n in clusters], {"topic": topic, "clusters": clusters})


def topic_config_json(config: TopicConfig | None) -> dict[str, Any] | None:
    if config is None:
        return None
    return {"readQueues": config.read_queue_nums, "writeQueues": config.write_queue_nums, "perm": config.perm,
            "permText": perm_to_string(config.perm), "order": config.order,
            "attributes": {k.lstrip("+"): v for k, v in config.attributes.items() if not k.startswith("-")}}


def _arrow(old: Any, new: Any) -> Any:
    return new if old is None or old == new else f"{cell(old)} -> {cell(new)}"


@renders("TopicChange")
def topic_change_view(topic: str, operation: str, changes: list[TopicChange]) -> View:
    """What a create, update or perm change wrote, broker by broker (old -> new where it changed)."""
    rows = []
    for c in changes:
        o = c.old
        rows.append([c.broker_name, c.addr,
                     _arrow(o and o.read_queue_nums, c.new.read_queue_nums),
                     _arrow(o and o.write_queue_nums, c.new.write_queue_nums),
                     _arrow(o and perm_to_string(o.perm), perm_to_string(c.new.perm)),
                     _arrow(None if o is None else o.order, c.new.order)])
    data = {"topic": topic, "operation": operation, "brokers": [
        {"brokerName": c.broker_name, "addr": c.addr, "old": topic_config_json(c.old),
         "new": topic_config_json(c.new)} for c in changes]}
    return View("TopicChange", [Column("BROKER"), Column("ADDR"), Column("READ Q"), Column("WRITE Q"),
                                Column("PERM"), Column("ORDER")], rows, data, title=f"{operation} {topic}")
