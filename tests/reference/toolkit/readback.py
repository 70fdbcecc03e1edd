"""Apache's own reading of a write made on its cluster: mqadmin 4.9.8 in a JVM per read (as operators run
it), parsed into what a test compares; and `mq admin` run in-process for the write itself."""

from __future__ import annotations

import json
import re
from pathlib import Path

import apache
from adminsupport import mq_here
from tkworld import World


def mqadmin(root: Path, namesrv: str, *args: str) -> str:
    """What Apache's mqadmin printed; it must have succeeded."""
    done = apache.mqadmin(root, *args, "-n", namesrv)
    assert done.returncode == 0 and "Exception" not in done.stdout + done.stderr, (
        f"exit {done.returncode}\n{done.stderr}\n{done.stdout}")
    return done.stdout


def ok(*args: str, world: World, stdin: str | None = None) -> str:
    """`mq admin ARGS` on the world's cluster; it must have succeeded."""
    result = mq_here("admin", *args, namesrv=world.namesrv, stdin=stdin)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def route(root: Path, namesrv: str, topic: str) -> dict[str, tuple[int, int, int]]:
    """Apache's topicRoute: per broker name, (read queues, write queues, perm)."""
    doc = json.loads(re.sub(r"([{,]\s*)(\d+):", r'\1"\2":', mqadmin(root, namesrv, "topicRoute", "-t", topic)))
    return {q["brokerName"]: (q["readQueueNums"], q["writeQueueNums"], q["perm"]) for q in doc["queueDatas"]}


_BROKER_HEADER = re.compile(r"^=+[^:]*:(\S+?)=+$")


def consumer_config(root: Path, world: World, group: str) -> dict[str, dict[str, str]]:
    """Apache's getConsumerConfig: per broker name, the group's config fields (none: the group is gone)."""
    configs: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in mqadmin(root, world.namesrv, "getConsumerConfig", "-g", group).splitlines():
        header = _BROKER_HEADER.match(line.strip())
        if header:
            current = configs.setdefault(header.group(1), {})
        elif current is not None and "=" in line:
            key, value = line.split("=", 1)
            current[key.strip()] = value.strip()
    return configs


def diff_total(root: Path, world: World, group: str) -> int:
    """Apache's consumerProgress -g GROUP: its 'Diff Total' line."""
    out = mqadmin(root, world.namesrv, "consumerProgress", "-g", group)
    return int(next(line.split(":", 1)[1] for line in out.splitlines() if line.startswith("Diff Total:")))
