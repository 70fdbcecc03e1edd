"""RocketMQ 5's gRPC clients through `mq proxy` over mq, against Apache's rocketmq-proxy 5.5.0 over Apache 5.5.0,
one side after the other in one run (issue 45's targets; Apache's side is the baseline).

Each side: a name server, one broker (ASYNC_MASTER, ASYNC_FLUSH) and a proxy in cluster mode, Apache's first;
a side's processes are stopped before the next starts. The client is the official Python client
(rocketmq-python-client 5.1.2) in this process, the same on both sides:

  start    the proxy's start-up: launch to its gRPC port answering a QueryRoute (seconds)
  publish  a Producer sending 1 KiB messages with --inflight async sends outstanding for --seconds (msgs/s)
  receive  --consumers SimpleConsumers (threads) receiving 32 at a time and acknowledging each, until every
           published message came (msgs/s over the drain)
  rss      the proxy's RSS after the run, and its anonymous part (MiB)

With --proxy apache both sides run Apache's rocketmq-proxy 5.5.0, mq's side over mq's name server and broker:
the same proxy in front of each broker, so the figures compare the brokers' POP and send paths (issue 44's
target: POP receive and ack through Apache's proxy, mq's broker >= 1.0x Apache's); start-up and RSS are then
the same proxy's and are not compared.

With --client java the client is Apache's rocketmq-client-java 5.0.8 (the reference harness in its own JVM): publish
is its async sends with --inflight outstanding (`load`), receive is a PushConsumer (4 consume threads) consuming
the backlog, timed from its first consumption to its last (the JVM's start-up left out).

Targets (issue 45): publish and receive+ack >= 1.0x Apache's proxy, proxy RSS <= 0.5x, start-up <= 0.3x. The
client is the same on both sides, so where it is the bottleneck both sides read alike; the proxy's CPU microseconds
per message are printed too (what the proxy itself costs).

Usage: .venv/bin/python bench/proxy_grpc.py [--seconds 10] [--inflight 64] [--consumers 4] [--client python|java]
       [--sides apache,mq] [--proxy own|apache]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import json
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "reference"))

import apache
import psutil
from benchsupport import memory
from rocketmq.v5.client import ClientConfiguration, Credentials
from rocketmq.v5.consumer import SimpleConsumer
from rocketmq.v5.model import FilterExpression
from rocketmq.v5.producer import Producer
from support.mqproc import MqProcess, start_broker, start_mq, start_namesrv
from support.proxyclient import new_message

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.remoting.bodies import TopicConfig

CLUSTER, BROKER = "BenchPx", "broker-px"
TOPIC, GROUP = "BenchProxy", "CG_BENCH_PROXY"
QUEUES = 8
BODY = b"x" * 1024
STORE = {"flushDiskType": "ASYNC_FLUSH"}


def note(msg: str) -> None:
    print(f"[proxy_grpc {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@contextmanager
def apache_side(root: Path) -> Iterator[tuple[str, int, float]]:
    """Apache 5.5.0's name server, broker and proxy: (proxy gRPC address, proxy pid, start-up seconds)."""
    procs: list[apache.ApacheProcess] = []
    try:
        namesrv = apache.start_namesrv(root, "apache-5")
        procs.append(namesrv)
        procs.append(apache.start_broker(root, namesrv.addr, "apache-5", name=BROKER, cluster=CLUSTER, **STORE))
        make_topic(namesrv.addr)
        began = time.monotonic()
        proxy = apache.start_proxy(root, namesrv.addr, cluster=CLUSTER)
        started = time.monotonic() - began
        procs.append(proxy)
        yield proxy.addr, proxy.pid, started
    finally:
        for proc in reversed(procs):
            proc.kill()


@contextmanager
def mq_side(root: Path, proxy_kind: str = "own") -> Iterator[tuple[str, int, float]]:
    """mq's name server and broker, and `mq proxy` over them, or Apache's proxy (`proxy_kind` "apache")."""
    procs: list[MqProcess | apache.ApacheProcess] = []
    root.mkdir(parents=True, exist_ok=True)
    try:
        namesrv = start_namesrv(root)
        procs.append(namesrv)
        procs.append(start_broker(root, namesrv.addr, BROKER, brokerClusterName=CLUSTER, **STORE))
        make_topic(namesrv.addr)
        if proxy_kind == "apache":
            began = time.monotonic()
            theirs = apache.start_proxy(root, namesrv.addr, cluster=CLUSTER)
            procs.append(theirs)
            yield theirs.addr, theirs.pid, time.monotonic() - began
            return
        conf = root / "rmq-proxy.json"
        conf.write_text(json.dumps({"rocketMQClusterName": CLUSTER, "namesrvAddr": namesrv.addr,
                                    "grpcServerPort": 0, "remotingListenPort": 0}))
        began = time.monotonic()
        proxy = start_mq(["proxy", "start", "-c", str(conf), "--host", "127.0.0.1"], timeout=60)
        procs.append(proxy)
        deadline = time.monotonic() + 60
        while not apache._answers_query_route(proxy.addr):  # ready as Apache's proxy is judged ready
            if time.monotonic() > deadline:
                raise SystemExit("mq proxy did not answer a QueryRoute within 60 s")
            time.sleep(0.1)
        yield proxy.addr, proxy.proc.pid, time.monotonic() - began
    finally:
        for proc in reversed(procs):
            if isinstance(proc, MqProcess):
                proc.stop()
            else:
                proc.kill()


def make_topic(namesrv: str) -> None:
    with SyncMQAdmin(namesrv) as admin:
        admin.topics.create_topic(TopicConfig(TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES,
                                              attributes={"+message.type": "NORMAL"}), cluster=CLUSTER)


def config(proxy: str) -> ClientConfiguration:
    return ClientConfiguration(proxy, Credentials(), request_timeout=30)


def publish(proxy: str, seconds: float, inflight: int) -> tuple[int, float]:
    """Async sends with `inflight` outstanding for `seconds`: (acknowledged, elapsed)."""
    producer = Producer(config(proxy), (TOPIC,))
    producer.startup()
    gate = threading.Semaphore(inflight)
    done = 0
    lock = threading.Lock()

    def settled(fut: concurrent.futures.Future) -> None:
        nonlocal done
        if fut.exception() is None:
            with lock:
                done += 1
        gate.release()

    try:
        producer.send(new_message(TOPIC, BODY))  # routes and settings before the clock starts
        began = time.monotonic()
        while time.monotonic() - began < seconds:
            gate.acquire()
            producer.send_async(new_message(TOPIC, BODY)).add_done_callback(settled)
        for _ in range(inflight):
            gate.acquire()
        return done + 1, time.monotonic() - began
    finally:
        producer.shutdown()


def receive(proxy: str, want: int, consumers: int) -> tuple[int, float]:
    """`consumers` SimpleConsumers receiving and acknowledging until `want` came: (acknowledged, elapsed)."""
    got = 0
    lock = threading.Lock()
    clients = [SimpleConsumer(config(proxy), GROUP, {TOPIC: FilterExpression()}, await_duration=2)
               for _ in range(consumers)]
    for c in clients:
        c.startup()
    deadline = time.monotonic() + want / 50 + 120

    def loop(c: SimpleConsumer) -> None:
        nonlocal got
        while time.monotonic() < deadline:
            with lock:
                if got >= want:
                    return
            messages = c.receive(32, 30)
            for m in messages:
                c.ack(m)
            with lock:
                got += len(messages)

    try:
        began = time.monotonic()
        threads = [threading.Thread(target=loop, args=(c,)) for c in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return got, time.monotonic() - began
    finally:
        for c in clients:
            c.shutdown()


def java_publish(proxy: str, seconds: float, inflight: int) -> tuple[int, float]:
    from javaclient import run_grpc_java

    run = run_grpc_java("load", proxy, "--topic", TOPIC, "--seconds", str(int(seconds)), "--inflight", str(inflight),
                        timeout=seconds + 120)
    (done,) = run.of("done")
    return int(done["sent"]), done["elapsedMs"] / 1000


def java_receive(proxy: str, want: int, consumers: int) -> tuple[int, float]:
    from javaclient import run_grpc_java

    run = run_grpc_java("push", proxy, "--topic", TOPIC, "--group", GROUP, "--expect", str(want), "--quiet", "true",
                        "--threads", str(consumers), "--timeout-ms", str(int((want / 50 + 120) * 1000)),
                        timeout=want / 50 + 240)
    (done,) = run.of("done")
    return int(done["succeeded"]), max(done["lastMs"] - done["firstMs"], 1) / 1000


def cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def run_side(name: str, side: Any, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    with side(root / name) as (proxy, pid, started):
        note(f"{name}: proxy up in {started:.1f} s; publish for {args.seconds:.0f} s")
        cpu0 = cpu_seconds(pid)
        java = args.client == "java"
        sent, took = (java_publish if java else publish)(proxy, args.seconds, args.inflight)
        cpu1 = cpu_seconds(pid)
        note(f"{name}: {sent} sent; receive+ack with {args.consumers} consumers")
        acked, drained = (java_receive if java else receive)(proxy, sent, args.consumers)
        cpu2 = cpu_seconds(pid)
        mem = memory(pid)
        return {"start_s": started, "publish_s": sent / took, "receive_s": acked / drained, "acked": acked,
                "sent": sent, "rss_mib": mem["rss"], "anon_mib": mem["anon"],
                "publish_cpu_us": (cpu1 - cpu0) / sent * 1e6, "receive_cpu_us": (cpu2 - cpu1) / max(acked, 1) * 1e6}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--inflight", type=int, default=64)
    parser.add_argument("--consumers", type=int, default=4)
    parser.add_argument("--client", choices=("python", "java"), default="python")
    parser.add_argument("--sides", default="apache,mq")
    parser.add_argument("--proxy", choices=("own", "apache"), default="own",
                        help="apache: Apache's proxy in front of mq's broker too (compares the brokers)")
    args = parser.parse_args()
    sides = {"apache": apache_side, "mq": functools.partial(mq_side, proxy_kind=args.proxy)}
    res: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="proxy-grpc-") as tmp:
        for name in args.sides.split(","):
            res[name] = run_side(name, sides[name], Path(tmp), args)
    parts = [f"{n}: start {r['start_s']:.1f} s, publish {r['publish_s']:,.0f} msgs/s "
             f"({r['publish_cpu_us']:.0f} proxy CPU us/msg), receive+ack {r['receive_s']:,.0f} msgs/s "
             f"({r['receive_cpu_us']:.0f} us/msg; {r['acked']}/{r['sent']}), RSS {r['rss_mib']:.0f} MiB "
             f"(anon {r['anon_mib']:.0f})" for n, r in res.items()]
    if {"apache", "mq"} <= res.keys():
        a, m = res["apache"], res["mq"]

        def ratio(key: str) -> str:
            """mq's figure over Apache's; n/a when Apache's side measured nothing (a receive that got none)."""
            return f"{m[key] / a[key]:.2f}x" if a[key] else "n/a"

        if args.proxy == "apache":
            parts.append(f"mq's broker / Apache's, both behind Apache's proxy: publish {ratio('publish_s')}, "
                         f"receive+ack {ratio('receive_s')} (target >= 1.0)")
        else:
            parts.append(f"mq/Apache: publish {ratio('publish_s')} (target >= 1.0), receive+ack {ratio('receive_s')} "
                         f"(>= 1.0), RSS {ratio('rss_mib')} (<= 0.5), start-up {ratio('start_s')} (<= 0.3)")
    proxies = "Apache's proxy on both sides" if args.proxy == "apache" else "each side's own proxy"
    print(f"proxy_grpc ({args.client} client, {proxies}) | " + " | ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
