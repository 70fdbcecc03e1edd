"""The same load against Apache RocketMQ's broker (4.9.7, or 5.5.0 with --apache) and mq's, one after the other.

Apache's broker is the baseline: the figures say how far mq's broker is from the server it imitates,
under the same clients. Each side gets its own name server and broker (ASYNC_MASTER, ASYNC_FLUSH,
1 GiB commitlog files), the topics (8 queues) created before the load. Both sides are up at once and take
each case in turn, one right after the other (who goes first alternates from round to round, --rounds): a
shared machine whose speed drifts over minutes (30% within half an hour, seen here) then moves both
figures of a case together instead of deciding the ratio. The side not under load is stopped meanwhile
(SIGSTOP, then SIGCONT: an idle JVM broker used up to 0.12 cores), and what it used all the same is printed
(`idle`). A side's first round is its JVM's first minutes: Apache's send1 then ran at 0.4-0.6 of its
later rounds' rate, which --rounds 3 keeps out of the median.

  a  Apache's Java client (our harness, tests/reference/java, rocketmq-client 4.9.8): sync sends from 1
     and 64 threads (send1, send64), async sends with 256 in flight (async256), batches of 32 (batch32)
  b  our Python Producer as bench/client_produce.py drives it, one client process, after a warm-up of a
     fifth of --seconds: sends with 64 in flight (py64), async sends with 256 in flight and auto-batching
     (py_auto256)
  c  a push consumer draining a backlog of --backlog messages (written by the Java client's batches):
     the Java consumer (Apache's client defaults: 20 consume threads, pull batches of 32) and our
     PushConsumer (bench/client_consume.py's settings); both timed from their first message to their
     last, as the harness times it, each in a fresh group from the first offset
  d  SYNC_MASTER with one slave (same brokerName, brokerId=1): 64 threads of Java sync sends (sync64_slave)
  e  start-up (startup): from launching the name server to the first SEND_OK, as an operator brings a
     node up: the name server is launched and awaited (mq: its READY line; Apache: GET_BROKER_CLUSTER_INFO
     answered, polled every 0.1 s), then the broker is launched while our Producer sends to a new topic
     (auto-created through TBW102, allowed on both) every 20 ms until one returns SEND_OK; --startups runs
     each, the median is reported

The harness sends a fixed --count, so each Java case first runs a warm-up of about a fifth of
--seconds (a guessed rate) and sizes its timed run from the warm-up's rate (and once more from the timed
run's, when that ended in under half of --seconds). Per case and side: msgs/s (messages in seconds),
the client's p50/p99 latency where it measures one, the broker's CPU microseconds per message (psutil
cpu_times before/after the timed run, as broker_send.with_cpu; it includes the broker's idle work while
the client JVM starts, ~0.05 core on Apache's), the cores that makes (CPU seconds over the client's
seconds) and msgs/s per broker core, the broker's RSS after the case (MiB; both brokers map their
commitlog, so RSS counts the page cache they touched; `anon` is RssAnon, the rest), then mq/Apache.
No targets: the figures are reported, not judged.

With --rounds N (default 1) every case runs N times on each side; a case's line gives each side's median
round (by msgs/s) and the median of the rounds' ratios, with every round's ratio.

With --fast-failure mq's brokers run with brokerFastFailureEnable=true, as Apache's do by default (mq's is off,
docs/compatibility.md): a send the broker refuses as busy (SYSTEM_BUSY) then counts in ERRORS on both sides.

Usage: .venv/bin/python bench/reference.py [--seconds 10] [--backlog 200000] [--rounds 1]
       [--cases a,b,c,d,e] [--startups 3] [--dir D] [--apache 4.9.7|5.5.0] [--fast-failure]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "reference"))

import apache
import broker_send
import client_produce
from benchsupport import client_loop, memory, run_client
from fetch import FETCH_COMMAND, SETS
from javaclient import run_java
from support.mqproc import MqProcess, start_broker, start_namesrv

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.client.errors import MQClientError
from mqtools.client.producer import Producer
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult, SendStatus
from mqtools.common.message import Message, MessageExt
from mqtools.remoting.bodies import TopicConfig

TOPIC = broker_send.TOPIC  # client_produce's Producer driver sends to it
BACKLOG_TOPIC = "RefBacklog"
QUEUES = broker_send.QUEUES
BODY_SIZE = len(broker_send.BODY)
CLUSTER = "BenchRef"
BROKER = "broker-ref"
STORE = {"flushDiskType": "ASYNC_FLUSH", "mappedFileSizeCommitLog": str(1024 * 1024 * 1024)}

#: Java cases of (a): harness options and a guessed rate (msgs/s) that sizes the warm-up only.
JAVA_SENDS: dict[str, tuple[tuple[str, ...], int]] = {
    "send1": (("--mode", "sync", "--threads", "1"), 4_000),
    "send64": (("--mode", "sync", "--threads", "64"), 12_000),
    "async256": (("--mode", "async", "--in-flight", "256"), 20_000),
    "batch32": (("--mode", "batch", "--batch-size", "32"), 50_000),
}
#: Cases of (b): client_produce.run_producer's kind, sends in flight, auto-batching.
PY_SENDS: dict[str, tuple[str, int, bool]] = {"py64": ("send", 64, False), "py_auto256": ("async", 256, True)}
SYNC_CASE = ("--mode", "sync", "--threads", "64")
#: --apache: the reference set (bench/fetch.py) each Apache release runs from.
RELEASES = {"4.9.7": "apache-4", "5.5.0": "apache-5"}
CASES = {"a": list(JAVA_SENDS), "b": list(PY_SENDS), "c": ["consume_java", "consume_py"], "d": ["sync64_slave"],
         "e": ["startup"]}
#: case -> side name -> its rounds' figures (the start-up case keeps one dict of figures per side).
Results = dict[str, dict[str, Any]]
#: (e): how often the start-up probe sends, and how long it tries.
PROBE_STEP, STARTUP_TIMEOUT = 0.02, 120.0


def note(msg: str) -> None:
    """Progress on stderr (stdout holds the figures)."""
    print(f"[reference {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class Side:
    """One broker under load: its name (apache/mq), name server, the broker's pid and its slave's."""

    name: str
    namesrv: str
    pid: int
    slave_pid: int | None = None
    #: Every process of the side (name server included): stopped (SIGSTOP) while the other side runs a case.
    every_pid: tuple[int, ...] = ()

    @property
    def pids(self) -> list[int]:
        """The broker's and its slave's."""
        return [self.pid] + ([self.slave_pid] if self.slave_pid else [])


def prepare(namesrv: str, brokers: int) -> None:
    """Wait until `brokers` brokers of BROKER are registered, create the topics, wait for their routes:
    the load starts on a broker that knows its topics."""
    deadline = time.monotonic() + 60
    with SyncMQAdmin(namesrv, timeout=5.0) as admin:
        while True:
            with suppress(MQClientError, OSError, TimeoutError):
                data = admin.cluster_info().broker_addr_table.get(BROKER)
                if data is not None and len(data.broker_addrs) >= brokers:
                    break
            if time.monotonic() > deadline:
                raise SystemExit(f"reference: {brokers} broker(s) never registered with {namesrv}")
            time.sleep(0.2)
        for topic in (TOPIC, BACKLOG_TOPIC):
            admin.topics.create_topic(TopicConfig(topic, read_queue_nums=QUEUES, write_queue_nums=QUEUES), cluster=CLUSTER)
        for topic in (TOPIC, BACKLOG_TOPIC):
            while True:
                with suppress(MQClientError, OSError, TimeoutError):
                    if len(admin.messages.message_queues(topic)) >= QUEUES:
                        break
                if time.monotonic() > deadline:
                    raise SystemExit(f"reference: no route for {topic} on {namesrv}")
                time.sleep(0.2)


@contextmanager
def apache_side(root: Path, sync: bool, release: str = RELEASES["4.9.7"]) -> Iterator[Side]:
    """Apache (the reference set `release`): a name server and a master (ASYNC_MASTER, or SYNC_MASTER with one
    slave); all killed on exit (the store is thrown away: no need for the shutdown hook's 10 s)."""
    procs: list[apache.ApacheProcess] = []
    try:
        namesrv = apache.start_namesrv(root, release)
        procs.append(namesrv)
        master = apache.start_broker(root, namesrv.addr, release, name=BROKER, cluster=CLUSTER,
                                     brokerRole="SYNC_MASTER" if sync else "ASYNC_MASTER", **STORE)
        procs.append(master)
        slave = None
        if sync:
            slave = apache.start_broker(root, namesrv.addr, release, name=BROKER, broker_id=1, cluster=CLUSTER,
                                        brokerRole="SLAVE", **STORE)
            procs.append(slave)
        prepare(namesrv.addr, 2 if sync else 1)
        yield Side("apache", namesrv.addr, master.pid, slave.pid if slave else None, tuple(p.pid for p in procs))
    finally:
        for proc in reversed(procs):
            proc.kill()


@contextmanager
def mq_side(root: Path, sync: bool, fast_failure: bool = False) -> Iterator[Side]:
    """mq: the same roles as apache_side, as `mq namesrv` / `mq broker` processes; all stopped on exit."""
    procs: list[MqProcess] = []
    root.mkdir(parents=True, exist_ok=True)
    try:
        namesrv = start_namesrv(root)
        procs.append(namesrv)
        common = {"brokerName": BROKER, "brokerClusterName": CLUSTER, **STORE,
                  "brokerFastFailureEnable": str(fast_failure).lower()}
        master = start_broker(root, namesrv.addr, "master", brokerId="0",
                              brokerRole="SYNC_MASTER" if sync else "ASYNC_MASTER", **common)
        procs.append(master)
        slave = None
        if sync:
            slave = start_broker(root, namesrv.addr, "slave", brokerId="1", brokerRole="SLAVE", **common)
            procs.append(slave)
        prepare(namesrv.addr, 2 if sync else 1)
        yield Side("mq", namesrv.addr, master.pid, slave.pid if slave else None, tuple(p.pid for p in procs))
    finally:
        for proc in reversed(procs):
            proc.stop()


def measured(side: Side, case: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`case`'s figures ("msgs", "elapsed" seconds, ...) with msgs/s, the broker's (and slave's) CPU
    microseconds per message over it, and the broker's memory after it."""
    pids = side.pids
    before = [broker_send.cpu_seconds(pid) for pid in pids]
    result = case()
    cpu = [broker_send.cpu_seconds(pid) - b for pid, b in zip(pids, before, strict=True)]
    msgs = max(1, result["msgs"])
    out = {**result, "msgs_s": result["msgs"] / max(result["elapsed"], 1e-3), "cpu_us": cpu[0] / msgs * 1e6,
           **memory(side.pid)}
    if len(cpu) > 1:
        out["slave_cpu_us"] = cpu[1] / msgs * 1e6
    return out


def java_produce(namesrv: str, topic: str, count: int, options: tuple[str, ...]) -> dict[str, Any]:
    """One harness run of `count` 1 KiB sends: msgs sent, its own seconds, p50/p99 (ms), errors (failed
    sends and statuses other than SEND_OK)."""
    run = run_java("produce", namesrv, "--topic", topic, "--count", str(count), "--body-size", str(BODY_SIZE),
                   "--quiet", "--latency", *options, timeout=120 + count / 500, ok=(0, 2))
    done = run.done
    has_lat = "p50_us" in done
    return {"msgs": done["sent"], "elapsed": done["elapsed_ms"] / 1000,
            "p50_ms": done["p50_us"] / 1000 if has_lat else None, "p99_ms": done["p99_us"] / 1000 if has_lat else None,
            "errors": done["failed"] + done.get("not_send_ok", 0)}


def java_send(side: Side, options: tuple[str, ...], guess: int, seconds: float) -> dict[str, Any]:
    """A warm-up of about seconds/5 at the guessed rate, then a timed run sized to `seconds` at the
    warm-up's rate; once more, sized at the timed run's rate, when that ended in under half of `seconds`
    (a cold JVM's warm-up rate undersizes it)."""
    warm = java_produce(side.namesrv, TOPIC, max(200, int(guess * seconds / 5)), options)
    rate = warm["msgs"] / max(warm["elapsed"], 1e-3)
    for _ in range(2):
        count = max(200, int(rate * seconds))
        result = measured(side, lambda n=count: java_produce(side.namesrv, TOPIC, n, options))
        if result["elapsed"] >= seconds / 2:
            break
        rate = result["msgs_s"]
    return result


def java_send_with_slave(side: Side, seconds: float) -> dict[str, Any]:
    """java_send(SYNC_CASE) once the slave acknowledges: warm-ups repeat (60 s at most) until every send
    returns SEND_OK (a SYNC_MASTER answers SLAVE_NOT_AVAILABLE until its slave has connected)."""
    deadline = time.monotonic() + 60
    while java_produce(side.namesrv, TOPIC, 200, SYNC_CASE)["errors"] and time.monotonic() < deadline:
        time.sleep(1.0)
    return java_send(side, SYNC_CASE, JAVA_SENDS["send64"][1], seconds)


def py_send(side: Side, kind: str, inflight: int, auto_batch: bool, seconds: float) -> dict[str, Any]:
    """client_produce's Producer driver in one client process for `seconds`, after a warm-up of seconds/5."""
    client_produce.run_producer(side.namesrv, kind, inflight, max(0.2, seconds / 5), 1, 1, auto_batch)

    def case() -> dict[str, Any]:
        r = client_produce.run_producer(side.namesrv, kind, inflight, seconds, 1, 1, auto_batch)
        return {"msgs": r["msgs_s"] * seconds, "elapsed": seconds, "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"],
                "errors": 0}

    return measured(side, case)


def java_consume(side: Side, backlog: int) -> dict[str, Any]:
    """The harness's push consumer (fresh group, from the first offset) until it has seen the backlog."""
    timeout = int(60 + backlog / 1000)
    run = run_java("consume", side.namesrv, "--topic", BACKLOG_TOPIC, "--group", f"CG_REF_JAVA_{uuid.uuid4().hex[:8]}",
                   "--expect", str(backlog), "--quiet", "--threads", "20", "--timeout-s", str(timeout),
                   timeout=timeout + 60, ok=(0, 3))
    done = run.done
    received, rate = int(done["received"]), float(done.get("msgs_per_s", 0))
    return {"msgs": received, "elapsed": (received - 1) / rate if rate else 1e9, "p50_ms": None, "p99_ms": None,
            "errors": backlog - int(done["distinct"]) if done.get("timeout") else 0}


async def push_drain(namesrv: str, total: int, timeout: float) -> dict[str, Any]:
    """Our PushConsumer (client_consume's settings, fresh group, first offset) until it has seen `total`;
    timed from its first message to its last, as the harness times the Java consumer."""
    seen, first_batch, first, last = 0, 0, 0.0, 0.0
    done = asyncio.Event()

    async def listener(msgs: list[MessageExt]) -> ConsumeResult:
        nonlocal seen, first_batch, first, last
        now = time.perf_counter()
        if not seen:
            first, first_batch = now, len(msgs)
        seen += len(msgs)
        last = now
        if seen >= total:
            done.set()
        return ConsumeResult.CONSUME_SUCCESS

    consumer = PushConsumer(f"CG_REF_PY_{uuid.uuid4().hex[:8]}", namesrv=namesrv, pull_batch_size=32,
                            consume_concurrency=64, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(BACKLOG_TOPIC).register_listener(listener)
    async with consumer:
        with suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), timeout)
    span = last - first
    return {"msgs": seen, "elapsed": span * seen / (seen - first_batch) if seen > first_batch and span else 1e9,
            "p50_ms": None, "p99_ms": None, "errors": max(0, total - seen)}


async def first_send_ok(namesrv: str) -> float:
    """perf_counter() of the first SEND_OK of a send to a new topic, tried every PROBE_STEP."""
    topic, deadline = f"RefStart{uuid.uuid4().hex[:8]}", time.monotonic() + STARTUP_TIMEOUT
    async with Producer("PG_REF_START", namesrv=namesrv, send_timeout=1.0, retry_times=0) as producer:
        while time.monotonic() < deadline:
            with suppress(MQClientError, OSError, TimeoutError):
                if (await producer.send(Message(topic, b"up"))).status is SendStatus.SEND_OK:
                    return time.perf_counter()
            await asyncio.sleep(PROBE_STEP)
    raise SystemExit(f"reference: no SEND_OK through {namesrv} within {STARTUP_TIMEOUT:g} s")


def startup(name: str, root: Path, release: str) -> dict[str, Any]:
    """One start-up of (e) on side `name`: seconds to the name server's readiness and to the first SEND_OK."""
    stop: list[Callable[[], object]] = []
    root.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        if name == "apache":
            ns = apache.start_namesrv(root, release)
            stop.append(ns.kill)
            launch: Callable[[], Any] = lambda: apache.start_broker(root, ns.addr, release, name=BROKER, cluster=CLUSTER,
                                                                   **STORE)
        else:
            ns = start_namesrv(root)
            stop.append(ns.stop)
            launch = lambda: start_broker(root, ns.addr, "master", brokerName=BROKER, brokerClusterName=CLUSTER,
                                          brokerId="0", **STORE)
        ready = time.perf_counter()
        # the probe runs in a thread and the broker starts from this one: a JVM dies with the thread that
        # started it (tests/reference/apache.py's DIE_WITH_PARENT)
        firsts: list[float] = []
        probe = threading.Thread(target=lambda: firsts.append(run_client(first_send_ok(ns.addr))), daemon=True)
        probe.start()
        broker = launch()
        stop.insert(0, broker.kill if name == "apache" else broker.stop)
        probe.join(STARTUP_TIMEOUT)
        if not firsts:
            raise SystemExit(f"reference: {name}'s start-up probe never saw SEND_OK")
        first = firsts[0]
        rss = memory(broker.pid)
        return {"namesrv_s": ready - t0, "total_s": first - t0, **rss}
    finally:
        for done in stop:
            done()


def startups(work: Path, count: int, res: Results, release: str) -> None:
    """(e) `count` times on each side, Apache first; the median start-up of each."""
    for name in ("apache", "mq"):
        runs = []
        for i in range(count):
            note(f"{name}: startup {i + 1}/{count}")
            runs.append(startup(name, work / f"{name}-startup-{i}", release))
        best = sorted(runs, key=lambda r: r["total_s"])[len(runs) // 2]
        res.setdefault("startup", {})[name] = {**best, "runs": [round(r["total_s"], 3) for r in runs]}


@contextmanager
def paused(pids: list[int]) -> Iterator[None]:
    """SIGSTOP `pids` for the block, SIGCONT after (also when it fails)."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def run_cases(sides: list[Side], letters: list[str], args: argparse.Namespace, res: Results, rnd: int) -> None:
    """The selected cases of a, b, c, each on every side in turn (the order alternating by round)."""
    order = sides if rnd % 2 == 0 else sides[::-1]
    if "a" in letters:
        for case, (options, guess) in JAVA_SENDS.items():
            each(order, case, rnd, res, lambda s, o=options, g=guess: java_send(s, o, g, args.seconds))
    if "b" in letters:
        for case, (kind, inflight, auto) in PY_SENDS.items():
            each(order, case, rnd, res, lambda s, k=kind, i=inflight, a=auto: py_send(s, k, i, a, args.seconds))
    if "c" in letters:
        if rnd == 0:
            for side in order:
                note(f"{side.name}: writing a backlog of {args.backlog:,} messages (Java client, batches of 32)")
                java_produce(side.namesrv, BACKLOG_TOPIC, args.backlog, ("--mode", "batch", "--batch-size", "32"))
        each(order, "consume_java", rnd, res, lambda s: measured(s, lambda: java_consume(s, args.backlog)))
        each(order, "consume_py", rnd, res, lambda s: measured(s, lambda: run_client(
            push_drain(s.namesrv, args.backlog, 60 + args.backlog / 1000))))


def each(order: list[Side], case: str, rnd: int, res: Results, run: Callable[[Side], dict[str, Any]]) -> None:
    """`run` on every side of `order`, one after the other, the other side's processes stopped meanwhile (an idle
    JVM broker used up to 0.12 cores while mq's ran), and the CPU they used all the same (none, when stopped)."""
    for side in order:
        note(f"{side.name}: {case}" + (f" (round {rnd + 1})" if rnd else ""))
        others = [other for other in order if other is not side]
        idle = [(other, [broker_send.cpu_seconds(pid) for pid in other.pids]) for other in others]
        t0 = time.perf_counter()
        with paused([pid for other in others for pid in other.every_pid]):
            figures = run(side)
        span = max(time.perf_counter() - t0, 1e-3)
        figures["other_idle_cores"] = max((sum(broker_send.cpu_seconds(pid) for pid in other.pids) - sum(before)) / span
                                    for other, before in idle) if idle else 0.0
        res.setdefault(case, {}).setdefault(side.name, []).append(figures)


def side_text(r: dict[str, Any]) -> str:
    lat = f" p50 {r['p50_ms']:.2f} p99 {r['p99_ms']:.2f} ms" if r.get("p50_ms") is not None else ""
    cores = r["cpu_us"] * r["msgs_s"] / 1e6
    slave = f" (slave {r['slave_cpu_us']:.1f})" if "slave_cpu_us" in r else ""
    errors = f" ERRORS {r['errors']:,}" if r["errors"] else ""
    per_core = f"{1e6 / r['cpu_us']:,.0f}" if r["cpu_us"] else "n/a"
    return (f"{r['msgs_s']:,.0f} msgs/s ({r['msgs']:,.0f} in {r['elapsed']:.1f} s){lat}, broker cpu {r['cpu_us']:.1f} us/msg{slave} = {cores:.2f} cores, "
            f"{per_core} msgs/s/core, rss {r['rss']:.0f} MiB (anon {r['anon']:.0f}){errors}")


def ratios(r: dict[str, list[dict[str, Any]]]) -> tuple[str, str, str]:
    """mq/Apache, the median over the rounds: msgs/s, and msgs/s per broker core (= Apache's CPU per message
    over mq's; n/a when a run was too short for psutil's 10 ms CPU ticks); and each round's msgs/s ratio."""
    pairs = list(zip(r["apache"], r["mq"], strict=True))
    speeds = [m["msgs_s"] / max(a["msgs_s"], 1e-9) for a, m in pairs]
    cores = [a["cpu_us"] / m["cpu_us"] for a, m in pairs if a["cpu_us"] and m["cpu_us"]]
    rounds = f" (rounds {' '.join(f'{x:.2f}' for x in speeds)})" if len(speeds) > 1 else ""
    return f"{statistics.median(speeds):.2f}", f"{statistics.median(cores):.2f}" if cores else "n/a", rounds


def median_round(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The round with the median msgs/s (the lower middle one of an even count)."""
    return sorted(runs, key=lambda r: r["msgs_s"])[(len(runs) - 1) // 2]


def report(res: Results, args: argparse.Namespace) -> None:
    """One line per case, then the summary line."""
    done = [case for case in (c for letter in "abcd" for c in CASES[letter]) if len(res.get(case, {})) == 2]
    for case in done:
        speed, per_core, rounds = ratios(res[case])
        a, m = median_round(res[case]["apache"]), median_round(res[case]["mq"])
        print(f"{case}: Apache {side_text(a)} | mq {side_text(m)} | mq/Apache {speed}{rounds}, per core {per_core}, "
              f"rss {m['rss'] / a['rss']:.2f}", flush=True)
    peak = {side: max((r["rss"] for c in done for r in res[c][side]), default=0.0) for side in ("apache", "mq")}
    anon = {side: max((r["anon"] for c in done for r in res[c][side]), default=0.0) for side in ("apache", "mq")}
    # what a side used while it idled, as the runs of the other side recorded it
    idle = {side: max((r.get("other_idle_cores", 0.0) for c in done for r in res[c][other]), default=0.0)
            for side, other in (("apache", "mq"), ("mq", "apache"))}
    speeds = " ".join(f"{case} {ratios(res[case])[0]}" for case in done)
    if len(start := res.get("startup", {})) == 2:
        a, m = start["apache"], start["mq"]
        print(f"startup: Apache {a['total_s']:.2f} s (name server {a['namesrv_s']:.2f} s, runs {a['runs']}, broker rss "
              f"{a['rss']:.0f} MiB) | mq {m['total_s']:.2f} s (name server {m['namesrv_s']:.2f} s, runs {m['runs']}, "
              f"broker rss {m['rss']:.0f} MiB) | mq/Apache {m['total_s'] / a['total_s']:.2f}", flush=True)
        speeds += f" startup {m['total_s'] / a['total_s']:.2f}"
    cores = " ".join(f"{case} {ratios(res[case])[1]}" for case in done)
    idle_text = (f", idle while the other side ran at most {idle['apache']:.2f} cores (Apache) and {idle['mq']:.2f} (mq)"
                 if done else "")
    memory_text = (f"rss peak {peak['mq'] / max(peak['apache'], 1e-9):.2f} (mq {peak['mq']:.0f} / Apache "
                   f"{peak['apache']:.0f} MiB), anon {anon['mq'] / max(anon['apache'], 1e-9):.2f} (mq {anon['mq']:.0f} / "
                   f"Apache {anon['apache']:.0f} MiB)") if done else "rss n/a (no load case run)"
    print(f"reference (Apache RocketMQ {SETS[RELEASES[args.apache]].name.removeprefix('apache-')} vs mq, 1 KiB, ASYNC_FLUSH, "
          f"{args.seconds:g} s per case, backlog {args.backlog:,}, client loop {client_loop()}): mq/Apache "
          f"{speeds.strip() or 'n/a'} | per broker core {cores or 'n/a'} | {memory_text}{idle_text}", flush=True)


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # SIGTERM unwinds like Ctrl-C: every finally stops what it started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="per timed case")
    parser.add_argument("--backlog", type=int, default=200_000, help="messages the consumers drain (c)")
    parser.add_argument("--cases", default="a,b,c,d,e", help="which of a,b,c,d,e to run")
    parser.add_argument("--startups", type=int, default=3, help="start-ups per side (e)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each case of a-d per side (medians reported)")
    parser.add_argument("--fast-failure", action="store_true",
                        help="mq's brokers refuse sends that waited too long (SYSTEM_BUSY), as Apache's do by default")
    parser.add_argument("--dir", type=Path, help="work directory (kept; default: a temp dir, removed)")
    parser.add_argument("--apache", choices=sorted(RELEASES), default="4.9.7",
                        help="the Apache RocketMQ release on the other side (name server and broker)")
    args = parser.parse_args()
    release = RELEASES[args.apache]
    letters = [c.strip() for c in args.cases.split(",") if c.strip()]
    if unknown := set(letters) - set(CASES):
        parser.error(f"unknown cases {sorted(unknown)}: choose from a,b,c,d,e")
    for key in (release, "harness"):
        if not SETS[key].ready():
            print(f"reference: {SETS[key].name} is not in {SETS[key].home.parent}; run `{FETCH_COMMAND}` first",
                  file=sys.stderr)
            return 2
    signal.signal(signal.SIGTERM, _terminate)
    res: Results = {}
    with ExitStack() as stack:
        stack.callback(apache.kill_all)
        if args.dir is not None:
            args.dir.mkdir(parents=True, exist_ok=True)
            work = Path(tempfile.mkdtemp(prefix="reference-", dir=args.dir))
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mq-bench-reference-")))
        note(f"work dir {work}")
        apache_start = functools.partial(apache_side, release=release)
        mq_start = functools.partial(mq_side, fast_failure=args.fast_failure)
        if set(letters) & {"a", "b", "c"}:
            note("starting a name server and an ASYNC_MASTER broker on each side")
            with apache_start(work / "apache", False) as apache_one, mq_start(work / "mq", False) as mq_one:
                for rnd in range(args.rounds):
                    run_cases([apache_one, mq_one], letters, args, res, rnd)
        if "d" in letters:
            note("starting a name server, a SYNC_MASTER and its slave on each side; sync64_slave (Java client)")
            with apache_start(work / "apache-sync", True) as apache_two, mq_start(work / "mq-sync", True) as mq_two:
                for rnd in range(args.rounds):
                    order = [apache_two, mq_two] if rnd % 2 == 0 else [mq_two, apache_two]
                    each(order, "sync64_slave", rnd, res, lambda s: java_send_with_slave(s, args.seconds))
        if "e" in letters:
            startups(work, args.startups, res, release)
    report(res, args)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        note("interrupted: every process it started is stopped")
        sys.exit(130)
