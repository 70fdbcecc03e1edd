"""HA replication benchmark with real processes; prints one summary line per measurement.

1. ASYNC_MASTER at full load (64 sends in flight, 1 KiB bodies): the master's ingest MB/s
   (its commitlog growth) against the slave's replication MB/s over the same window, the largest
   lag (master max offset - slave max offset) and its trend (least-squares slope).
   Target: replication keeps up (ratio ~1.0, lag bounded, not growing).
2. ASYNC_MASTER at a fixed send rate: steady-state lag p50/max in bytes and milliseconds of traffic.
3. SYNC_MASTER vs ASYNC_MASTER, 64 sends in flight: send latency p50/p99 and throughput;
   target SYNC throughput >= 0.5 x ASYNC.

Usage: .venv/bin/python bench/ha_replication.py [--seconds 5] [--rate 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from integration.ha.hasupport import Group, commitlog_max, ready_for_drill, send, start_group

from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import ResponseCode

TOPIC = "BenchHa"
BODY = os.urandom(1024)
BENCH_PROPS = {"mappedFileSizeCommitLog": str(64 * 1024 * 1024), "haSendHeartbeatInterval": "1000",
               "haHousekeepingInterval": "10000"}


async def sender(client: RemotingClient, addr: str, stop_at: float, inflight: int,
                 latencies: list[float] | None = None, rate: float | None = None) -> int:
    """Send until stop_at with `inflight` concurrent requests (or paced at `rate` msgs/s); count SEND_OK."""
    ok = 0
    seq = 0

    async def worker(wid: int) -> None:
        nonlocal ok, seq
        start = time.monotonic()
        while time.monotonic() < stop_at:
            if rate is not None:
                due = start + seq / rate
                seq += 1
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            t0 = time.perf_counter()
            sent = await send(client, addr, TOPIC, BODY, queue_id=wid % 4)
            if latencies is not None:
                latencies.append(time.perf_counter() - t0)
            ok += sent.code == ResponseCode.SUCCESS

    await asyncio.gather(*(worker(i) for i in range(inflight)))
    return ok


async def lag_sample(client: RemotingClient, group: Group) -> tuple[float, int, int]:
    """(when, the master's commitlog end, the slave's)."""
    assert group.slave is not None
    m = await commitlog_max(client, group.master.addr)
    s = await commitlog_max(client, group.slave.addr)
    return time.monotonic(), m, s


async def sample_lag(client: RemotingClient, group: Group, stop_at: float, out: list[tuple[float, int, int]]) -> None:
    while time.monotonic() < stop_at:
        out.append(await lag_sample(client, group))
        await asyncio.sleep(0.2)


async def full_load(root: Path, seconds: float) -> None:
    group = start_group(root / "full", role="ASYNC_MASTER", **BENCH_PROPS)
    client = RemotingClient()
    try:
        await ready_for_drill(client, group, TOPIC)
        stop_at = time.monotonic() + seconds
        samples: list[tuple[float, int, int]] = []
        await asyncio.gather(sender(client, group.master.addr, stop_at, 64), sample_lag(client, group, stop_at, samples))
        # one more once the senders are done: a short run on a slow machine may have sampled only once in its window
        samples.append(await lag_sample(client, group))
        (t0, m0, s0), (t1, m1, s1) = samples[0], samples[-1]
        ingest = (m1 - m0) / (t1 - t0) / 1e6
        repl = (s1 - s0) / (t1 - t0) / 1e6
        lags = [(t, m - s) for t, m, s in samples]
        slope = _slope(lags)  # bytes/s the lag grows by; ~0 when replication keeps up
        worst = max(lag for _, lag in lags)
        verdict = "bounded" if slope < 0.02 * (m1 - m0) / (t1 - t0) else "GROWING"
        print(f"ha_replication full-load ASYNC_MASTER: master ingest {ingest:.2f} MB/s, replication {repl:.2f} MB/s, "
              f"ratio {repl / ingest if ingest else 0:.2f} (target >= ~1.0); lag max {worst / 1024:.0f} KiB "
              f"({f'{1000 * worst / (m1 - m0) * (t1 - t0):.0f}' if m1 > m0 else 'n/a'} ms of ingest), "
              f"trend {slope / 1024:+.0f} KiB/s "
              f"({verdict})", flush=True)
    finally:
        await client.close()
        group.stop()


def _slope(points: list[tuple[float, int]]) -> float:
    """Least-squares slope of lag over time."""
    n = len(points)
    if n < 2:
        return 0.0
    mt = sum(t for t, _ in points) / n
    ml = sum(v for _, v in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return sum((t - mt) * (v - ml) for t, v in points) / var if var else 0.0


async def fixed_rate(root: Path, seconds: float, rate: float) -> None:
    group = start_group(root / "rate", role="ASYNC_MASTER", **BENCH_PROPS)
    client = RemotingClient()
    try:
        await ready_for_drill(client, group, TOPIC)
        stop_at = time.monotonic() + seconds
        samples: list[tuple[float, int, int]] = []
        sent = await asyncio.gather(sender(client, group.master.addr, stop_at, 16, rate=rate),
                                    sample_lag(client, group, stop_at, samples))
        samples.append(await lag_sample(client, group))  # as full_load: never fewer than two
        steady = samples[len(samples) // 5:]
        lags = sorted(m - s for _, m, s in steady)
        bytes_per_s = (samples[-1][1] - samples[0][1]) / (samples[-1][0] - samples[0][0])
        p50, worst = lags[len(lags) // 2], lags[-1]
        ms = (lambda b: 1000 * b / bytes_per_s if bytes_per_s else 0.0)
        print(f"ha_replication fixed-rate ASYNC_MASTER {rate:.0f} msg/s target, {sent[0] / seconds:.0f} msg/s achieved: "
              f"steady lag p50 {p50} B ({ms(p50):.0f} ms of traffic), max {worst} B ({ms(worst):.0f} ms)", flush=True)
    finally:
        await client.close()
        group.stop()


async def latency(root: Path, role: str, seconds: float) -> tuple[float, float, float]:
    group = start_group(root / role, role=role, **BENCH_PROPS)
    client = RemotingClient()
    try:
        await ready_for_drill(client, group, TOPIC)
        lat: list[float] = []
        t0 = time.monotonic()
        ok = await sender(client, group.master.addr, t0 + seconds, 64, latencies=lat)
        elapsed = time.monotonic() - t0
        lat.sort()
        return ok / elapsed, lat[len(lat) // 2] * 1000, lat[int(len(lat) * 0.99)] * 1000
    finally:
        await client.close()
        group.stop()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rate", type=float, default=2000.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        await full_load(root, args.seconds)
        await fixed_rate(root, args.seconds, args.rate)
        a_tps, a50, a99 = await latency(root, "ASYNC_MASTER", args.seconds)
        s_tps, s50, s99 = await latency(root, "SYNC_MASTER", args.seconds)
        print(f"ha_replication 64-in-flight: SYNC_MASTER {s_tps:.0f} msg/s p50 {s50:.1f} ms p99 {s99:.1f} ms vs "
              f"ASYNC_MASTER {a_tps:.0f} msg/s p50 {a50:.1f} ms p99 {a99:.1f} ms; throughput ratio "
              f"{s_tps / a_tps if a_tps else 0:.2f} (target >= 0.5)", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
