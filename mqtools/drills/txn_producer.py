"""One transactional producer process of the kill-producer-in-transaction drill.

`python -m mqtools.drills.txn_producer ...` sends transactions at a constant rate until the drill clock
passes --until, then only answers the brokers' checks until its stdin closes. Each transaction's local
part (a database write, say) works, decides, and commits between the half message and its end, and
every ROLLBACK_EVERY-th one rolls back. What it does goes to its journal (one JSON line per step, written
with one system call, so a SIGKILL leaves whole lines): `send` before the half message, `half` once it is
stored, `decided` when the local transaction decided, `ended` after END_TRANSACTION went out, `checked`
when it answered a check. A check is answered from every journal of the run (the decision of a
producer that died is in its journal), ROLLBACK where none decided: a local transaction that never
decided never committed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from mqtools.client.transaction import LocalTransactionState, TransactionProducer
from mqtools.common import properties as P
from mqtools.common.message import Message, MessageExt
from mqtools.common.security import ClientSecurity

#: The environment variable a drill hands its ClientSecurity (TLS, ACL credentials) over in, as JSON.
SECURITY_ENV = "MQ_DRILL_SECURITY"
#: The local transaction's work before it decides, and its commit after (a database's answer): a SIGKILL
#: lands in both windows, leaving undecided transactions (the checks roll them back) and decided ones
#: whose END_TRANSACTION never went out (the checks settle them as decided).
LOCAL_WORK_MAX_S = 0.15
LOCAL_COMMIT_MAX_S = 0.1
ROLLBACK_EVERY = 4


class Journal:
    """Append-only JSON lines, one write(2) each."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, **entry: Any) -> None:
        os.write(self.fd, json.dumps(entry, separators=(",", ":")).encode() + b"\n")


def read_journals(directory: Path) -> list[dict[str, Any]]:
    """Every whole line of every journal of the run (a torn last line is left out)."""
    entries = []
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                entries.append({**json.loads(line), "journal": path.stem})
            except ValueError:
                continue
    return entries


def decisions(directory: Path) -> dict[str, str]:
    return {e["id"]: e["d"] for e in read_journals(directory) if e.get("e") == "decided"}


async def run(args: argparse.Namespace) -> None:
    directory = Path(args.journals)
    journal = Journal(directory / f"{args.name}.jsonl")

    def now() -> float:
        return round(time.monotonic() - args.clock_base, 4)

    async def execute(msg: Message, index: int) -> LocalTransactionState:
        drill_id = msg.properties[P.KEYS]
        journal.write(e="half", id=drill_id, uniq=msg.properties.get(P.UNIQ_KEY), t=now())
        await asyncio.sleep(random.uniform(0, LOCAL_WORK_MAX_S))
        decision = "ROLLBACK" if index % ROLLBACK_EVERY == ROLLBACK_EVERY - 1 else "COMMIT"
        journal.write(e="decided", id=drill_id, d=decision, t=now())
        await asyncio.sleep(random.uniform(0, LOCAL_COMMIT_MAX_S))
        return LocalTransactionState[decision]

    def check(msg: MessageExt) -> LocalTransactionState:
        drill_id = msg.properties.get(P.KEYS, "")
        decision = decisions(directory).get(drill_id, "ROLLBACK")
        journal.write(e="checked", id=drill_id, d=decision, t=now())
        return LocalTransactionState[decision]

    async def one(producer: TransactionProducer, index: int) -> None:
        drill_id = f"{args.run_id}-{args.name}-{index:06d}"
        body = drill_id.encode().ljust(args.size, b".")
        journal.write(e="send", id=drill_id, t=now())
        try:
            result = await producer.send_in_transaction(Message(args.topic, body, properties={P.KEYS: drill_id}), index)
        except Exception as exc:  # noqa: BLE001 - recorded: the half message may or may not be stored
            journal.write(e="error", id=drill_id, error=f"{type(exc).__name__}: {exc}", t=now())
            return
        journal.write(e="ended", id=drill_id, state=result.state.name, t=now())

    raw = os.environ.get(SECURITY_ENV)
    security = ClientSecurity.from_json(json.loads(raw)) if raw else None
    async with TransactionProducer(args.group, namesrv=args.namesrv, execute=execute, check=check,
                                   security=security, topics=[args.topic], send_timeout=args.send_timeout) as producer:
        print("READY", flush=True)
        tasks: set[asyncio.Task] = set()
        start = time.monotonic()
        i = 0
        while now() < args.until:
            delay = start + i / args.rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.create_task(one(producer, i))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            i += 1
        if tasks:
            await asyncio.wait(set(tasks))
        journal.write(e="done", sent=i, t=now())
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # checks until the drill lets go


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mqtools.drills.txn_producer")
    parser.add_argument("--namesrv", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--name", required=True, help="The process's name: its journal and its ids' infix.")
    parser.add_argument("--journals", required=True, help="The run's journal directory.")
    parser.add_argument("--rate", type=float, required=True)
    parser.add_argument("--until", type=float, required=True, help="Stop sending at this drill-clock second.")
    parser.add_argument("--clock-base", type=float, required=True, help="The drill clock's zero (time.monotonic).")
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--send-timeout", type=float, default=3.0)
    from mqtools.common.loop import run as run_loop

    run_loop(run(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
