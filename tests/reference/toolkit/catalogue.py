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
    "ha ready": ["ha", "ready", "broker-a"],
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
    "queryMsgById": ["queryMsgById", "-t", TOPIC, "-i", "{msg}"],
    "queryMsgByKey": ["queryMsgByKey", "-t", TOPIC, "-k", "tk-0-0"],
    "queryMsgByUniqueKey": ["queryMsgByUniqueKey", "-t", TOPIC, "-i", "{uniq}"],
    "queryMsgByOffset": ["queryMsgByOffset", "-t", TOPIC, "-b", "broker-a", "-i", "0", "-o", "0"],
    "getNamesrvConfig": ["getNamesrvConfig"],
    "haStatus": ["haStatus", "-b", "{addr}"],
}

#: Where mqadmin 4.9.8 takes other arguments for the same question (its queryMsgById has no -t).
MQADMIN_4X_ARGS: dict[str, list[str]] = {"queryMsgById": ["queryMsgById", "-i", "{msg}"]}

_ADDR = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}:\d+\b")
_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b")
_HEX_ID = re.compile(r"\b[0-9A-F]{24,}\b")
_CLIENT_ID = re.compile(r"\S+@\S+")
_EPOCH_MS = re.compile(r"\b1[6-9]\d{11}\b")
_FLOAT = re.compile(r"\b\d+\.\d+\b")
_PROPERTIES = re.compile(r"^Properties: \{(.*)\}$")
_UPTIME = re.compile(r"\[ \d+ days, \d+ hours, \d+ minutes, \d+ seconds \]")

#: Commands whose lines mqadmin prints in a Java hash container's order (topicList: a HashSet filled in
#: the name server's order; getBrokerConfig and getNamesrvConfig: the ConcurrentHashMap inside Properties) and mq in the order
#: it has them (sorted topics; the broker's own order of its config), or in the order brokers registered
#: (topicRoute's brokers and queues), or groups and topics in a table's order (brokerConsumeStats,
#: consumerProgress of every group, statsAll), or a reset's queues in the order of the route's brokers
#: (resetOffsetByTime, skipAccumulatedMessage: mq's name server keeps the order brokers registered in,
#: which varies from run to run): compared as sorted lines.
ORDER_FREE = {"topicList", "getBrokerConfig", "getNamesrvConfig", "topicRoute", "brokerConsumeStats",
              "consumerProgress (all)", "statsAll", "resetOffsetByTime", "skipAccumulatedMessage"}
#: Commands that print a broker's live counters, read once by Apache's mqadmin and once by mq: compared by
#: `shape` (numbers as placeholders). Apache 5's timerReadBehind moved from 0 to 1 between the two calls
#: in one fresh-clone run.
LIVE_FIGURES = {"brokerStatus"}
#: Commands whose figures are counters a broker samples (statsAll's 24-hour counts: Apache's StatsItem takes a
#: sample every 10 s, 10 min and hour, and a window's count is its newest sample less its oldest): mqadmin and mq
#: may read on either side of a sample, as 4.9.8 (25) and mq (0) did in one fresh-clone run. Such a command is
#: read again, all tools, up to SAMPLED_READS times, until one round of reads agrees.
SAMPLED = {"statsAll"}
SAMPLED_READS = 3
#: Tables with one live column, a rate over the broker's last minute read once by mqadmin and once by mq: the
#: command -> how many tokens from a row's end that column is (rows, not columns: an offline group's row
#: leaves #Version, #Type and #Model empty). consumerProgress of every group: #TPS, which for a group
#: that had just consumed was 1 in Apache's read and 0 in mq's in one CI run.
LIVE_COLUMN_FROM_END = {"consumerProgress (all)": 2}


def fill(template: list[str], values: dict[str, str]) -> list[str]:
    return [arg.format(**values) for arg in template]


def normalise(text: str) -> list[str]:
    """Lines with addresses, times, ids and rates replaced and runs of spaces made one, blank lines gone."""
    lines = []
    for line in text.splitlines():
        line = _ADDR.sub("<addr>", line)
        line = _TIMER.sub("<timer>", line)
        line = _TIME.sub("<time>", line)
        line = _UPTIME.sub("<uptime>", line)
        line = _HEX_ID.sub("<id>", line)
        line = _CLIENT_ID.sub("<client>", line)
        line = _EPOCH_MS.sub("<ms>", line)
        line = _FLOAT.sub("<rate>", line)
        line = " ".join(line.split())
        props = _PROPERTIES.match(line)
        if props:  # a Java HashMap's order, which the map's capacity decides (4.9.8 and 5.x differ)
            line = "Properties: {" + ", ".join(sorted(props.group(1).split(", "))) + "}"
        if line:
            lines.append(line)
    return lines


_NUMBER = re.compile(r"-?\b\d+\b")
_NUMBER_KEY = re.compile(r'^\d+:"')
_DURATION = re.compile(r"\b\d+ms\b")
#: The timer wheel's progress column (clusterList on 5.x): how far its reading lags, a moving figure.
_TIMER = re.compile(r"\b\d+-\d+\(\d+\.\d+w, \d+\.\d+, \d+\.\d+\)")
_RANDOM_SUFFIX = re.compile(r"_[0-9a-f]{8}\b")
#: brokerStatus's put-time histogram: Apache's broker prints null until its first minute of put statistics has
#: rolled, and a read on each side of that minute differed in one CI run (null, then the histogram).
_DISTRIBUTION = re.compile(r"^(putMessageDistributeTime :) .*$")


def steady(name: str, lines: list[str]) -> list[str]:
    """`lines` with the live column of `name`'s table (LIVE_COLUMN_FROM_END) a placeholder in every row
    below the header."""
    back = LIVE_COLUMN_FROM_END.get(name)
    if back is None:
        return lines
    out: list[str] = []
    for line in lines:
        tokens = line.split(" ")
        if out and len(tokens) > back:
            tokens[-back] = "<n>"
        out.append(" ".join(tokens))
    return out


def comparable(name: str, text: str) -> list[str]:
    """The lines of `name`'s output that mq's and mqadmin's must share: `shape` for LIVE_FIGURES, else
    `normalise`, with any live column masked (`steady`)."""
    return steady(name, (shape if name in LIVE_FIGURES else normalise)(text))


def shape(text: str) -> list[str]:
    """`normalise`, every number a placeholder, the put-time histogram one placeholder, and no line about
    another test's topic or group (named with a random suffix, refsupport.name): the outline of an answer from
    another cluster, or from the same one a moment later, whose offsets, counts per queue and sizes may differ
    while the question and its layout are the same."""
    return [_NUMBER.sub("<n>", _DURATION.sub("<n>", _DISTRIBUTION.sub(r"\1 <histogram>", line)))
            for line in normalise(text) if not _RANDOM_SUFFIX.search(line)]


def same_lines(mq: list[str], apache: list[str]) -> bool:
    """Equal line by line and token by token, where mq's `n/a` stands for whatever Apache printed: mq shows
    a figure the broker did not give as n/a, where mqadmin prints a default it made up (0, false, or the
    hours since -1 ms)."""
    if len(mq) != len(apache):
        return False
    for ours, theirs in zip(mq, apache, strict=True):
        a, b = ours.split(" "), theirs.split(" ")
        if len(a) != len(b) or any(x != y and x != "n/a" for x, y in zip(a, b, strict=True)):
            return False
    return True


def _columns(header: str) -> list[str]:
    """A header's column names: each starts with '#' and may hold spaces (`#Broker Name`)."""
    names: list[str] = []
    for token in header.split(" "):
        if token.startswith("#") or not names:
            names.append(token)
        else:
            names[-1] += " " + token
    return names


def _as_4x_table(lines: list[str], header_prefix: str, fives: tuple[str, ...]) -> list[str]:
    """Lines of a 5.x table (its header first) without the columns 5.x added, for a 4.9.8 oracle; a row is
    cut where it has a token per column."""
    out: list[str] = []
    columns: list[str] | None = None
    for line in lines:
        if line.startswith(header_prefix):
            columns = _columns(line)
            out.append(" ".join(c for c in columns if c not in fives))
        elif columns is not None and len(line.split(" ")) == len(columns):
            out.append(" ".join(t for t, c in zip(line.split(" "), columns, strict=True) if c not in fives))
        else:
            out.append(line)
    return out


def as_4x(name: str, lines: list[str]) -> list[str]:
    """mq's output (mqadmin 5.x's layout) as mqadmin 4.9.8 lays out the same figures."""
    if name == "clusterList":
        lines = [line.replace("|N,Nms)", ")") for line in lines]
        return _as_4x_table(lines, "#Cluster Name", ("#Timer(Progress)", "#ACTIVATED"))
    if name == "consumerProgress":
        lines = [line.replace("Consume Diff Total:", "Diff Total:") for line in lines
                 if not line.startswith("Consume Inflight Total:")]
        return _as_4x_table(lines, "#Topic", ("#Inflight",))
    if name == "topicStatus":
        return [line for line in lines if not line.startswith("Topic Put TPS:")]
    if name == "topicRoute":  # 4.9 has no enableActingMaster, and keeps a map with number keys on one line
        out: list[str] = []
        in_map = False
        for line in lines:
            if line == '"enableActingMaster":false':
                out[-1] = out[-1].rstrip(",")
            elif _NUMBER_KEY.match(line) and out and (in_map or out[-1].endswith("{")):
                out[-1] += line
                in_map = True
                continue
            else:
                out.append(line)
            in_map = False
        return out
    if name.startswith("queryMsgBy"):  # 4.9.8 prints a message's tracks on one line
        out = []
        for line in lines:
            if line.startswith("MessageTrack [") and out and out[-1].startswith("MessageTrack ["):
                out[-1] += line
            else:
                out.append(line)
        return out
    return lines
