"""The `mq admin` commands the toolkit tests run on both clusters, and how two outputs are compared.

Arguments are templates: {ns} the name server, {addr} broker-a's master, {cluster}, {msg} an offset
message id, {uniq} a unique key. `normalise` reduces a printed table to what two runs of the same
question at nearly the same moment must share: addresses, times, ids and rates become placeholders.
"""

from __future__ import annotations

import re

from tkworld import KV_NAMESPACE, LAG, LIVE, PRODUCERS, TOPIC

#: mq's own dialect: every reading command, run with -o table and with -o json.
READS: dict[str, list[str]] = {
    "cluster list": ["cluster", "list"],
    "broker status": ["broker", "status", "{addr}"],
    "broker config get": ["broker", "config", "get", "{addr}"],
    "broker consume-stats": ["broker", "consume-stats", "{addr}"],
    "broker stats": ["broker", "stats", "-t", TOPIC],
    "topic list": ["topic", "list"],
    "topic route": ["topic", "route", TOPIC],
    "topic status": ["topic", "status", TOPIC],
    "topic clusters": ["topic", "clusters", TOPIC],
    "group list": ["group", "list"],
    "group progress": ["group", "progress", LAG],
    "group status": ["group", "status", LIVE],
    "group connections": ["group", "connections", LIVE],
    "producer connections": ["producer", "connections", PRODUCERS, TOPIC],
    "msg get": ["msg", "get", "{msg}"],
    "msg unique": ["msg", "unique", TOPIC, "{uniq}"],
    "msg key": ["msg", "key", TOPIC, "tk-0-0"],
    "msg at": ["msg", "at", TOPIC, "broker-a", "0", "0"],
    "msg print": ["msg", "print", TOPIC],
    "dlq list": ["dlq", "list", LAG],
    "ha status": ["ha", "status", "-c", "{cluster}"],
    "ha ready": ["ha", "ready", "-c", "{cluster}"],
    "namesrv config get": ["namesrv", "config", "get"],
    "kv get": ["kv", "get", KV_NAMESPACE, "k1"],
    "kv list": ["kv", "list", KV_NAMESPACE],
    "offset skip": ["offset", "skip", LAG, TOPIC, "--dry-run"],
    "offset clone": ["offset", "clone", LAG, "TkClone", TOPIC, "--dry-run"],
}

#: mqadmin's names for reading commands, with the arguments Apache's mqadmin takes for the same question.
MQADMIN_READS: dict[str, list[str]] = {
    "clusterList": ["clusterList"],
    "topicList": ["topicList"],
    "topicRoute": ["topicRoute", "-t", TOPIC],
    "topicStatus": ["topicStatus", "-t", TOPIC],
    "topicClusterList": ["topicClusterList", "-t", TOPIC],
    "brokerStatus": ["brokerStatus", "-b", "{addr}"],
    "getBrokerConfig": ["getBrokerConfig", "-b", "{addr}"],
    "brokerConsumeStats": ["brokerConsumeStats", "-b", "{addr}"],
    "consumerProgress": ["consumerProgress", "-g", LAG],
    "consumerProgress (all)": ["consumerProgress"],
    "consumerConnection": ["consumerConnection", "-g", LIVE],
    "producerConnection": ["producerConnection", "-g", PRODUCERS, "-t", TOPIC],
    "statsAll": ["statsAll", "-t", TOPIC],
    "queryMsgById": ["queryMsgById", "-i", "{msg}"],
    "queryMsgByKey": ["queryMsgByKey", "-t", TOPIC, "-k", "tk-0-0"],
    "queryMsgByUniqueKey": ["queryMsgByUniqueKey", "-t", TOPIC, "-i", "{uniq}"],
    "queryMsgByOffset": ["queryMsgByOffset", "-t", TOPIC, "-b", "broker-a", "-i", "0", "-o", "0"],
    "getNamesrvConfig": ["getNamesrvConfig"],
    "haStatus": ["haStatus", "-b", "{addr}"],
}

_ADDR = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}:\d+\b")
_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b")
_HEX_ID = re.compile(r"\b[0-9A-F]{32}\b")
_EPOCH_MS = re.compile(r"\b1[6-9]\d{11}\b")
_FLOAT = re.compile(r"\b\d+\.\d+\b")


def fill(template: list[str], values: dict[str, str]) -> list[str]:
    return [arg.format(**values) for arg in template]


def normalise(text: str) -> list[str]:
    """Lines with addresses, times, ids and rates replaced and runs of spaces made one, blank lines gone."""
    lines = []
    for line in text.splitlines():
        line = _ADDR.sub("<addr>", line)
        line = _TIME.sub("<time>", line)
        line = _HEX_ID.sub("<id>", line)
        line = _EPOCH_MS.sub("<ms>", line)
        line = _FLOAT.sub("<rate>", line)
        line = " ".join(line.split())
        if line:
            lines.append(line)
    return lines


_NUMBER = re.compile(r"-?\b\d+\b")


def shape(text: str) -> list[str]:
    """`normalise`, and every number a placeholder too: the outline of an answer from another cluster,
    whose offsets, counts per queue and sizes may differ while the question and its layout are the same."""
    return [_NUMBER.sub("<n>", line) for line in normalise(text)]
