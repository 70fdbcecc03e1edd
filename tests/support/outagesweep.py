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
    "group list": ["group", "list"],
    "group progress": ["group", "progress", "{group}"],
    "group status": ["group", "status", "{group}"],
    "group connections": ["group", "connections", "{group}"],
    "msg get": ["msg", "get", "{msg}"],
    "msg unique": ["msg", "unique", "{topic}", "{uniq}"],
    "msg key": ["msg", "key", "{topic}", "{key}"],
    "msg at": ["msg", "at", "{topic}", "broker-a", "0", "0"],
    "dlq list": ["dlq", "list", "{group}"],
    "ha status": ["ha", "status"],
    "ha ready": ["ha", "ready", "broker-a"],
    "timer status": ["timer", "status"],
    "txn list": ["txn", "list"],
    "namesrv config get": ["namesrv", "config", "get"],
    "offset reset --dry-run": ["offset", "reset", "{group}", "{topic}", "--earliest", "--dry-run"],
    "offset skip --dry-run": ["offset", "skip", "{group}", "{topic}", "--dry-run"],
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
}

DOCUMENTED = {EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_PARTIAL}


def sweep(namesrv: str, values: dict[str, str]) -> dict[str, int]:
    """Run every read; the exit code of each by name. Raises AssertionError naming every read that broke
    a rule, one line each."""
    problems: list[str] = []
    codes: dict[str, int] = {}
    runs = [(name, ["admin", *[a.format(**values) for a in args], "-o", "json", "--timeout", TIMEOUT], True)
            for name, args in READS.items()]
    runs += [(name, ["admin", *[a.format(**values) for a in args]], False) for name, args in MQADMIN_READS.items()]
    runs.append(("top --once", ["top", "--once", "-o", "json"], True))
    for name, argv, is_json in runs:
        began = time.monotonic()
        result = mq_here(*argv, namesrv=namesrv)
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
