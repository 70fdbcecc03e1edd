"""Message store append throughput against a raw sequential write of the same bytes; one summary line.

Cases (1 KiB bodies with TAGS, KEYS and a 32-char UNIQ_KEY, so consume queue and index work is
included; 128 MiB commitlog files so the run crosses file rolls):
  batch32  ASYNC_FLUSH, put_messages with 32 messages per batch
  single   ASYNC_FLUSH, put_message one at a time
  sync64   SYNC_FLUSH, 64 concurrent put_message writers (group commit)
Baselines, measured in the same run on the same directory: the exact stored bytes the store wrote,
written with os.write in the same units (one write per batch / per message) to a plain file,
with the same fsync policy (every 500 ms for ASYNC_FLUSH; one fdatasync per 64 messages for sync64,
i.e. a perfect group commit).

Each case runs --repeat times (store and raw alike) and the best rate of each is reported, because
the figures are CPU-bound and other processes on a shared host steal cycles.

Usage: .venv/bin/python bench/store_append.py [--messages 200000] [--dir /tmp] [--repeat 3]
Targets: batch32 >= 150k msg/s and >= 0.5 x raw; single >= 80k msg/s; sync64 >= 20k msg/s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from mqtools.common.codec import encode_batch
from mqtools.common.message import Message, MessageExtBatch, MessageExtBrokerInner
from mqtools.common.properties import properties_to_string
from mqtools.server.store.config import MessageStoreConfig
from mqtools.server.store.message_store import MessageStore

BODY = b"x" * 1024
TOPIC = "BenchTopic"
QUEUES = 8
HOST = ("10.0.0.1", 50000)
STORE_HOST = ("10.0.0.2", 10911)


def props(i: int) -> dict[str, str]:
    return {"TAGS": "TagA", "KEYS": f"key{i}", "UNIQ_KEY": f"0A000001{i:024X}"}


def inner(i: int) -> MessageExtBrokerInner:
    p = props(i)
    return MessageExtBrokerInner(topic=TOPIC, body=BODY, queue_id=i % QUEUES, properties=p, born_host=HOST,
                                 store_host=STORE_HOST, born_timestamp=1, properties_string=properties_to_string(p))


def config(root: Path, flush: str) -> MessageStoreConfig:
    return MessageStoreConfig(store_path_root_dir=str(root), flush_disk_type=flush,
                              mapped_file_size_commit_log=128 << 20, max_hash_slot_num=500_000,
                              max_index_num=2_000_000)


async def run_store(root: Path, flush: str, n: int, mode: str, index: bool = True) -> tuple[float, list[bytes]]:
    """Messages per second and the bytes of each write unit (a batch or a message), for the raw replay."""
    cfg = config(root, flush)
    cfg.message_index_enable = index
    store = MessageStore(cfg)
    await store.start()
    units: list[tuple[int, int]] = []
    if mode == "batch32":
        batches = [MessageExtBatch(topic=TOPIC, queue_id=b % QUEUES, born_host=HOST, store_host=STORE_HOST,
                                   body=encode_batch([Message(TOPIC, BODY, 0, props(b * 32 + k))
                                                      for k in range(32)]))
                   for b in range(n // 32)]
        t0 = time.perf_counter()
        for b in batches:
            a = (await store.put_messages(b)).append
            units.append((a.wrote_offset, a.wrote_bytes))
        elapsed = time.perf_counter() - t0
        count = len(batches) * 32
    elif mode == "single":
        msgs = [inner(i) for i in range(n)]
        t0 = time.perf_counter()
        for m in msgs:
            a = (await store.put_message(m)).append
            units.append((a.wrote_offset, a.wrote_bytes))
        elapsed = time.perf_counter() - t0
        count = n
    else:
        msgs = [inner(i) for i in range(n)]
        per = n // 64

        async def writer(w: int) -> None:
            for m in msgs[w * per:(w + 1) * per]:
                r = await store.put_message(m)
                assert r.ok, r.status
                units.append((r.append.wrote_offset, r.append.wrote_bytes))

        t0 = time.perf_counter()
        await asyncio.gather(*(writer(w) for w in range(64)))
        elapsed = time.perf_counter() - t0
        count = per * 64
    units.sort()
    data = [bytes(store.commitlog.slice(off, size)) for off, size in units]
    await store.shutdown()
    return count / elapsed, data


def run_raw(root: Path, chunks: list[bytes], msgs_per_chunk: int, sync_every: int | None) -> float:
    """os.write of the same bytes; fdatasync every ``sync_every`` chunks, else every 500 ms."""
    path = root / "raw.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        t0 = last = time.perf_counter()
        for i, chunk in enumerate(chunks):
            os.write(fd, chunk)
            if sync_every is not None:
                if (i + 1) % sync_every == 0:
                    os.fdatasync(fd)
            elif time.perf_counter() - last >= 0.5:
                os.fdatasync(fd)
                last = time.perf_counter()
        os.fdatasync(fd)
        elapsed = time.perf_counter() - t0
    finally:
        os.close(fd)
        path.unlink()
    return len(chunks) * msgs_per_chunk / elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--repeat", type=int, default=3, help="runs per case; the best is reported (shared hosts)")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="mq-bench-append-", dir=args.dir))
    results = {}
    try:
        for mode, flush, n in (("batch32", "ASYNC_FLUSH", args.messages), ("single", "ASYNC_FLUSH", args.messages),
                               ("sync64", "SYNC_FLUSH", max(args.messages // 4, 6400))):
            best = (0.0, 0.0)
            for rep in range(args.repeat):
                root = base / f"{mode}-{rep}"
                rate, data = asyncio.run(run_store(root, flush, n, mode))
                shutil.rmtree(root)
                raw = run_raw(base, data, 32 if mode == "batch32" else 1, 64 if mode == "sync64" else None)
                best = (max(best[0], rate), max(best[1], raw))
            results[mode] = best
        no_index = max(asyncio.run(run_store(base / f"noindex-{rep}", "ASYNC_FLUSH", args.messages, "batch32",
                                             index=False))[0] for rep in range(args.repeat))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    targets = {"batch32": 150_000, "single": 80_000, "sync64": 20_000}
    parts = [f"{m} {r:,.0f} msg/s (raw {w:,.0f}, {r / w:.2f}x raw, {r / targets[m]:.0%} of target {targets[m]:,})"
             for m, (r, w) in results.items()]
    print("store_append: " + "; ".join(parts) + f"; batch32 with messageIndexEnable=false {no_index:,.0f} msg/s")


if __name__ == "__main__":
    main()
