"""What front workers take off the broker's store loop, and what they cost; one summary line.

Two brokers run at once (ASYNC_FLUSH, temp stores, a name server each): one with frontWorkers=0 (the store's
process serves its clients itself, as before) and one with frontWorkers=--workers (its clients' connections
accepted, read and written by worker processes that parse their plain sends and relay the rest;
mqtools/server/broker/front). The cases are broker_cpu.py's: our Producer in one client process, 1 KiB
messages, `py64` with 64 sync sends in flight and `py_async256` with 256 async sends in flight; and `tls64`,
broker_send.py's raw SEND_MESSAGE_V2 driver with 64 in flight over TLS (both brokers serve TLS permissive
with a local CA's certificate, as `mq cluster up --tls` makes); `conns8`, 8 raw client processes of 8 in
flight each. Runs alternate between the brokers, --repeat of each; each figure is the median.

Per case and broker: msgs/s, the CPU microseconds per acknowledged message of the store process's event-loop
thread (its main thread), of the whole store process (with the commitlog's warmer and flusher threads) and of
the workers (psutil, user+system time over the run). The loop ratio is the loop thread's CPU per message with
workers over without: below 1.0 is the work that left the store's loop, which a machine with cores to spare
turns into throughput (the store's loop is the broker's ceiling); the store ratio is the same for the whole
process. On a 2-core machine the client takes one core, so msgs/s cannot rise there and shows the workers'
cost instead.

Usage: .venv/bin/python bench/front_workers.py [--seconds 4] [--repeat 3] [--workers 1]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import broker_cpu
import broker_send
import psutil
from benchsupport import client_loop, namesrv_and_broker
from support.mqproc import MqProcess

from mqtools.cluster.certs import make_local_certificates


def cpu_s(procs: list[psutil.Process]) -> float:
    total = 0.0
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


#: case -> (client, sends in flight per client process): our Producer as broker_cpu.py drives it, or its raw driver
#: over TLS (tls) or in 8 processes (conns).
CASES = {"py64": ("send", 64), "py_async256": ("async", 256), "tls64": ("tls", 64), "conns8": ("conns", 8)}


def run(broker: MqProcess, namesrv: str, kind: str, inflight: int, seconds: float, ca: str) -> dict:
    if kind in ("send", "async"):
        return broker_cpu.producer_run(namesrv, kind, inflight, seconds)
    return broker_cpu.raw_run(broker.addr, inflight, seconds, tls_ca=ca if kind == "tls" else None,
                              clients=8 if kind == "conns" else 1)


def loop_cpu_s(store: psutil.Process) -> float:
    """The CPU time of the store process's main thread, which runs its event loop (the broker's ceiling); the
    others are the commitlog's warmer and flusher and the executor's threads."""
    main = next(t for t in store.threads() if t.id == store.pid)
    return main.user_time + main.system_time


def measured(broker: MqProcess, namesrv: str, kind: str, inflight: int, seconds: float, ca: str) -> dict:
    store = psutil.Process(broker.pid)
    workers = store.children()
    before = cpu_s([store]), cpu_s(workers), loop_cpu_s(store)
    result = run(broker, namesrv, kind, inflight, seconds, ca)
    msgs = max(1, result["msgs"])
    return {**result, "store_us": (cpu_s([store]) - before[0]) / msgs * 1e6,
            "workers_us": (cpu_s(workers) - before[1]) / msgs * 1e6,
            "loop_us": (loop_cpu_s(store) - before[2]) / msgs * 1e6, "workers": len(workers)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    runs: dict[tuple[str, int], list[dict]] = {}
    sides = (0, args.workers)
    with contextlib.ExitStack() as stack:
        certs = make_local_certificates(Path(stack.enter_context(tempfile.TemporaryDirectory())))
        tls = {"tls.server.mode": "permissive", "tls.server.certPath": str(certs.cert),
               "tls.server.keyPath": str(certs.key)}
        brokers = {n: stack.enter_context(namesrv_and_broker(broker_send.TOPIC, broker_send.QUEUES,
                                                             frontWorkers=str(n), **tls)) for n in sides}
        for n, (namesrv, _) in brokers.items():
            broker_cpu.producer_run(namesrv.addr, "send", 64, 1.0)  # warm-up: routes, the commitlog's first pages
        for _ in range(args.repeat):
            for name, (kind, inflight) in CASES.items():
                for n, (namesrv, broker) in brokers.items():
                    runs.setdefault((name, n), []).append(
                        measured(broker, namesrv.addr, kind, inflight, args.seconds, str(certs.ca)))

    def median(name: str, n: int, key: str) -> float:
        return statistics.median(r[key] for r in runs[(name, n)])

    parts = []
    for name in CASES:
        line = [name + ":"]
        for n in sides:
            line.append(f"workers={n} {median(name, n, 'msgs_s'):,.0f} msgs/s loop {median(name, n, 'loop_us'):.1f}"
                        f" store {median(name, n, 'store_us'):.1f} + workers {median(name, n, 'workers_us'):.1f}"
                        " us/msg")
        for key, label in (("loop_us", "loop"), ("store_us", "store")):
            ratio = median(name, args.workers, key) / median(name, 0, key)
            each = ", ".join(f"{a[key] / b[key]:.2f}" for a, b in zip(runs[(name, args.workers)], runs[(name, 0)],
                                                                        strict=True))
            line.append(f"{label} ratio {ratio:.2f} (runs {each})")
        parts.append(" ".join(line))
    print(f"front_workers (median of {args.repeat}, {args.seconds:g} s, client loop {client_loop()}) | "
          + " | ".join(parts) + " | loop ratio: the store's event-loop thread's CPU per message with workers over "
          "without (the broker's ceiling); store ratio: its whole process's (the warmer and flusher threads too); "
          "lower is better")


if __name__ == "__main__":
    main()
