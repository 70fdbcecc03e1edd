"""The broker's CPU per message under many small concurrent sends from our Producer; one summary line.

Issue 46's py64 and async256 cases without the JVM: our Producer (mqtools.client) in one client process
sends 1 KiB messages one at a time, `py64` with 64 sync sends in flight and `py_async256` with 256 async
sends in flight (auto-batching off), to a real `mq broker` (ASYNC_FLUSH, temp store, with a name
server). Each case reports msgs/s and the broker's CPU microseconds per message (psutil cpu_times
before/after the timed run over the messages it acknowledged): on a shared 2-core machine msgs/s moves
with the neighbours' load, CPU per message much less.

The baseline, measured in the same run: bench/broker_send.py's canned "ceiling" server (our
RemotingServer answering SEND_MESSAGE_V2 with a fixed response, no store) driven by the raw
SEND_MESSAGE_V2 driver at the same concurrency; `ratio` is the broker's CPU per message over the
ceiling's, i.e. how many times the bare request/response floor of our remoting layer the broker's work
per message costs. Each figure is the median of --repeat runs (cases alternate, so drift hits all).

Usage: .venv/bin/python bench/broker_cpu.py [--seconds 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import broker_send
import client_produce
import psutil
from benchsupport import client_loop, namesrv_and_broker, run_processes

#: case name -> (Producer kind, sends in flight); one client process each, as reference.py's py64.
CASES: dict[str, tuple[str, int]] = {"py64": ("send", 64), "py_async256": ("async", 256)}


def producer_run(namesrv: str, kind: str, inflight: int, seconds: float) -> dict:
    """One client process: the messages it had acknowledged and the time it took."""
    (r,) = run_processes(client_produce._child, (namesrv, kind, inflight, seconds, 1, False), 1,
                         timeout=seconds + 60)
    return {"msgs": r["msgs"], "msgs_s": r["msgs"] / max(r["elapsed"], 1e-3)}


def raw_run(addr: str, inflight: int, seconds: float, *, tls_ca: str | None = None, clients: int = 1) -> dict:
    """The raw SEND_MESSAGE_V2 driver (broker_send.drive) in `clients` client processes of `inflight` each (over TLS
    with `tls_ca`)."""
    results = run_processes(broker_send._child, (addr, "send", inflight, seconds, 1, tls_ca, False), clients,
                            timeout=seconds + 60)
    msgs = sum(r["msgs"] for r in results)
    return {"msgs": msgs, "msgs_s": msgs / max(max(r["elapsed"] for r in results), 1e-3)}


def measured(pid: int, run: Callable[[], dict]) -> dict:
    """`run`'s figures and `pid`'s CPU microseconds per acknowledged message over it, in all and its
    system part (the kernel's: socket reads and writes, page faults on the commitlog mapping)."""
    before = psutil.Process(pid).cpu_times()
    result = run()
    after, msgs = psutil.Process(pid).cpu_times(), max(1, result["msgs"])
    user, system = (after.user - before.user) / msgs * 1e6, (after.system - before.system) / msgs * 1e6
    return {**result, "cpu_us": user + system, "sys_us": system}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[dict]] = {}
    ceiling = subprocess.Popen([sys.executable, "-c", broker_send.CEILING_SERVER], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env={**os.environ})
    try:
        ceiling_addr = ceiling.stdout.readline().split()[2]  # type: ignore[union-attr]
        with namesrv_and_broker(broker_send.TOPIC, broker_send.QUEUES) as (namesrv, broker):
            producer_run(namesrv.addr, "send", 64, 1.0)  # warm-up: routes, the commitlog's first pages
            for _ in range(args.repeat):
                for name, (kind, inflight) in CASES.items():
                    runs.setdefault(name, []).append(measured(broker.proc.pid, lambda k=kind, i=inflight: producer_run(
                        namesrv.addr, k, i, args.seconds)))
                    runs.setdefault("ceil_" + name, []).append(measured(ceiling.pid, lambda i=inflight: raw_run(
                        ceiling_addr, i, args.seconds)))
    finally:
        ceiling.stdin.close()  # type: ignore[union-attr]
        ceiling.wait(10)

    def median(name: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[name])

    parts = []
    for name in CASES:
        cpu, ceil = median(name, "cpu_us"), median("ceil_" + name, "cpu_us")
        system, ceil_system = median(name, "sys_us"), median("ceil_" + name, "sys_us")
        each = ", ".join(f"{r['cpu_us']:.1f}" for r in runs[name])
        parts.append(f"{name}: {median(name, 'msgs_s'):,.0f} msgs/s broker cpu {cpu:.1f} us/msg "
                     f"(sys {system:.1f}; runs {each}) ceiling {ceil:.1f} us/msg (sys {ceil_system:.1f}) "
                     f"ratio {cpu / ceil:.2f}")
    print(f"broker_cpu (median of {args.repeat}, client loop {client_loop()}) | " + " | ".join(parts)
          + " | lower is better; issue 46 measured Apache 4.9.7 at 0.47x mq's broker CPU per message on py64")


if __name__ == "__main__":
    main()
