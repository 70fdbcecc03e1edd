"""Our Python Producer against our broker, next to raw SEND_MESSAGE_V2 requests; one summary line.

Starts a real `mq namesrv` + `mq broker` (ASYNC_FLUSH). The baseline is bench/broker_send.py's
raw remoting driver (hand-built SEND_MESSAGE_V2 requests, no client logic) measured in the
same run against the same broker; the Producer then sends the same 1 KiB messages with 1 and
64 sends in flight, and batches of 32 with 8 in flight. Target: the Producer at 64 in flight
reaches >= 0.7 of the raw figure.

Usage: .venv/bin/python bench/client_produce.py [--seconds 3] [--clients 2]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import broker_send
from mqproc import start_broker, start_namesrv

from mqtools.client.producer import Producer
from mqtools.common.message import Message


async def drive_producer(namesrv: str, kind: str, inflight: int, seconds: float, batch: int) -> dict:
    latencies: list[float] = []
    msgs = 0
    async with Producer("PG_BENCH_CLIENT", namesrv=namesrv) as producer:
        await producer.send(Message(broker_send.TOPIC, broker_send.BODY))
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal msgs
            while time.perf_counter() < deadline:
                t0 = time.perf_counter()
                if kind == "batch":
                    await producer.send_batch([Message(broker_send.TOPIC, broker_send.BODY) for _ in range(batch)])
                else:
                    await producer.send(Message(broker_send.TOPIC, broker_send.BODY))
                latencies.append(time.perf_counter() - t0)
                msgs += batch

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(inflight)))
        elapsed = time.perf_counter() - t0
    return {"msgs": msgs, "elapsed": elapsed, "lat": latencies}


def _child(args: tuple, out: mp.Queue) -> None:
    out.put(asyncio.run(drive_producer(*args)))


def run_producer(namesrv: str, kind: str, inflight: int, seconds: float, batch: int, clients: int) -> dict:
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()
    n = clients if inflight > 1 else 1
    per = max(1, inflight // n)
    procs = [ctx.Process(target=_child, args=((namesrv, kind, per, seconds, batch), out)) for _ in range(n)]
    for p in procs:
        p.start()
    results = [out.get(timeout=seconds + 60) for _ in procs]
    for p in procs:
        p.join(10)
    lat = sorted(x for r in results for x in r["lat"])
    msgs = sum(r["msgs"] for r in results)
    elapsed = max(r["elapsed"] for r in results)
    return {"msgs_s": msgs / elapsed, "p50_ms": statistics.median(lat) * 1000,
            "p99_ms": lat[int(len(lat) * 0.99) - 1] * 1000}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--clients", type=int, default=2)
    args = parser.parse_args()
    cases = {"sync1": ("send", 1, 1), "sync64": ("send", 64, 1), "batch32": ("batch", 8, 32)}
    res: dict[str, tuple[dict, dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        namesrv = start_namesrv(work)
        broker = start_broker(work, namesrv.addr, "bench", flushDiskType="ASYNC_FLUSH",
                              mappedFileSizeCommitLog=str(1024 * 1024 * 1024))
        try:
            asyncio.run(broker_send._create_topic(broker.addr))
            time.sleep(1.0)
            for name, (kind, inflight, batch) in cases.items():
                raw = broker_send.run_case(broker.addr, kind, inflight, args.seconds, batch, args.clients)
                ours = run_producer(namesrv.addr, kind, inflight, args.seconds, batch, args.clients)
                res[name] = (ours, raw)
        finally:
            broker.stop()
            namesrv.stop()
    parts = [f"{name}: {o['msgs_s']:,.0f} msgs/s p50 {o['p50_ms']:.2f} ms p99 {o['p99_ms']:.2f} ms "
             f"raw {r['msgs_s']:,.0f}/s ratio {o['msgs_s'] / r['msgs_s']:.2f}" for name, (o, r) in res.items()]
    print("client_produce | " + " | ".join(parts) + " | target: sync64 ratio >= 0.70")


if __name__ == "__main__":
    main()
