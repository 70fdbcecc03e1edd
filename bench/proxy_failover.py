"""kill-proxy beside Apache's proxies: the clients' proxy SIGKILLed with a second one beside it, on Apache's
rocketmq-proxy 5.5.0 over Apache 5.5.0's name server and broker, and on `mq proxy` over mq's.

Each side gets a name server, one broker (ASYNC_MASTER) and two proxies in cluster mode, Apache's first; a
side's processes are stopped before the next starts. Each run is `mq admin drill run kill-proxy -n NS --proxies
A,B --fault-cmd "kill -9 PID-of-A"`: gRPC producers and SimpleConsumers (mqtools.drills.proxy_load) start on A,
which is killed a third of the way in; the drill judges the history. Between runs the killed proxy is started
again, last in the order, so every run kills a proxy the clients are using.

Prints one summary line: per side, runs that PASSed, acknowledged messages lost (total), the write RTO p50/p99
(0 when no send failed: each in-flight send moved to the other proxy within its timeout), the send latency p99
and max during the fault, duplicate deliveries (messages received through the dead proxy and not acknowledged
come again after their invisible time), and mq/Apache of the fault-time latency p99's median.

Usage: .venv/bin/python bench/proxy_failover.py [--runs 5] [--duration 20] [--rate 200] [--sides apache,mq]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "reference"))

import apache
from support.mqproc import mq_command, start_broker, start_mq, start_namesrv

CLUSTER = "BenchProxy"


def note(msg: str) -> None:
    print(f"[proxy_failover {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Side:
    """A name server, a broker and proxies of one implementation; `proxy()` starts one more."""

    def __init__(self, namesrv: str, start_proxy: Callable[[str], Any]) -> None:
        self.namesrv = namesrv
        self._start_proxy = start_proxy
        self._count = 0
        self.proxies: list[Any] = []

    def proxy(self) -> Any:
        started = self._start_proxy(f"proxy-{self._count}")
        self._count += 1
        self.proxies.append(started)
        return started


@contextmanager
def apache_side(root: Path) -> Iterator[Side]:
    namesrv = apache.start_namesrv(root, "apache-5")
    broker = None
    side = Side(namesrv.addr, lambda name: apache.start_proxy(root, namesrv.addr, name=name, cluster=CLUSTER))
    try:
        broker = apache.start_broker(root, namesrv.addr, "apache-5", cluster=CLUSTER)
        yield side
    finally:
        for proc in [*side.proxies, broker, namesrv]:
            if proc is not None:
                proc.kill()


@contextmanager
def mq_side(root: Path) -> Iterator[Side]:
    root.mkdir(parents=True, exist_ok=True)
    namesrv = start_namesrv(root)

    def proxy(name: str) -> Any:
        conf = root / f"{name}.json"
        conf.write_text(json.dumps({"rocketMQClusterName": CLUSTER, "namesrvAddr": namesrv.addr,
                                    "grpcServerPort": 0, "remotingListenPort": 0}))
        return start_mq(["proxy", "start", "-c", str(conf), "--host", "127.0.0.1"], timeout=60)

    side = Side(namesrv.addr, proxy)
    broker = None
    try:
        broker = start_broker(root, namesrv.addr, "broker-a", brokerClusterName=CLUSTER, brokerRole="ASYNC_MASTER",
                              flushDiskType="ASYNC_FLUSH", mappedFileSizeCommitLog=str(64 * 1024 * 1024))
        yield side
    finally:
        for proc in [*side.proxies, broker, namesrv]:
            if proc is not None:
                proc.stop()


def grpc_addr(proxy: Any) -> str:
    """Apache's process knows its gRPC address; ours prints it on its READY line."""
    if hasattr(proxy, "lines"):
        ready = next(line for line in proxy.lines if line.startswith("READY proxy"))
        return ready.split()[2]
    return str(proxy.addr)


def alive(proxy: Any) -> bool:
    return proxy.alive if hasattr(proxy, "alive") else proxy.proc.poll() is None


def run_side(name: str, side_of: Callable[[Path], Any], root: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    reports = []
    with side_of(root / name) as side:
        order = [side.proxy(), side.proxy()]
        for run in range(1, args.runs + 1):
            first = order[0]
            pid = first.pid
            note(f"{name}: run {run}/{args.runs}, killing {grpc_addr(first)} (pid {pid})")
            done = subprocess.run(
                [*mq_command(), "admin", "drill", "run", "kill-proxy", "-n", side.namesrv, "--proxies",
                 ",".join(grpc_addr(p) for p in order), "--fault-cmd", f"kill -9 {pid}", "--duration",
                 str(args.duration), "--rate", str(args.rate), "--poll-interval", "1", "-o", "json"],
                capture_output=True, text=True, timeout=args.duration * 4 + 120, check=False,
                env={**os.environ, "PYTHONUNBUFFERED": "1"})
            if done.returncode not in (0, 1):
                raise SystemExit(f"{name} run {run}: drill exited {done.returncode}: {done.stderr[-2000:]}")
            reports.append(json.loads(done.stdout))
            deadline = time.monotonic() + 10
            while alive(first) and time.monotonic() < deadline:
                time.sleep(0.05)
            order = [order[1], side.proxy()]
    return reports


def figures(reports: list[dict[str, Any]]) -> dict[str, Any]:
    rtos = sorted(r["timeline"]["rtoSeconds"] for r in reports if r["timeline"]["rtoSeconds"] is not None)
    during = [r["timeline"]["latencyMs"]["during"] for r in reports]
    p99s = sorted(d["p99"] for d in during if d["p99"] is not None)
    return {"passed": sum(r["verdict"] == "PASS" for r in reports), "runs": len(reports),
            "lost": sum(r["integrity"]["lost"]["count"] for r in reports),
            "failed": sum(r["integrity"]["failed"] + r["integrity"]["unknown"] for r in reports),
            "rto_p50": rtos[len(rtos) // 2] if rtos else None, "rto_p99": rtos[-1] if rtos else None,
            "during_p99": statistics.median(p99s) if p99s else None,
            "during_max": max((d["max"] for d in during if d["max"] is not None), default=None),
            "duplicates": sum(r["integrity"]["duplicateDeliveries"] for r in reports)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--sides", default="apache,mq")
    args = parser.parse_args()
    sides = {"apache": apache_side, "mq": mq_side}
    res: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="proxy-failover-") as tmp:
        for name in args.sides.split(","):
            res[name] = figures(run_side(name, sides[name], Path(tmp), args))
            note(f"{name}: {res[name]}")
    parts = [f"{name}: PASS {f['passed']}/{f['runs']}, lost {f['lost']}, failed or unanswered sends {f['failed']}, "
             f"RTO p50 {f['rto_p50']} s p99 {f['rto_p99']} s, send latency during the fault p99 {f['during_p99']} ms "
             f"(median of runs) max {f['during_max']} ms, duplicate deliveries {f['duplicates']}"
             for name, f in res.items()]
    if {"apache", "mq"} <= res.keys() and res["apache"]["during_p99"] and res["mq"]["during_p99"] is not None:
        parts.append(f"mq/Apache fault-time latency p99: {res['mq']['during_p99'] / res['apache']['during_p99']:.2f}x")
    print(f"proxy_failover ({args.runs} runs a side, {args.duration:g} s at {args.rate:g} msg/s) | " + " | ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
