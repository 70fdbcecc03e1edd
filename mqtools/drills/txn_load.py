"""The transactional load of the kill-producer-in-transaction drill: producer processes, their journals.

Transactional producers run as processes of their own (mqtools.drills.txn_producer), so the fault is a
real SIGKILL: a producer dies wherever it is, between a half message and its END_TRANSACTION included.
The drill starts a new generation of producers of the same group after the fault; the brokers ask them
about what the dead ones left open, and they answer from the dead ones' journals.

After the run the journals become the history's send operations, judged by the usual checkers:
a transaction the local side decided to commit is acknowledged (`ok`: it must be consumed exactly
once); one it rolled back, and one whose producer died before deciding, is `fail` (it must never be
consumed: a check answers ROLLBACK for it); a send that raised is `unknown`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqtools.client.admin import MQAdmin
from mqtools.client.errors import MQClientError
from mqtools.common.security import ClientSecurity
from mqtools.drills.history import FAIL, OK, ROLLED_BACK, SEND, UNKNOWN, Op
from mqtools.drills.load import LoadSpec
from mqtools.drills.timeline import percentile
from mqtools.drills.txn_producer import SECURITY_ENV, read_journals

READY_TIMEOUT = 30.0


@dataclass
class TransactionLoad:
    namesrv: str
    topic: str
    group: str
    """The producer group (the drill's consumer group + `_TX`)."""
    spec: LoadSpec
    run_id: str
    clock_base: float
    """The drill clock's zero, as time.monotonic() (the same clock in every process)."""
    journals: Path
    security: ClientSecurity | None = None
    generation: int = 0
    procs: list[subprocess.Popen] = field(default_factory=list)
    killed_at: float | None = None
    """When the producers were killed, on the drill clock: where a transaction they left undecided ended."""

    async def start(self, until: float) -> None:
        """A generation of spec.producers processes, sending (rate shared) until drill-clock second `until`;
        returns once each said READY (spawned and awaited off the event loop)."""
        self.procs += await asyncio.to_thread(self._spawn_generation, until)
        self.generation += 1

    def _spawn_generation(self, until: float) -> list[subprocess.Popen]:
        self.journals.mkdir(parents=True, exist_ok=True)
        env = {**os.environ}
        if self.security is not None:
            env[SECURITY_ENV] = json.dumps(self.security.to_json())
        n = max(1, self.spec.producers)
        started = []
        try:
            for k in range(n):
                argv = [sys.executable, "-m", "mqtools.drills.txn_producer", "--namesrv", self.namesrv, "--topic",
                        self.topic, "--group", self.group, "--run-id", self.run_id, "--name",
                        f"g{self.generation}p{k}", "--journals", str(self.journals), "--rate", str(self.spec.rate / n),
                        "--until", str(until), "--clock-base", repr(self.clock_base), "--size", str(self.spec.size),
                        "--send-timeout", str(self.spec.send_timeout)]
                started.append(subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env))
            for proc in started:
                self._await_ready(proc)
        except BaseException:
            for proc in started:
                proc.kill()
            raise
        return started

    @staticmethod
    def _await_ready(proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        deadline = time.monotonic() + READY_TIMEOUT
        for line in proc.stdout:
            if line.strip() == b"READY":
                return
            if time.monotonic() > deadline:
                break
        proc.kill()
        raise MQClientError("a transactional producer process did not start")

    def kill(self) -> list[int]:
        """SIGKILL every producer process still running; their pids."""
        pids = []
        self.killed_at = round(time.monotonic() - self.clock_base, 4)
        for proc in self.procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                pids.append(proc.pid)
        for proc in self.procs:
            proc.wait(10)
        return pids

    async def sending_done(self, timeout: float) -> None:
        """Until the live generation wrote `done` (it stops sending at its `until`)."""
        deadline = time.monotonic() + timeout
        live = {f"g{self.generation - 1}p{k}" for k in range(max(1, self.spec.producers))}
        while time.monotonic() < deadline:
            done = {e["journal"] for e in read_journals(self.journals) if e.get("e") == "done"}
            if live <= done:
                return
            await asyncio.sleep(0.2)

    async def open_left(self, admin: MQAdmin) -> int | None:
        """Transactions of the group the brokers still hold open; None when they could not be read, from any
        broker (a count without one would say the checks settled what they did not)."""
        try:
            brokers = await admin.transactions.open_transactions()
        except MQClientError:
            return None
        if any(b.error for b in brokers):
            return None
        return sum(1 for b in brokers for t in b.open if t.producer_group == self.group)

    async def settle(self, admin: MQAdmin, cap: float) -> int | None:
        """Until the brokers hold none of the group's transactions open (the checks settled them), or `cap`
        seconds; what is still open."""
        deadline = time.monotonic() + cap
        left = await self.open_left(admin)
        while left != 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            left = await self.open_left(admin)
        return left

    def stop(self) -> None:
        """Let the live producers go (their stdin closes), then make sure none is left."""
        for proc in self.procs:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    def ops(self) -> list[Op]:
        """The journals as the history's send operations (see the module docstring)."""
        sends: dict[str, Op] = {}
        for e in read_journals(self.journals):
            kind, drill_id = e.get("e"), e.get("id")
            if kind == "send":
                sends[drill_id] = Op(f"txn-{e['journal']}", SEND, drill_id, e["t"], e["t"], FAIL,
                                     planned=e["t"], error="the producer died before its local transaction decided")
            op = sends.get(drill_id)
            if op is None:
                continue
            if kind == "half":
                op.msg_id = e.get("uniq")
            elif kind == "decided":
                op.result = OK if e["d"] == "COMMIT" else FAIL
                op.error = None if e["d"] == "COMMIT" else "rolled back by its local transaction"
                op.status = None if e["d"] == "COMMIT" else ROLLED_BACK
                op.complete = e["t"]
            elif kind == "ended":
                op.complete = e["t"]
            elif kind == "error" and op.msg_id is None:
                op.result, op.error, op.complete = UNKNOWN, e.get("error"), e["t"]
        ops = list(sends.values())
        if self.killed_at is not None:
            for op in ops:  # undecided when its producer died: the operation ended with the process
                if op.result == FAIL and op.status is None and op.complete < self.killed_at:
                    op.complete = self.killed_at
        return ops

    def open_at_kill(self) -> int:
        """Transactions of the first generation begun but never ended: what its SIGKILL left to the checks."""
        begun, ended = set(), set()
        for e in read_journals(self.journals):
            if not e["journal"].startswith("g0"):
                continue
            if e.get("e") == "send":
                begun.add(e.get("id"))
            elif e.get("e") in ("ended", "error"):
                ended.add(e.get("id"))
        return len(begun - ended)

    def checks(self) -> dict[str, Any]:
        """How the checks went: answered COMMIT, answered ROLLBACK, and `waits`: for each transaction the
        checks settled, seconds from its half message stored to the first check answered (how long a
        dead producer's transaction stayed open, which transactionTimeOut and the check period bound)."""
        entries = read_journals(self.journals)
        answered = [e for e in entries if e.get("e") == "checked"]
        stored = {e["id"]: e["t"] for e in entries if e.get("e") == "half"}
        first: dict[str, float] = {}
        for e in answered:
            if e["id"] in stored:
                first[e["id"]] = min(first.get(e["id"], e["t"]), e["t"])
        return {"commit": sum(1 for e in answered if e["d"] == "COMMIT"),
                "rollback": sum(1 for e in answered if e["d"] != "COMMIT"),
                "waits": [t - stored[i] for i, t in first.items()]}


def check_back(waits: list[float]) -> dict[str, float | None]:
    """The report's check-back figures from `TransactionLoad.checks()`'s waits: median and longest, in
    seconds; None when no check was answered."""
    p50 = percentile(waits, 0.5)
    return {"checkBackP50S": None if p50 is None else round(p50, 2),
            "checkBackMaxS": round(max(waits), 2) if waits else None}
