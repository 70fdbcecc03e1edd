"""The tools `mq mcp` offers: each is one `mq admin` command run with `-o json`, so a tool returns exactly the
document that command prints, and that document's JSON Schema is the tool's output schema.

Reads are always offered. Writes exist only with --allow-writes; each says what it risks, and the offset
reset runs as a dry run unless the caller says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Args = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    params: dict[str, dict[str, Any]]
    """Parameter name -> its JSON Schema (a description included)."""
    required: tuple[str, ...]
    argv: Callable[[Args], list[str]]
    """The `mq` arguments for a call (before the connection options and `-o json`)."""
    kind: str | None
    """The JSON document kind it prints (its schema is the output schema); None: plain text."""
    write: bool = False
    cluster: bool = True
    """False for tools that read local files only (drill check): no -n/--context."""
    verdict: bool = False
    """Exits 1 or 3 to give a verdict (ha ready, diagnose): a document with such an exit is a result."""

    def input_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": self.params, "required": list(self.required),
                "additionalProperties": False}


def _s(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _opt(args: Args, flag: str, key: str) -> list[str]:
    value = args.get(key)
    return [] if value is None else [flag, str(value)]


TOPIC, GROUP = _s("Topic name."), _s("Consumer group name.")
BROKER = _s("Broker name (its group: master and slaves), e.g. broker-a.")

READS: list[Tool] = [
    Tool("cluster_list", "Every broker of every cluster: role, address, version, TPS, disk, heartbeat age.", {}, (),
         lambda a: ["admin", "cluster", "list"], "ClusterList"),
    Tool("topic_list", "Every topic with its clusters and kind (normal, retry, DLQ, system).", {}, (),
         lambda a: ["admin", "topic", "list"], "TopicList"),
    Tool("topic_status", "A topic's queues: min and max offsets, messages, last update.", {"topic": TOPIC},
         ("topic",), lambda a: ["admin", "topic", "status", a["topic"]], "TopicStatus"),
    Tool("topic_route", "A topic's route: brokers, their addresses, read/write queues and permission.",
         {"topic": TOPIC}, ("topic",), lambda a: ["admin", "topic", "route", a["topic"]], "TopicRoute"),
    Tool("group_list", "Every consumer group and the masters that hold its config.", {}, (),
         lambda a: ["admin", "group", "list"], "GroupList"),
    Tool("group_progress", "A group's progress per queue: broker and committed offsets, lag, last consume time.",
         {"group": GROUP, "topic": _s("Only this topic (optional).")}, ("group",),
         lambda a: ["admin", "group", "progress", a["group"], *_opt(a, "-t", "topic")], "GroupProgress"),
    Tool("group_connections", "Who is online in a group: clients, versions, subscriptions, consume type.",
         {"group": GROUP}, ("group",), lambda a: ["admin", "group", "connections", a["group"]], "GroupConnections"),
    Tool("ha_status", "Replication of each master's slaves: ack offset, diff in bytes and messages, catch-up.",
         {"broker": _s("Only the group holding this broker (optional).")}, (),
         lambda a: ["admin", "ha", "status", *_opt(a, "-b", "broker")], "HAStatus"),
    Tool("ha_ready", "Is it safe to stop this group's master now? The verdict (safe, not safe, unknown) and why.",
         {"broker": BROKER}, ("broker",), lambda a: ["admin", "ha", "ready", a["broker"]], "HAReady", verdict=True),
    Tool("message_by_key", "Messages of a topic with this key (the index).", {"topic": TOPIC, "key": _s("Message key.")},
         ("topic", "key"), lambda a: ["admin", "msg", "key", a["topic"], a["key"]], "MessageList"),
    Tool("message_by_id", "One message by its offset msgId (or a client msgId with its topic).",
         {"msg_id": _s("Message id."), "topic": _s("Topic, to look a client msgId up (optional).")}, ("msg_id",),
         lambda a: ["admin", "msg", "get", a["msg_id"], *_opt(a, "-t", "topic")], "Message"),
    Tool("drill_list", "The failover drill scenarios: what each does, predicts and is judged by.", {}, (),
         lambda a: ["admin", "drill", "list"], "DrillScenarioList", cluster=False),
    Tool("drill_check", "Judge a drill's recorded history again, offline (a history file of `mq admin drill run`).",
         {"file": _s("Path of the drill's history (JSONL).")}, ("file",),
         lambda a: ["admin", "drill", "check", a["file"]], "DrillReport", cluster=False, verdict=True),
    Tool("diagnose_group", "Why a group lags: one verdict (healthy, slow, stalled, offline, ...) with evidence; "
         "samples for 10 s.", {"group": GROUP}, ("group",), lambda a: ["admin", "diagnose", "group", a["group"]],
         "GroupDiagnosis", verdict=True),
    Tool("diagnose_broker", "Why a broker is busy or slow: findings from its runtime figures against its config.",
         {"broker": _s("Broker name or address.")}, ("broker",),
         lambda a: ["admin", "diagnose", "broker", a["broker"]], "BrokerDiagnosis", verdict=True),
    Tool("diagnose_cluster", "Every broker, used group and HA pair judged in one pass, worst first; samples 10 s.",
         {}, (), lambda a: ["admin", "diagnose", "cluster"], "ClusterDiagnosis", verdict=True),
]

WRITES: list[Tool] = [
    Tool("topic_create", "WRITE. Create a topic on every master of a cluster. Risk: low (refused if it exists).",
         {"topic": TOPIC, "cluster": _s("Cluster name."), "queues": {"type": "integer", "minimum": 1, "maximum": 1024,
                                                                  "description": "Read and write queues (8)."}},
         ("topic", "cluster"),
         lambda a: ["admin", "topic", "create", a["topic"], "-c", a["cluster"], "-r", str(a.get("queues", 8)), "-w",
                    str(a.get("queues", 8))], "TopicChange", write=True),
    Tool("topic_update", "WRITE. Change a topic's queue counts or permission on every master that has it. Risk: "
         "fewer queues hide messages left in the removed ones.",
         {"topic": TOPIC, "read_queues": {"type": "integer", "minimum": 1, "maximum": 1024},
          "write_queues": {"type": "integer", "minimum": 1, "maximum": 1024}, "perm": _s("rw, r or w.")},
         ("topic",), lambda a: ["admin", "topic", "update", a["topic"], *_opt(a, "-r", "read_queues"),
                                *_opt(a, "-w", "write_queues"), *_opt(a, "-p", "perm")], "TopicChange", write=True),
    Tool("offset_reset", "WRITE. Move a group's committed offsets on a topic (to the earliest, latest or a time). "
         "Runs as a dry run (what would change) unless dry_run is false. Risk: moving back redelivers, moving "
         "forward skips messages for good.",
         {"group": GROUP, "topic": TOPIC, "to": {"enum": ["earliest", "latest", "time"]},
          "time": _s("With to=time: epoch ms or ISO time."), "dry_run": {"type": "boolean", "default": True}},
         ("group", "topic", "to"),
         lambda a: ["admin", "offset", "reset", a["group"], a["topic"],
                    *(["--to-time", str(a["time"])] if a["to"] == "time" else [f"--{a['to']}"]),
                    *(["--dry-run"] if a.get("dry_run", True) else ["--yes"])], "OffsetReset", write=True),
    Tool("perm_wipe", "WRITE. Drain a broker group: producers stop sending to it, consumers keep reading. Risk: "
         "the cluster loses that broker's write capacity until perm_add.", {"broker": BROKER}, ("broker",),
         lambda a: ["admin", "broker", "perm", "wipe", a["broker"], "--yes"], None, write=True),
    Tool("perm_add", "WRITE. Give a drained broker group its write permission back. Risk: low.", {"broker": BROKER},
         ("broker",), lambda a: ["admin", "broker", "perm", "add", a["broker"], "--yes"], None, write=True),
]


def catalogue(allow_writes: bool) -> dict[str, Tool]:
    return {t.name: t for t in (READS + WRITES if allow_writes else READS)}
