"""Our Python Producer against our broker, next to raw SEND_MESSAGE_V2 requests; one summary line.

Starts a real `mq namesrv` + `mq broker` (ASYNC_FLUSH). The baseline is bench/broker_send.py's
raw remoting driver (hand-built SEND_MESSAGE_V2 requests, no client logic) measured in the
same run against the same broker; the Producer then sends the same 1 KiB messages with 1 and
64 sends in flight, batches of 32 with 8 in flight, and async sends with 256 in flight with
auto-batching off and on (against raw single sends with 256 in flight). Sends in flight are split
over --clients processes, as the raw driver's are, except `async256_autobatch`: the target's case is
one Producer with 256 sends in flight, so it runs in one process (`async256_autobatch_split` is the
same load split like the others; on 2 cores the second client process takes CPU from the broker).
Sends are also compared with `raw keyed`: raw requests whose messages carry a UNIQ_KEY and WAIT as
the Producer's do, so the broker does the same work for both (it indexes every UNIQ_KEY); the
target is stated against the bare raw figure.
Each figure is the best of --repeat runs (the issue's rule; the box is shared). Targets: the Producer
at 64 in flight reaches >= 0.8 of the raw figure (issue 14); async with 256 in flight and
auto-batching >= 120,000 msgs/s.

Usage: .venv/bin/python bench/client_produce.py [--seconds 3] [--clients 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import broker_send
from benchsupport import client_loop, namesrv_and_broker, run_client, run_processes, throughput

from mqtools.client.producer import Producer
from mqtools.common.message import Message


async def drive_producer(namesrv: str, kind: str, inflight: int, seconds: float, batch: int, auto_batch: bool,
                         trace: bool = False) -> dict:
    latencies: list[float] = []
    msgs = 0
    async with Producer("PG_BENCH_CLIENT", namesrv=namesrv, auto_batch=auto_batch, trace=trace) as producer:
        await producer.send(Message(broker_send.TOPIC, broker_send.BODY))
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal msgs
            while time.perf_counter() < deadline:
                t0 = time.perf_counter()
                if kind == "batch":
                    await producer.send_batch([Message(broker_send.TOPIC, broker_send.BODY) for _ in range(batch)])
                elif kind == "async":
                    await producer.send_async(Message(broker_send.TOPIC, broker_send.BODY))
                else:
                    await producer.send(Message(broker_send.TOPIC, broker_send.BODY))
                latencies.append(time.perf_counter() - t0)
                msgs += batch

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(inflight)))
        elapsed = time.perf_counter() - t0
    return {"msgs": msgs, "elapsed": elapsed, "lat": latencies}


def _child(args: tuple, out: mp.Queue) -> None:
    out.put(run_client(drive_producer(*args)))


def run_producer(namesrv: str, kind: str, inflight: int, seconds: float, batch: int, clients: int,
                 auto_batch: bool) -> dict:
    n = clients if inflight > 1 else 1
    per = max(1, inflight // n)
    args = (namesrv, kind, per, seconds, batch, auto_batch)
    return throughput(run_processes(_child, args, n, timeout=seconds + 60))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    def best(run: Callable[..., dict], *run_args: object) -> dict:
        return max((run(*run_args) for _ in range(args.repeat)), key=lambda r: r["msgs_s"])

    # name: (producer kind, in flight, batch, auto-batching, client processes); the raw baseline sends
    # single messages for "async"
    split = args.clients
    cases = {"sync1": ("send", 1, 1, False, split), "sync64": ("send", 64, 1, False, split),
             "batch32": ("batch", 8, 32, False, split), "async256": ("async", 256, 1, False, split),
             "async256_autobatch": ("async", 256, 1, True, 1), "async256_autobatch_split": ("async", 256, 1, True, split)}
    res: dict[str, tuple[dict, dict]] = {}
    raws: dict[tuple[str, int, int], dict] = {}
    keyed: dict[str, dict | None] = {}
    with namesrv_and_broker(broker_send.TOPIC, broker_send.QUEUES) as (namesrv, broker):
        for name, (kind, inflight, batch, auto_batch, clients) in cases.items():
            raw_kind = "send" if kind == "async" else kind
            if (raw_kind, inflight, batch) not in raws:
                raws[raw_kind, inflight, batch] = best(broker_send.run_case, broker.addr, raw_kind, inflight,
                                                       args.seconds, batch, args.clients)
            ours = best(run_producer, namesrv.addr, kind, inflight, args.seconds, batch, clients, auto_batch)
            if raw_kind == "send" and ("send_keyed", inflight, batch) not in raws:
                raws["send_keyed", inflight, batch] = best(broker_send.run_case, broker.addr, "send_keyed",
                                                           inflight, args.seconds, batch, args.clients)
            res[name] = (ours, raws[raw_kind, inflight, batch])
            keyed[name] = raws.get(("send_keyed", inflight, batch))
    parts = []
    for name, (o, r) in res.items():
        part = (f"{name}: {o['msgs_s']:,.0f} msgs/s p50 {o['p50_ms']:.2f} ms p99 {o['p99_ms']:.2f} ms "
                f"raw {r['msgs_s']:,.0f}/s ratio {o['msgs_s'] / r['msgs_s']:.2f}")
        k = keyed[name]
        if k is not None:
            part += f" (raw keyed {k['msgs_s']:,.0f}/s ratio {o['msgs_s'] / k['msgs_s']:.2f})"
        parts.append(part)
    print(f"client_produce (best of {args.repeat}, client loop {client_loop()}) | " + " | ".join(parts)
          + " | targets: sync64 ratio >= 0.80, async256_autobatch >= 120,000 msgs/s")


if __name__ == "__main__":
    main()
