"""The tools `mq mcp` offers: each is one admin call and the model's own document, the very document the
matching `mq admin ... -o json` command prints, so that document's JSON Schema is the tool's output schema.

Reads are always offered. Writes exist only with --allow-writes; each says what it risks, and the offset
reset runs as a dry run unless the caller says otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mqtools.common.presentation import View

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.configs import WritePermChange

Args = Mapping[str, Any]
Build = Callable[["MQAdmin", Args], Awaitable[View | str]]
"""A call on the cluster: the document's view, or plain text for the tools that print lines."""


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    params: dict[str, dict[str, Any]]
    """Parameter name -> its JSON Schema (a description included)."""
    required: tuple[str, ...]
    build: Build | None
    """The call on the cluster (None: `local` instead)."""
    kind: str | None
    """The JSON document kind it returns (its schema is the output schema); None: plain text."""
    write: bool = False
    local: Callable[[Args], View] | None = None
    """For the tools that read local files only (drill check): no cluster session."""

    def input_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": self.params, "required": list(self.required),
                "additionalProperties": False}


def _s(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


TOPIC, GROUP = _s("Topic name."), _s("Consumer group name.")
BROKER = _s("Broker name (its group: master and slaves), e.g. broker-a.")

HA_WINDOW, BROKER_WINDOW = 2.0, 5.0
"""The windows `mq admin ha status|ready` and `diagnose broker` sample over by default."""


async def _cluster_list(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.brokers import cluster_list_view

    return cluster_list_view(await admin.cluster.cluster_snapshot(), None, False)


async def _topic_list(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.topics import topic_list_view

    return topic_list_view(await admin.topics.topic_catalogue(None))


async def _topic_status(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.topics import topic_status_view

    return topic_status_view(await admin.overview.topic_status(a["topic"], None))


async def _topic_route(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.topics import topic_route_view

    return topic_route_view(a["topic"], await admin.topics.topic_route(a["topic"]))


async def _group_list(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.groups import group_list_view

    return group_list_view(await admin.groups.group_list())


async def _group_progress(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.groups import group_progress_view

    return group_progress_view(await admin.groups.consumer_progress(a["group"], a.get("topic")), a.get("topic"))


async def _group_connections(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.connections import group_connections_view

    online = await admin.groups.online_connections(a["group"])
    proxies = _listed(a, "proxies")
    return group_connections_view(a["group"], online,
                                  await admin.proxies.clients_of(proxies, groups=[a["group"]]) if proxies else None)


async def _ha_status(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.ha_views import ha_status_view

    return ha_status_view(await admin.ha.ha_replication(broker_addr=a.get("broker"), cluster=None, window=HA_WINDOW),
                          HA_WINDOW)


async def _ha_ready(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.ha_views import ha_ready_view

    return ha_ready_view(await admin.ha.ha_ready(a["broker"], window=HA_WINDOW), HA_WINDOW)


async def _timer_status(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.timer import timer_status_view

    return timer_status_view(await admin.timer.timer_status())


async def _group_consume_mode(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.consume_modes import consume_modes_view

    return consume_modes_view(await admin.consume_modes.consume_modes(a["group"], a.get("topic")))


async def _proxy_clients(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.proxies import proxy_clients_view

    return proxy_clients_view(await admin.proxies.proxy_clients(_listed(a, "proxies"), _listed(a, "groups")))


def _listed(a: Args, key: str) -> list[str]:
    """A comma-separated argument's items; none when it is not given."""
    return [item.strip() for item in str(a.get(key) or "").split(",") if item.strip()]


async def _message_by_key(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.messages import message_list_view

    return message_list_view(a["topic"], await admin.messages.query_by_key(a["topic"], a["key"]))


async def _message_by_id(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.messages import message_view
    from mqtools.common.ids import is_offset_msg_id

    msg_id, topic = a["msg_id"], a.get("topic")
    if topic is None and not is_offset_msg_id(msg_id):
        raise ValueError(f"{msg_id} is not an offset msgId: give topic to look up a client msgId")
    return message_view(await admin.messages.message_by_id(msg_id, topic))


def _drill_list(a: Args) -> View:
    from mqtools.drills.scenarios import SCENARIOS, scenario_list_view

    return scenario_list_view(SCENARIOS.values())


def _drill_check(a: Args) -> View:
    from pathlib import Path

    from mqtools.drills.history import History
    from mqtools.drills.report import build, drill_report_view

    return drill_report_view(build(History.read(Path(a["file"]))))


async def _diagnose_group(admin: MQAdmin, a: Args) -> View:
    from mqtools.diagnose.collect import diagnose_group
    from mqtools.diagnose.group import DEFAULTS, group_diagnosis_view

    return group_diagnosis_view(await diagnose_group(admin, a["group"], DEFAULTS.min_window, DEFAULTS))


async def _diagnose_broker(admin: MQAdmin, a: Args) -> View:
    from mqtools.diagnose.broker import broker_diagnosis_view
    from mqtools.diagnose.collect import diagnose_broker

    return broker_diagnosis_view(await diagnose_broker(admin, a["broker"], BROKER_WINDOW))


async def _diagnose_cluster(admin: MQAdmin, a: Args) -> View:
    from mqtools.diagnose.cluster import cluster_diagnosis_view, diagnose_cluster
    from mqtools.diagnose.group import DEFAULTS

    return cluster_diagnosis_view(await diagnose_cluster(admin, DEFAULTS.min_window, DEFAULTS))


READS: list[Tool] = [
    Tool("cluster_list", "Every broker of every cluster: role, address, version, TPS, disk, heartbeat age.", {}, (),
         _cluster_list, "ClusterList"),
    Tool("topic_list", "Every topic with its clusters and kind (normal, retry, DLQ, system).", {}, (),
         _topic_list, "TopicList"),
    Tool("topic_status", "A topic's queues: min and max offsets, messages, last update.", {"topic": TOPIC},
         ("topic",), _topic_status, "TopicStatus"),
    Tool("topic_route", "A topic's route: brokers, their addresses, read/write queues and permission.",
         {"topic": TOPIC}, ("topic",), _topic_route, "TopicRoute"),
    Tool("group_list", "Every consumer group and the masters that hold its config.", {}, (), _group_list, "GroupList"),
    Tool("group_progress", "A group's progress per queue: broker and committed offsets, lag, last consume time.",
         {"group": GROUP, "topic": _s("Only this topic (optional).")}, ("group",), _group_progress, "GroupProgress"),
    Tool("group_connections", "Who is online in a group: clients, versions, subscriptions, consume type; with proxies "
         "also its RocketMQ 5 gRPC clients, which only the proxies see.",
         {"group": GROUP, "proxies": _s("Proxies' remoting addresses (host:8080), comma-separated (optional).")},
         ("group",), _group_connections, "GroupConnections"),
    Tool("group_consume_mode", "How each broker serves a group: PULL (client rebalance) or POP (RocketMQ 5), per topic.",
         {"group": GROUP, "topic": _s("Only this topic (optional).")}, ("group",), _group_consume_mode,
         "ConsumeModes"),
    Tool("ha_status", "Replication of each master's slaves: ack offset, diff in bytes and messages, catch-up.",
         {"broker": _s("Only the group holding this broker address (optional).")}, (), _ha_status, "HAStatus"),
    Tool("ha_ready", "Is it safe to stop this group's master now? The verdict (safe, not safe, unknown) and why.",
         {"broker": BROKER}, ("broker",), _ha_ready, "HAReady"),
    Tool("timer_status", "Timer messages (RocketMQ 5) per broker set: pending per topic, how far delivery got, "
         "dequeue and enqueue lag, congestion.", {}, (), _timer_status, "TimerStatus"),
    Tool("proxy_clients", "The gRPC clients RocketMQ 5 proxies serve (the brokers never see them): per client its "
         "proxy, PUSH/SIMPLE consumer or PRODUCER, group or topic, language, version.",
         {"proxies": _s("Proxies' remoting addresses (host:8080), comma-separated."),
          "groups": _s("Also ask about these consumer groups, comma-separated (optional).")}, ("proxies",),
         _proxy_clients, "ProxyClients"),
    Tool("message_by_key", "Messages of a topic with this key (the index).", {"topic": TOPIC, "key": _s("Message key.")},
         ("topic", "key"), _message_by_key, "MessageList"),
    Tool("message_by_id", "One message by its offset msgId (or a client msgId with its topic).",
         {"msg_id": _s("Message id."), "topic": _s("Topic, to look a client msgId up (optional).")}, ("msg_id",),
         _message_by_id, "Message"),
    Tool("drill_list", "The failover drill scenarios: what each does, predicts and is judged by.", {}, (),
         None, "DrillScenarioList", local=_drill_list),
    Tool("drill_check", "Judge a drill's recorded history again, offline (a history file of `mq admin drill run`).",
         {"file": _s("Path of the drill's history (JSONL).")}, ("file",), None, "DrillReport", local=_drill_check),
    Tool("diagnose_group", "Why a group lags: one verdict (healthy, slow, stalled, offline, ...) with evidence; "
         "samples for 10 s.", {"group": GROUP}, ("group",), _diagnose_group, "GroupDiagnosis"),
    Tool("diagnose_broker", "Why a broker is busy or slow: findings from its runtime figures against its config.",
         {"broker": _s("Broker name or address.")}, ("broker",), _diagnose_broker, "BrokerDiagnosis"),
    Tool("diagnose_cluster", "Every broker, used group and HA pair judged in one pass, worst first; samples 10 s.",
         {}, (), _diagnose_cluster, "ClusterDiagnosis"),
]


async def _topic_create(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.configs import TopicConfig
    from mqtools.client.admin.models.topics import TopicChange, topic_change_view

    queues = int(a.get("queues", 8))
    config = TopicConfig(a["topic"], queues, queues)
    addrs = await admin.topics.create_topic(config, cluster=a["cluster"], exist_ok=False)
    names = {addr: name for name, addr in (await admin.master_addrs()).items()}
    return topic_change_view(a["topic"], "create", [TopicChange(names.get(x), x, None, config) for x in addrs])


async def _topic_update(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.topics import topic_change_view
    from mqtools.common.perm import PERM_BY_NAME

    perm = a.get("perm")
    changes = await admin.topics.update_topic(a["topic"], read_queue_nums=a.get("read_queues"),
                                              write_queue_nums=a.get("write_queues"),
                                              perm=None if perm is None else PERM_BY_NAME[perm])
    return topic_change_view(a["topic"], "update", changes)


async def _offset_reset(admin: MQAdmin, a: Args) -> View:
    from mqtools.client.admin.models.groups import ResetTarget, offset_reset_view
    from mqtools.common.timeparse import parse_time_ms

    to, dry_run = a["to"], bool(a.get("dry_run", True))
    if to == "time":
        if a.get("time") in (None, ""):
            raise ValueError("offset_reset with to=time needs time")
        target = ResetTarget("time", parse_time_ms(str(a["time"]), int(time.time() * 1000)))
    else:
        target = ResetTarget(to)
    rows = await admin.offsets.reset_offsets(a["group"], a["topic"], target, dry_run=dry_run)
    return offset_reset_view(a["group"], a["topic"], "reset", target.describe(), rows, dry_run=dry_run)


def _perm_text(change: WritePermChange, verb: str) -> str:
    """The name servers that applied it, then (name servers do not talk to each other) those that did not."""
    error = change.error()
    return "\n".join([*change.applied_lines(verb), *([] if error is None else [f"not applied everywhere: {error}"])])


async def _perm_wipe(admin: MQAdmin, a: Args) -> str:
    return _perm_text(await admin.namesrv.wipe_write_perm(a["broker"]), "wiped")


async def _perm_add(admin: MQAdmin, a: Args) -> str:
    return _perm_text(await admin.namesrv.add_write_perm(a["broker"]), "restored")


_QUEUES = {"type": "integer", "minimum": 1, "maximum": 1024}

WRITES: list[Tool] = [
    Tool("topic_create", "WRITE. Create a topic on every master of a cluster. Risk: low (refused if it exists).",
         {"topic": TOPIC, "cluster": _s("Cluster name."), "queues": {**_QUEUES, "description": "Read and write queues (8)."}},
         ("topic", "cluster"), _topic_create, "TopicChange", write=True),
    Tool("topic_update", "WRITE. Change a topic's queue counts or permission on every master that has it. Risk: "
         "fewer queues hide messages left in the removed ones.",
         {"topic": TOPIC, "read_queues": _QUEUES, "write_queues": _QUEUES, "perm": {"enum": ["rw", "r", "w"], "description": "Permission."}},
         ("topic",), _topic_update, "TopicChange", write=True),
    Tool("offset_reset", "WRITE. Move a group's committed offsets on a topic (to the earliest, latest or a time). "
         "Runs as a dry run (what would change) unless dry_run is false. Risk: moving back redelivers, moving "
         "forward skips messages for good.",
         {"group": GROUP, "topic": TOPIC, "to": {"enum": ["earliest", "latest", "time"]},
          "time": _s("With to=time: epoch ms or ISO time."), "dry_run": {"type": "boolean", "default": True}},
         ("group", "topic", "to"), _offset_reset, "OffsetReset", write=True),
    Tool("perm_wipe", "WRITE. Drain a broker group: producers stop sending to it, consumers keep reading. Risk: "
         "the cluster loses that broker's write capacity until perm_add.", {"broker": BROKER}, ("broker",),
         _perm_wipe, None, write=True),
    Tool("perm_add", "WRITE. Give a drained broker group its write permission back. Risk: low.", {"broker": BROKER},
         ("broker",), _perm_add, None, write=True),
]


def catalogue(allow_writes: bool) -> dict[str, Tool]:
    return {t.name: t for t in (READS + WRITES if allow_writes else READS)}
