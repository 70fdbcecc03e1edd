"""How cost grows with scale: mq's name server and broker against Apache RocketMQ 4.9.7's (or 5.5.0's with
--apache 5.5.0), in one run.

Each part runs on Apache first, then on mq, each side with the machine to itself; every process a part
starts is stopped before the next one starts.

  topics   a broker whose store holds N topics of 8 queues (--topics, default 1000,10000; topics.json is
           written before the broker starts): broker start (launch to the name server answering the route
           of its last topic), the broker's and the name server's RSS after it, the registration body
           (bytes), what a registration with that body costs the name server (CPU and wall ms per
           REGISTER_BROKER, sent by this process with an unchanged data version, as the broker's periodic
           registration is: its heartbeat), what the first registration of a new broker with that body costs
           (first_ms, first_cpu_ms) and the slowest route lookup answered meanwhile on another connection
           (first_route_max_ms), and route lookups per second (16 connections, closed loop)
  brokers  M brokers (--brokers, default 100; 64 topics of 8 queues each, one topic on all) registering with
           one name server, simulated from this process: the name server's CPU per registration round,
           and route lookups per second of the shared topic while rounds run back to back, against idle
  groups   G consumer groups (--groups, default 1000), one client each (one connection per client from this
           process, a heartbeat per client per round): the broker's CPU per heartbeat round (the first
           round creates the groups), `mq admin group list` as a user runs it, and one groups-view round
           of `mq top`'s data (its Collector's round, without drawing)
  backlog  B 1 KiB messages (--backlog, default 10,000,000) written by the Java client's batches and drained
           by the Java push consumer (fresh group, first offset) from the page cache; then the broker stops
           cleanly, the page cache is dropped (needs root: /proc/sys/vm/drop_caches; a page stays cached
           while a process maps it, so the broker must not run then), the broker starts again on the same
           store (restart_s) and the consumer drains it again from disk; the broker's RSS and its
           anonymous part (without mapped file pages) after each drain

Per figure: Apache, mq, mq/Apache. For topics, brokers and groups the last line per part is the growth:
cost per topic (group, broker) at the largest size over the smallest, where 1.0 is linear; above
SUPERLINEAR it is flagged as super-linear. Needs `make reference`'s jars, except `--sides mq`, which runs
mq alone (no JVM; the topics, brokers and groups parts only: backlog's load is the Java client) and prints
mq's figures and growth without ratios.

Usage: .venv/bin/python bench/scale.py [--parts topics,brokers,groups,backlog] [--topics 1000,10000]
       [--brokers 10,100] [--groups 100,1000] [--backlog 10000000] [--seconds 3] [--sides apache,mq]
       [--apache 4.9.7|5.5.0]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "reference"))

import apache
import namesrv_route_qps
import psutil
from benchsupport import client_loop, memory, run_client
from broker_send import cpu_seconds
from fetch import FETCH_COMMAND, SETS
from javaclient import run_java
from support.mqproc import mq_command, start_broker, start_namesrv

from mqtools.client.admin import MQAdmin
from mqtools.live.collect import Collector, Wanted
from mqtools.remoting import fastjson
from mqtools.remoting.bodies import (
    ConsumerData,
    DataVersion,
    HeartbeatData,
    RegisterBrokerBody,
    SubscriptionData,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.frame import FrameDecoder
from mqtools.remoting.headers import RegisterBrokerRequestHeader

CLUSTER, BROKER, QUEUES = "BenchScale", "broker-scale", 8
SIDES = ("apache", "mq")
#: --apache: the reference set (tests/reference/fetch.py) Apache's side runs from.
RELEASES = {"4.9.7": "apache-4", "5.5.0": "apache-5"}
APACHE = [RELEASES["4.9.7"]]
"""The set of this run (one run, one release; set from --apache before any part starts)."""
#: Growth per unit above this (largest size over smallest) is reported as super-linear.
SUPERLINEAR = 1.5
REGISTRATIONS = 5
TOPICS_PER_BROKER = 64
SHARED_TOPIC = "ScaleShared"
HEARTBEAT_ROUNDS = 3
BACKLOG_TOPIC = "ScaleBacklog"


def note(msg: str) -> None:
    print(f"[scale {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rss_mib(pid: int) -> float | None:
    """The process's RSS in MiB; None (n/a) when it is gone or a zombie."""
    try:
        proc = psutil.Process(pid)
        rss = proc.memory_info().rss if proc.status() != psutil.STATUS_ZOMBIE else 0
    except psutil.Error:
        return None
    return rss / 2**20 if rss else None


def topics_json(names: list[str]) -> bytes:
    """config/topics.json in RocketMQ's format (both brokers read it at start)."""
    table = {t: TopicConfig(t, QUEUES, QUEUES) for t in names}
    return TopicConfigSerializeWrapper(table, DataVersion(int(time.time() * 1000), 1)).to_json()


@contextmanager
def namesrv(side: str, root: Path) -> Iterator[Any]:
    proc = apache.start_namesrv(root, APACHE[0]) if side == "apache" else start_namesrv(root)
    try:
        yield proc
    finally:
        proc.kill() if side == "apache" else proc.stop()


def launch_broker(side: str, root: Path, ns: str, topics: list[str], **props: str) -> Callable[[], Any]:
    """Write the store's topics.json, return the blocking start of the broker (registered when it returns)."""
    store = root / f"{BROKER}-0" / "store" if side == "apache" else root / BROKER
    (store / "config").mkdir(parents=True, exist_ok=True)
    (store / "config" / "topics.json").write_bytes(topics_json(topics))
    if side == "apache":
        return lambda: apache.start_broker(root, ns, APACHE[0], name=BROKER, cluster=CLUSTER, timeout=300, **props)
    return lambda: start_broker(root, ns, BROKER, brokerClusterName=CLUSTER, **props)


def stop_broker(side: str, proc: Any) -> None:
    proc.kill() if side == "apache" else proc.stop(30)


async def route_code(client: RemotingClient, ns: str, topic: str) -> int:
    resp = await client.invoke(ns, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}), 10)
    return resp.code


async def wait_route(ns: str, topic: str, timeout: float) -> float:
    """perf_counter() when the name server first answers `topic`'s route, polled every 20 ms."""
    client = RemotingClient()
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with suppress(OSError, TimeoutError):
                if await route_code(client, ns, topic) == 0:
                    return time.perf_counter()
            await asyncio.sleep(0.02)
        raise SystemExit(f"scale: no route of {topic} at {ns} within {timeout:g} s")
    finally:
        await client.close()


def register_command(name: str, addr: str, topics: dict[str, TopicConfig], version: DataVersion) -> RemotingCommand:
    header = RegisterBrokerRequestHeader(broker_name=name, broker_addr=addr, cluster_name=CLUSTER,
                                         ha_server_addr=addr, broker_id=0)
    body = RegisterBrokerBody(TopicConfigSerializeWrapper(topics, version)).to_json()
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext(), body)


async def routes_meanwhile(ns: str, topic: str, stop: asyncio.Event, started: asyncio.Event) -> list[float]:
    """Route lookups of `topic` back to back on a connection of their own until `stop`: each one's ms."""
    client = RemotingClient()
    took: list[float] = []
    try:
        while not stop.is_set():
            began = time.perf_counter()
            await route_code(client, ns, topic)
            took.append((time.perf_counter() - began) * 1000)
            started.set()
        return took
    finally:
        await client.close()


async def registration_cost(ns: str, ns_pid: int, names: list[str]) -> dict[str, float]:
    """REGISTRATIONS registrations of a simulated broker holding `names`: bytes, first and steady costs, and
    the slowest route lookup answered while the first one was handled (does the name server keep answering)."""
    command = register_command("scale-sim", "127.0.0.2:10911", {t: TopicConfig(t, QUEUES, QUEUES) for t in names},
                               DataVersion(1, 1))
    client = RemotingClient()
    stop, started = asyncio.Event(), asyncio.Event()
    lookups = asyncio.ensure_future(routes_meanwhile(ns, names[0], stop, started))
    try:
        await started.wait()
        cpu, began = cpu_seconds(ns_pid), time.perf_counter()
        first = await client.invoke(ns, command, 60)
        first_ms = (time.perf_counter() - began) * 1000
        first_cpu_ms = (cpu_seconds(ns_pid) - cpu) * 1000
        stop.set()
        during = await lookups
        if first.code != 0:
            raise SystemExit(f"scale: registration refused by {ns}: {first.code} {first.remark}")
        cpu, began = cpu_seconds(ns_pid), time.perf_counter()
        for _ in range(REGISTRATIONS):
            await client.invoke(ns, command, 60)
        wall = (time.perf_counter() - began) / REGISTRATIONS * 1000
        return {"body_bytes": len(command.body or b""), "first_ms": first_ms, "first_cpu_ms": first_cpu_ms,
                "first_route_max_ms": max(during), "reg_ms": wall,
                "reg_cpu_ms": (cpu_seconds(ns_pid) - cpu) / REGISTRATIONS * 1000}
    finally:
        stop.set()
        await asyncio.gather(lookups, return_exceptions=True)
        await client.close()


async def route_qps(ns: str, topic: str, seconds: float, connections: int = 16) -> float:
    host, port = ns.rsplit(":", 1)
    request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}).encode()
    return await namesrv_route_qps.measure(host, int(port), request, connections, seconds)


def topics_part(side: str, root: Path, count: int, seconds: float) -> dict[str, float]:
    names = [f"ScaleTopic{i:05d}" for i in range(count)]
    with namesrv(side, root / "ns") as ns:
        start = launch_broker(side, root, ns.addr, names)
        ups: list[float] = []
        # the route poll runs in a thread and the broker starts from this one: a JVM dies with the thread
        # that started it (tests/reference/apache.py's DIE_WITH_PARENT)
        poll = threading.Thread(target=lambda: ups.append(run_client(wait_route(ns.addr, names[-1], 300))), daemon=True)
        began = time.perf_counter()
        poll.start()
        broker = start()
        try:
            poll.join(300)
            if not ups:
                raise SystemExit(f"scale: {side}'s name server never answered the route of {names[-1]}")
            out = {"start_s": ups[0] - began, "broker_rss": rss_mib(broker.pid), "ns_rss": rss_mib(ns.pid)}
            out |= run_client(registration_cost(ns.addr, ns.pid, names))
            out["route_qps"] = run_client(route_qps(ns.addr, names[count // 2], seconds))
            return out
        finally:
            stop_broker(side, broker)


async def brokers_rounds(ns: str, ns_pid: int, count: int, seconds: float) -> dict[str, float]:
    """`count` simulated brokers: registered once, then rounds back to back while route lookups run."""
    commands = [register_command(f"scale-b{i:03d}", f"127.0.1.{i % 250 + 1}:{10911 + i // 250}",
                                 {t: TopicConfig(t, QUEUES, QUEUES) for t in
                                  [SHARED_TOPIC, *(f"ScaleB{i:03d}T{j:02d}" for j in range(TOPICS_PER_BROKER))]},
                                 DataVersion(1, 1)) for i in range(count)]
    client = RemotingClient()
    try:
        await asyncio.gather(*(client.invoke(ns, c, 60) for c in commands))
        idle = await route_qps(ns, SHARED_TOPIC, seconds)
        rounds, stop = 0, asyncio.Event()

        async def registering() -> None:
            nonlocal rounds
            while not stop.is_set():
                await asyncio.gather(*(client.invoke(ns, c, 60) for c in commands))
                rounds += 1

        cpu, began = cpu_seconds(ns_pid), time.perf_counter()
        task = asyncio.ensure_future(registering())
        busy = await route_qps(ns, SHARED_TOPIC, seconds)
        stop.set()
        await task
        cpu_used, wall = cpu_seconds(ns_pid) - cpu, time.perf_counter() - began
        return {"round_ms": wall / max(rounds, 1) * 1000, "round_cpu_ms": cpu_used / max(rounds, 1) * 1000,
                "route_qps_idle": idle, "route_qps_busy": busy, "rounds": rounds}
    finally:
        await client.close()


def brokers_part(side: str, root: Path, count: int, seconds: float) -> dict[str, float]:
    with namesrv(side, root / "ns") as ns:
        return run_client(brokers_rounds(ns.addr, ns.pid, count, seconds))


class SimClient(asyncio.Protocol):
    """One simulated consumer on a connection of its own: it heartbeats when told to, and answers what a
    broker asks a client as a live one would (its running info; anything else an empty success), so
    admin calls the broker relays to clients get their answer."""

    def __init__(self, client_id: str, group: str, topic: str) -> None:
        data = HeartbeatData(client_id=client_id, consumer_data_set=[ConsumerData(group, subscription_data_set=[
            SubscriptionData(topic, sub_version=1)])])
        self.heartbeat = RemotingCommand.request(RequestCode.HEART_BEAT, {}, data.to_json())
        self.info = fastjson.dumps({"properties": {"consumeType": "CONSUME_PASSIVELY", "consumeOrderly": "false"},
                                    "subscriptionSet": [{"topic": topic, "subString": "*"}], "mqTable": {},
                                    "statusTable": {}})
        self.decoder = FrameDecoder()
        self.waiter: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        for cmd in self.decoder.feed(data):
            if cmd.is_response:
                if self.waiter is not None and not self.waiter.done():
                    self.waiter.set_result(None)
            elif not cmd.is_oneway:
                body = self.info if cmd.code == RequestCode.GET_CONSUMER_RUNNING_INFO else None
                self.transport.write(cmd.response(0, None, None, body).encode())  # type: ignore[attr-defined]

    async def beat(self) -> None:
        self.waiter = asyncio.get_running_loop().create_future()
        self.heartbeat.opaque += 1
        self.transport.write(self.heartbeat.encode())  # type: ignore[attr-defined]
        await self.waiter


async def groups_rounds(ns: str, broker_addr: str, broker_pid: int, count: int) -> dict[str, float]:
    """`count` clients, one per group and connection: heartbeat rounds, then the two read-side figures while
    the clients are still connected."""
    host, port = broker_addr.rsplit(":", 1)
    topic = "ScaleGroupsTopic"
    async with MQAdmin(ns, timeout=30) as admin:
        await admin.topics.create_topic(TopicConfig(topic, QUEUES, QUEUES), cluster=CLUSTER)
    loop = asyncio.get_running_loop()
    clients: list[tuple[asyncio.BaseTransport, SimClient]] = []
    for i in range(count):
        clients.append(await loop.create_connection(
            lambda i=i: SimClient(f"127.0.0.1@scale{i}", f"CG_SCALE_{i:05d}", topic), host, int(port)))
    try:
        rounds = []
        for _ in range(HEARTBEAT_ROUNDS):
            cpu, began = cpu_seconds(broker_pid), time.perf_counter()
            await asyncio.gather(*(client.beat() for _, client in clients))
            rounds.append(((time.perf_counter() - began) * 1000, (cpu_seconds(broker_pid) - cpu) * 1000))
        began = time.perf_counter()
        listed = await asyncio.to_thread(subprocess.run, [*mq_command(), "admin", "group", "list", "-n", ns, "-o",
                                                          "json"], capture_output=True, text=True, check=False)
        group_list = time.perf_counter() - began
        if listed.returncode != 0:
            raise SystemExit(f"scale: mq admin group list exited {listed.returncode}: {listed.stderr[-500:]}")
        async with MQAdmin(ns, timeout=60) as admin:
            collector = Collector(admin, lambda outcome: None)  # mq top's own round, views left out
            await collector.round(Wanted(groups=True))
            top_round = await collector.round(Wanted(groups=True))
        return {"first_round_ms": rounds[0][0], "first_round_cpu_ms": rounds[0][1],
                "round_ms": min(r[0] for r in rounds[1:]), "round_cpu_ms": min(r[1] for r in rounds[1:]),
                "group_list_s": group_list, "top_groups_s": top_round}
    finally:
        for transport, _ in clients:
            transport.close()


def groups_part(side: str, root: Path, count: int) -> dict[str, float]:
    with namesrv(side, root / "ns") as ns:
        broker = launch_broker(side, root, ns.addr, [])()
        try:
            return run_client(groups_rounds(ns.addr, broker.addr, broker.pid, count))
        finally:
            stop_broker(side, broker)


def drop_page_cache() -> bool:
    """Write back and drop the page cache (root only); False where that is not allowed."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


def java_drain(ns: str, count: int) -> float:
    """msgs/s of the harness's push consumer reading `count` messages (fresh group, first offset)."""
    timeout = int(120 + count / 2000)
    run = run_java("consume", ns, "--topic", BACKLOG_TOPIC, "--group", f"CG_SCALE_{uuid.uuid4().hex[:8]}",
                   "--expect", str(count), "--quiet", "--distinct-by", "offset", "--threads", "20", "--timeout-s", str(timeout),
                   timeout=timeout + 60, ok=(0,))
    return float(run.done["msgs_per_s"])


def backlog_part(side: str, root: Path, count: int) -> dict[str, float | None]:
    with namesrv(side, root / "ns") as ns:
        start = launch_broker(side, root, ns.addr, [BACKLOG_TOPIC], flushDiskType="ASYNC_FLUSH",
                              mappedFileSizeCommitLog=str(1024**3))
        broker = start()
        try:
            note(f"{side}: writing {count:,} messages (Java client, batches of 32)")
            run_java("produce", ns.addr, "--topic", BACKLOG_TOPIC, "--count", str(count), "--body-size", "1024",
                     "--quiet", "--mode", "batch", "--batch-size", "32", timeout=300 + count / 2000, ok=(0,))
            note(f"{side}: draining from the page cache")
            out: dict[str, float | None] = {"cached_msgs_s": java_drain(ns.addr, count)}
            mem = memory(broker.pid)
            out |= {"cached_rss": mem["rss"], "cached_anon": mem["anon"]}
            # A mapped page stays cached while a process maps it: the broker stops (cleanly) before the
            # cache is dropped and starts again on the same store, so the second drain reads the disk.
            broker.stop(60)
            broker = None
            if drop_page_cache():
                began = time.perf_counter()
                broker = start()
                out["restart_s"] = time.perf_counter() - began
                note(f"{side}: broker stopped, page cache dropped, restarted in {out['restart_s']:.1f} s; "
                     "draining from disk")
                out["disk_msgs_s"] = java_drain(ns.addr, count)
                mem = memory(broker.pid)
                out |= {"disk_rss": mem["rss"], "disk_anon": mem["anon"]}
            return out
        finally:
            if broker is not None:
                stop_broker(side, broker)


def fmt(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def ratio(m: float | None, a: float | None) -> str:
    return f"{m / a:.2f}" if m is not None and a else "n/a"


def table(part: str, size: int, res: dict[str, dict[str, Any]]) -> list[str]:
    """One line per figure of one part at one size (mq's alone when Apache did not run)."""
    if "apache" not in res:
        return [f"{part} {size:,} {key}: mq {fmt(value)}" for key, value in res["mq"].items()]
    keys = [k for k in res["apache"] if k in res["mq"]]
    return [f"{part} {size:,} {key}: Apache {fmt(res['apache'][key])} | mq {fmt(res['mq'][key])} | "
            f"mq/Apache {ratio(res['mq'][key], res['apache'][key])}" for key in keys]


def growth(part: str, sizes: list[int], res: dict[int, dict[str, dict[str, Any]]], keys: list[str],
           sides: tuple[str, ...] = SIDES) -> str:
    """Cost per unit at the largest size over the smallest, per side (1.0 = linear)."""
    lo, hi = min(sizes), max(sizes)
    parts = []
    for side in sides:
        for key in keys:
            a, b = res[lo][side].get(key), res[hi][side].get(key)
            if a and b is not None:
                g = (b / hi) / (a / lo)
                parts.append(f"{side} {key} {g:.2f}{' SUPER-LINEAR' if g > SUPERLINEAR else ''}")
    return f"{part} growth per unit {lo:,} -> {hi:,}: " + ", ".join(parts)


#: Costs whose growth is judged, per part.
GROWTH_KEYS = {"topics": ["start_s", "first_ms", "first_cpu_ms", "reg_cpu_ms", "body_bytes"], "brokers": ["round_cpu_ms"],
               "groups": ["first_round_cpu_ms", "round_cpu_ms", "group_list_s", "top_groups_s"]}


def _sizes(text: str) -> list[int]:
    return sorted({int(x) for x in text.split(",") if x.strip()})


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="topics,brokers,groups,backlog")
    parser.add_argument("--topics", default="1000,10000", help="topic counts of the topics part")
    parser.add_argument("--brokers", default="10,100", help="broker counts of the brokers part")
    parser.add_argument("--groups", default="100,1000", help="group counts of the groups part")
    parser.add_argument("--backlog", type=int, default=10_000_000, help="messages of the backlog part")
    parser.add_argument("--seconds", type=float, default=3.0, help="per route-lookup measurement")
    parser.add_argument("--apache", choices=sorted(RELEASES), default="4.9.7",
                        help="the Apache RocketMQ release on the other side (name server and broker)")
    parser.add_argument("--sides", default="apache,mq",
                        help="apache,mq (default) or mq alone: no JVM, no ratios (not the backlog part)")
    args = parser.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    if unknown := set(parts) - {"topics", "brokers", "groups", "backlog"}:
        parser.error(f"unknown parts {sorted(unknown)}: choose from topics,brokers,groups,backlog")
    sides = tuple(s for s in SIDES if s in {x.strip() for x in args.sides.split(",")})
    if sides not in (SIDES, ("mq",)):
        parser.error("--sides: apache,mq or mq")
    if sides == ("mq",) and "backlog" in parts:
        parser.error("the backlog part loads the broker with the Java client: it needs --sides apache,mq")
    APACHE[0] = RELEASES[args.apache]
    for key in (APACHE[0], "harness") if "apache" in sides else ():
        if not SETS[key].ready():
            print(f"scale: {SETS[key].name} is missing; run `{FETCH_COMMAND}` first", file=sys.stderr)
            return 2
    signal.signal(signal.SIGTERM, _terminate)
    lines: list[str] = []
    summary: list[str] = []
    runs: dict[str, Callable[[str, Path, int], dict[str, Any]]] = {
        "topics": lambda side, root, n: topics_part(side, root, n, args.seconds),
        "brokers": lambda side, root, n: brokers_part(side, root, n, args.seconds),
        "groups": groups_part,
        "backlog": backlog_part,
    }
    sizes = {"topics": _sizes(args.topics), "brokers": _sizes(args.brokers), "groups": _sizes(args.groups),
             "backlog": [args.backlog]}
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="mq-bench-scale-") as tmp:
        stack.callback(apache.kill_all)
        for part in parts:
            res: dict[int, dict[str, dict[str, Any]]] = {}
            for size in sizes[part]:
                for side in sides:
                    note(f"{side}: {part} at {size:,}")
                    res.setdefault(size, {})[side] = runs[part](side, Path(tmp) / f"{part}-{size}-{side}", size)
                lines += table(part, size, res[size])
                print("\n".join(table(part, size, res[size])), flush=True)
            if part in GROWTH_KEYS and len(sizes[part]) > 1:
                line = growth(part, sizes[part], res, GROWTH_KEYS[part], sides)
                print(line, flush=True)
                summary.append(line.split(": ", 1)[1].replace(", ", " "))
    against = f"Apache RocketMQ {args.apache} vs mq" if "apache" in sides else "mq alone"
    print(f"scale ({against}, client loop {client_loop()}): "
          f"{len(lines)} figures; growth per unit: {' | '.join(summary) or 'n/a'}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        note("interrupted: every process it started is stopped")
        sys.exit(130)
