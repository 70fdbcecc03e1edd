"""Run our Java harnesses in a subprocess: tests/reference/java (on Apache's rocketmq-client 4.9.8 or 5.5.0, to a
name server) and tests/reference/java-grpc (on Apache's gRPC client rocketmq-client-java, to a proxy).

The harness prints one JSON event per line on stdout (`sent`, `received`, `done`, ...), as
tests/support/cppclient.py's scripts do for the C++ client; client logs go to the process's own directory.
`run_java` runs a command to its end; `JavaClient` keeps one running (a consumer), its events
gathered by a thread, and stops it by closing its stdin (`--expect 0`); `run_grpc_java` runs a command of the
gRPC harness to its end.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apache import DIE_WITH_PARENT, INTERFACE_GONE
from cds import Archive
from fetch import require

MAIN = "mqref.Main"
GRPC_MAIN = "mqgrpc.Main"

#: The JVM flags of a short client run: a small heap and the quickest start (C1 only, no perf data).
CLIENT_JVM = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData")

#: How a record of the Java client's log begins (its logback pattern).
_LOG_RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


#: The client's periodic rebalance, 20 s by default, every second: a retry topic's queue (whose route appears
#: after a consumer's first send-back) is taken at the next rebalance, so a retry test waited 20 s on each
#: side for it. The same on both sides, so Apache's run stays the oracle.
REBALANCE_EVERY = "-Drocketmq.client.rebalance.waitInterval=1000"
#: Consumers refresh their routes every second, not every 30 s: a consumer whose first route lookup at start did not
#: land (one run in six on the 5.5.0 client here) had no queue to pull for 30 s, and its test took 30 s longer
#: (test_sends_then_consume[orderly] 38 s instead of 8 in CI). The same on both sides.
ROUTE_POLL = ("--poll-name-server-ms", "1000")
#: A producer's whole-send budget (sendMsgTimeout, 3 s by default), 10 s unless a test names one: a fresh JVM's
#: first send (class loading, the route lookup, the first connection) took more than 3 s beside CI's other workers
#: and failed "sendDefaultImpl call timeout" before any attempt (CI at 6bc0b18: an ACL test's first send, a mixed
#: cluster's first four). The same on both sides, so Apache's run stays the oracle.
SEND_TIMEOUT = ("--send-timeout-ms", "10000")
#: The client's budget for each request of its own (mqClientApiTimeout, 3 s by default: route lookups, heartbeats),
#: 10 s unless a test names one: a fresh consumer's first route lookup went unanswered in 3 s beside CI's other
#: workers and the 4.9 client's start threw on it (CI at 926ab7d, test_transactions[rollback]: "wait response on the
#: channel ... timeout" from DefaultMQPushConsumerImpl.start). The same on both sides, so Apache's run stays the oracle.
CLIENT_API_TIMEOUT = ("--client-api-timeout-ms", "10000")


def java_argv(command: str, namesrv: str, *args: str, client: str = "harness",
              cds: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The harness on the client set `client` ("harness": rocketmq-client 4.9.8, "harness-5": 5.5.0), with the
    class-data-sharing flags `cds`."""
    aset = require(client)
    poll = ROUTE_POLL if command in ("consume", "litepull") and ROUTE_POLL[0] not in args else ()
    budget = SEND_TIMEOUT if command in ("produce", "transaction") and SEND_TIMEOUT[0] not in args else ()
    api = CLIENT_API_TIMEOUT if CLIENT_API_TIMEOUT[0] not in args else ()
    return [*DIE_WITH_PARENT, "java", *CLIENT_JVM, *cds, REBALANCE_EVERY, "-cp", aset.classpath(), MAIN, command,
            "--namesrv", namesrv, *args, *poll, *budget, *api]


def _parse(lines: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    events, noise = [], []
    for line in lines:
        try:
            events.append(json.loads(line))
        except ValueError:
            noise.append(line)
    return events, noise


@dataclass
class JavaRun:
    """A finished harness run: its events, exit code and stderr."""

    argv: list[str]
    returncode: int
    events: list[dict[str, Any]]
    stderr: str
    noise: list[str] = field(default_factory=list)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == kind]

    @property
    def done(self) -> dict[str, Any]:
        done = self.of("done")
        assert done, self.describe()
        return done[-1]

    def describe(self) -> str:
        failures = "\n".join(json.dumps(e) for e in self.events if e.get("event") in ("send_failed", "error"))
        tail = "\n".join(json.dumps(e) for e in self.events[-15:])
        return (f"java harness {' '.join(self.argv[-12:])} exited {self.returncode}\nfailures:\n{failures}\n"
                f"events (last 15):\n{tail}\n"
                f"noise: {self.noise[-5:]}\nstderr: {self.stderr[-3000:]}")


def _env(log_dir: Path | None, var: str = "MQREF_LOG_DIR") -> dict[str, str]:
    env = dict(os.environ)
    if log_dir is not None:
        env[var] = str(log_dir)
    return env


def _run(argv: list[str], timeout: float, env: dict[str, str], ok: tuple[int, ...]) -> JavaRun:
    """The harness to its end; once more when it failed because an interface vanished while the client listed
    them for its clientIP (apache.INTERFACE_GONE: the machine's doing, not the client's)."""
    def once() -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                              env=env, check=False)

    done = once()
    if done.returncode not in ok and INTERFACE_GONE in done.stderr + done.stdout:
        done = once()
    events, noise = _parse(done.stdout.splitlines())
    run = JavaRun(argv, done.returncode, events, done.stderr, noise)
    assert done.returncode in ok, run.describe()
    return run


def _run_archived(archive: Archive, argv_for: Callable[[list[str]], list[str]], timeout: float,
                  env: dict[str, str], ok: tuple[int, ...]) -> JavaRun:
    """A run to its end that maps the harness's class archive, or writes it when there is none yet (cds.py)."""
    flags, written = archive.flags()
    ended_well = False
    try:
        run = _run(argv_for(flags), timeout, env, ok)
        ended_well = run.returncode == 0
        return run
    finally:
        archive.settle(written, ended_well)


def run_java(command: str, namesrv: str, *args: str, timeout: float = 120.0, log_dir: Path | None = None,
             ok: tuple[int, ...] = (0,), client: str = "harness") -> JavaRun:
    """Run `mqref.Main command --namesrv NS args...` to its end; fail with its events and stderr unless
    its exit code is in `ok`."""
    return _run_archived(Archive(client), lambda cds: java_argv(command, namesrv, *args, client=client, cds=cds),
                         timeout, _env(log_dir), ok)


def run_grpc_java(command: str, endpoints: str, *args: str, timeout: float = 120.0, log_dir: Path | None = None,
                  ok: tuple[int, ...] = (0,)) -> JavaRun:
    """Run `mqgrpc.Main command --endpoints PROXY args...` (the gRPC harness on rocketmq-client-java) to its end;
    fail with its events and stderr unless its exit code is in `ok`."""
    return _run_archived(Archive("grpc-java"), lambda cds: grpc_java_argv(command, endpoints, *args, cds=cds),
                         timeout, _env(log_dir, "MQGRPC_LOG_DIR"), ok)


def grpc_java_argv(command: str, endpoints: str, *args: str, cds: list[str] | tuple[str, ...] = ()) -> list[str]:
    return [*DIE_WITH_PARENT, "java", *CLIENT_JVM, *cds, "-cp", require("grpc-java").classpath(), GRPC_MAIN, command,
            "--endpoints", endpoints, *args]


class JavaClient:
    """A long-running harness process (a consumer); `close()` ends it through stdin and waits for `done`."""

    def __init__(self, command: str, namesrv: str, *args: str, log_dir: Path | None = None,
                 client: str = "harness") -> None:
        self._start(java_argv(command, namesrv, *args, client=client, cds=Archive(client).map_flags()),
                    _env(log_dir))

    def _start(self, argv: list[str], env: dict[str, str], var: str = "MQREF_LOG_DIR") -> None:
        self.argv = argv
        # the client's log kept until close(), so a wait that times out can say what the client logged
        # (a broadcasting consumer on Apache's broker once received nothing in 60 s in CI, with no trace)
        self._own_logs = None if env.get(var) else tempfile.TemporaryDirectory(prefix="mqref-log")
        if self._own_logs is not None:
            env = {**env, var: self._own_logs.name}
        self.log_dir = Path(env[var])
        self._stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (read by run(), closed by close())
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                     text=True, env=env)
        self.lines: list[str] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    @property
    def events(self) -> list[dict[str, Any]]:
        with self._cond:
            return _parse(list(self.lines))[0]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == kind]

    def wait_for(self, predicate: Callable[[list[dict[str, Any]]], Any], timeout: float, what: str) -> Any:
        """Wait until `predicate(events)` is true (woken by each new line), else fail with the events."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                value = predicate(_parse(list(self.lines))[0])
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not value):
                    raise AssertionError(f"timed out waiting for {what}\n{self.run().describe()}\n"
                                         f"client log:\n{self.client_log()}")
                self._cond.wait(min(left, 1.0))

    def client_log(self, lines: int = 20) -> str:
        """The client's last `lines` distinct WARN and ERROR records, each with its exception's message (the
        lines after it that are not stack frames), and how many times each came."""
        records: list[str] = []
        for log in sorted(self.log_dir.rglob("*.log")):
            current: list[str] | None = None
            for line in log.read_text(errors="replace").splitlines():
                if _LOG_RECORD.match(line):
                    current = [line] if " WARN " in line or " ERROR " in line else None
                    if current is not None:
                        records.append("")
                elif current is not None and line.strip() and not line.lstrip().startswith("at ") and len(current) < 3:
                    current.append(line.strip())
                if current is not None:
                    records[-1] = " | ".join(current)
        counts: dict[str, int] = {}
        for record in records:  # the same record again and again, once, with its count (timestamps left out)
            key = record.split(" ", 2)[-1]
            counts[key] = counts.get(key, 0) + 1
        last = {record.split(" ", 2)[-1]: record for record in records}
        shown = [f"{last[key]}  (x{n})" for key, n in counts.items()]
        return "\n".join(shown[-lines:]) or "(no WARN or ERROR)"

    def received(self) -> list[dict[str, Any]]:
        return self.of("received")

    def run(self) -> JavaRun:
        self._stderr.seek(0)
        events, noise = _parse(list(self.lines))
        return JavaRun(self.argv, self.proc.returncode if self.proc.returncode is not None else -1, events,
                       self._stderr.read(), noise)

    def close(self, timeout: float = 30.0) -> JavaRun:
        """Close stdin (the harness then shuts its client down and prints done); kill if it hangs."""
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        run = self.run()
        self._stderr.close()
        if self._own_logs is not None:
            self._own_logs.cleanup()
        return run


class GrpcJavaClient(JavaClient):
    """A gRPC harness command running beside the test (a consumer started before the producer); it ends by itself
    (its --expect or --timeout-ms), and `close()` waits for that, killing it if it hangs."""

    def __init__(self, command: str, endpoints: str, *args: str, log_dir: Path | None = None) -> None:
        self._start(grpc_java_argv(command, endpoints, *args, cds=Archive("grpc-java").map_flags()),
                    _env(log_dir, "MQGRPC_LOG_DIR"), "MQGRPC_LOG_DIR")
