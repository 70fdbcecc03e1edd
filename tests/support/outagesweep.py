"""Every reading command of both dialects, run in one fault state of the outage matrix: what each must do
whatever broke (issue: the toolkit tells the truth while the cluster is broken).

No stack trace, at most one line on stderr, an exit code the README documents (0 whole, 1 refused or a
verdict, 3 unreachable, 4 partial, and 4 exactly when a document says partial), a JSON document valid
against its schema, and an answer within a bound that one timeout per broker set allows. The figures
themselves are checked against the ground truth by the tests that call this; `diagnose`, which samples for
ten seconds or more, is checked there too.
"""

from __future__ import annotations

import json
import time

import jsonschema

from mqtools.common.exitcodes import EXIT_OK, EXIT_PARTIAL, EXIT_REFUSED, EXIT_UNREACHABLE
from mqtools.common.presentation import load_schema
from support.adminsupport import mq_here

TIMEOUT = "2"
HUNG_TIMEOUT = "1"
"""The timeout of a sweep in a state where every read waits out a hung broker: one second is still some hundred
times what an answering broker takes here, and the sweep ends in half the time."""
BOUND_SECONDS = 30.0
"""A read may wait one timeout per broker set it cannot reach, and start up; never a hang."""

#: mq's dialect, -o json, with {topic}, {group}, {addr} (a master that answers), {msg} (an offset msgId),
#: {uniq} (its msgId) and {key} filled in.
READS: dict[str, list[str]] = {
    "cluster list": ["cluster", "list"],
    "broker status": ["broker", "status", "{addr}"],
    "broker config get": ["broker", "config", "get", "{addr}"],
    "broker consume-stats": ["broker", "consume-stats", "{addr}"],
    "broker stats": ["broker", "stats", "-t", "{topic}"],
    "topic list": ["topic", "list"],
    "topic route": ["topic", "route", "{topic}"],
    "topic status": ["topic", "status", "{topic}"],
    "topic clusters": ["topic", "clusters", "{topic}"],
    "topic cq": ["topic", "cq", "{topic}", "0"],
    "group list": ["group", "list"],
    "group progress": ["group", "progress", "{group}"],
    "group status": ["group", "status", "{group}"],
    "group connections": ["group", "connections", "{group}"],
    "group consume-mode": ["group", "consume-mode", "{group}", "-t", "{topic}"],
    "producer connections": ["producer", "connections", "{group}", "{topic}"],
    "producer list": ["producer", "list"],
    "msg get": ["msg", "get", "{msg}"],
    "msg unique": ["msg", "unique", "{topic}", "{uniq}"],
    "msg key": ["msg", "key", "{topic}", "{key}"],
    "msg at": ["msg", "at", "{topic}", "broker-a", "0", "0"],
    "msg print": ["msg", "print", "{topic}"],
    "msg consume": ["msg", "consume", "{topic}", "-c", "8"],
    "dlq list": ["dlq", "list", "{group}"],
    "ha status": ["ha", "status"],
    "ha ready": ["ha", "ready", "broker-a"],
    "timer status": ["timer", "status"],
    "txn list": ["txn", "list"],
    "namesrv config get": ["namesrv", "config", "get"],
    "offset reset --dry-run": ["offset", "reset", "{group}", "{topic}", "--earliest", "--dry-run"],
    "offset skip --dry-run": ["offset", "skip", "{group}", "{topic}", "--dry-run"],
}

#: Reads of a cluster's proxies, {proxy} its remoting address: swept when the world has a proxy.
PROXY_READS: dict[str, list[str]] = {
    "proxy status": ["proxy", "status", "-p", "{proxy}"],
    "proxy clients": ["proxy", "clients", "-p", "{proxy}"],
}

#: The mqadmin dialect's names for reading commands (plain text, mqadmin's options and exit codes).
MQADMIN_READS: dict[str, list[str]] = {
    "clusterList": ["clusterList"],
    "topicList": ["topicList"],
    "topicRoute": ["topicRoute", "-t", "{topic}"],
    "topicStatus": ["topicStatus", "-t", "{topic}"],
    "topicClusterList": ["topicClusterList", "-t", "{topic}"],
    "brokerStatus": ["brokerStatus", "-b", "{addr}"],
    "consumerProgress": ["consumerProgress", "-g", "{group}"],
    "consumerProgress (all)": ["consumerProgress"],
    "statsAll": ["statsAll", "-t", "{topic}"],
    "queryMsgById": ["queryMsgById", "-t", "{topic}", "-i", "{msg}"],
    "queryMsgByKey": ["queryMsgByKey", "-t", "{topic}", "-k", "{key}"],
    "queryMsgByUniqueKey": ["queryMsgByUniqueKey", "-t", "{topic}", "-i", "{uniq}"],
    "queryMsgByOffset": ["queryMsgByOffset", "-t", "{topic}", "-b", "broker-a", "-i", "0", "-o", "0"],
    "getNamesrvConfig": ["getNamesrvConfig"],
    "haStatus": ["haStatus", "-b", "{addr}"],
    "queryCq": ["queryCq", "-t", "{topic}", "-q", "0", "-i", "0"],
}

DOCUMENTED = {EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_PARTIAL}


def sweep(namesrv: str, values: dict[str, str], timeout: str = TIMEOUT) -> dict[str, int]:
    """Run every read, each with `timeout`; the exit code of each by name. Raises AssertionError naming every read that broke
    a rule, one line each."""
    problems: list[str] = []
    codes: dict[str, int] = {}
    runs = [(name, ["admin", *[a.format(**values) for a in args], "-o", "json", "--timeout", timeout], True)
            for name, args in (READS | (PROXY_READS if "proxy" in values else {})).items()]
    # the mqadmin dialect has no --timeout, as mqadmin has none: MQ_TIMEOUT bounds its reads
    runs += [(name, ["admin", *[a.format(**values) for a in args]], False) for name, args in MQADMIN_READS.items()]
    runs.append(("top --once", ["top", "--once", "-o", "json", "--timeout", timeout], True))
    for name, argv, is_json in runs:
        began = time.monotonic()
        result = mq_here(*argv, namesrv=namesrv, env={"MQ_TIMEOUT": timeout})
        took = time.monotonic() - began
        codes[name] = result.returncode
        problem = None
        if "Traceback" in result.stderr or result.stderr.count("\n") > 1:
            problem = f"stderr: {result.stderr.strip()[-300:]}"
        elif result.returncode not in DOCUMENTED:
            problem = f"exit {result.returncode}: {result.stderr.strip()[-200:]}"
        elif took > BOUND_SECONDS:
            problem = f"took {took:.1f} s"
        elif is_json and result.stdout.strip():
            doc = json.loads(result.stdout)
            try:
                jsonschema.validate(doc, load_schema(doc["kind"]))
            except jsonschema.ValidationError as exc:
                problem = f"schema {doc['kind']} at {exc.json_path}: {exc.message}"
            else:
                if doc.get("partial") and result.returncode != EXIT_PARTIAL:
                    problem = f"partial document, exit {result.returncode}"
                elif result.returncode == EXIT_PARTIAL and not doc.get("partial"):
                    problem = "exit 4 for a whole document"
        if problem:
            problems.append(f"{name}: {problem}")
    assert not problems, "\n".join(problems)
    return codes


#: `mq mcp`'s read tools with their arguments ({...} filled as for `sweep`); the diagnoses, which sample for
#: ten seconds each, and the drill tools, which read local files, are left to the tests that judge them.
MCP_READS: dict[str, dict[str, str]] = {
    "cluster_list": {},
    "topic_list": {},
    "topic_status": {"topic": "{topic}"},
    "topic_route": {"topic": "{topic}"},
    "group_list": {},
    "group_progress": {"group": "{group}"},
    "group_connections": {"group": "{group}"},
    "group_consume_mode": {"group": "{group}", "topic": "{topic}"},
    "ha_status": {},
    "ha_ready": {"broker": "broker-a"},
    "timer_status": {},
    "message_by_key": {"topic": "{topic}", "key": "{key}"},
    "message_by_id": {"msg_id": "{msg}"},
    "proxy_clients": {"proxies": "{proxy}"},
}

#: What `mcp_sweep` gives that is not "whole" when no replica of broker-a answers (its master gone, its slave hung),
#: on mq's cluster and on Apache's alike: what needs broker-a is a partial document, or an error of one line when
#: only broker-a has it (broker-a's first message, by its offset msgId); the cluster list names the hung slave,
#: registered and not answering; the group list names broker-a, and the proxies' clients are partial with it (the
#: groups they were asked about leave out broker-a's).
NO_REPLICA_OF_A: dict[str, str] = {
    "cluster_list": "partial", "topic_status": "partial", "group_progress": "partial", "message_by_key": "partial", "timer_status": "partial",
    "group_consume_mode": "partial", "message_by_id": "error", "ha_status": "partial", "group_list": "partial",
    "proxy_clients": "partial"}


def mcp_sweep(namesrv: str, values: dict[str, str], timeout: str = TIMEOUT) -> dict[str, str]:
    """Every read tool of `mq mcp`, called as an MCP client's call runs (MQTools.call, in this process): the
    outcome of each by name, "whole", "partial" or "error". A result is a document valid against the tool's
    output schema, or an error of one line; a partial document is a result, never an error. Raises
    AssertionError naming every tool that broke a rule."""
    import asyncio

    from mqtools.client.contexts import Target
    from mqtools.mcp.server import MQTools

    tools = MQTools(lambda: Target(namesrv, "test"), allow_writes=False, timeout=float(timeout))
    assert set(MCP_READS) | {"drill_list", "drill_check", "diagnose_group", "diagnose_broker",
                             "diagnose_cluster"} == set(tools.tools), "a read tool is missing from the sweep"
    problems: list[str] = []
    outcomes: dict[str, str] = {}
    for name, args in MCP_READS.items():
        if "{proxy}" in args.get("proxies", "") and "proxy" not in values:
            continue  # a world without a proxy
        began = time.monotonic()
        result = asyncio.run(tools.call(name, {k: v.format(**values) for k, v in args.items()}))
        took = time.monotonic() - began
        text = result.content[0].text if result.content else ""
        problem = None
        if took > BOUND_SECONDS:
            problem = f"took {took:.1f} s"
        elif result.is_error:
            outcomes[name] = "error"
            if "\n" in text or "Traceback" in text or not text:
                problem = f"error not one line: {text[-300:]!r}"
        else:
            doc = result.structured_content
            assert doc is not None
            outcomes[name] = "partial" if doc.get("partial") else "whole"
            try:
                jsonschema.validate(doc, load_schema(tools.tools[name].kind or ""))
            except jsonschema.ValidationError as exc:
                problem = f"schema at {exc.json_path}: {exc.message}"
        if problem:
            problems.append(f"mcp {name}: {problem}")
    assert not problems, "\n".join(problems)
    return outcomes
