"""Message store read-by-queue throughput (consume queue -> commitlog slices); one summary line.

Fills a store with 1 KiB messages over 8 queues (128 MiB commitlog files), then reads every
queue from offset 0 with get_message(max 32 per call, RocketMQ's in-memory transfer limit) and
joins each result's buffers into one response body, as the pull processor does. Baseline in the
same run: reading the same commitlog bytes sequentially from the files in 32-message-sized
chunks with os.readv into a preallocated buffer.

Usage: .venv/bin/python bench/store_read.py [--messages 300000] [--dir /tmp]
Target: >= 300,000 msg/s.
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
from mqtools.common.message import Message, MessageExtBatch
from mqtools.server.store.config import MessageStoreConfig
from mqtools.server.store.message_store import MessageStore
from mqtools.server.store.results import GetMessageStatus

BODY = b"x" * 1024
TOPIC = "BenchRead"
QUEUES = 8


def config(root: Path) -> MessageStoreConfig:
    return MessageStoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=128 << 20,
                              message_index_enable=False)


async def fill(store: MessageStore, n: int) -> None:
    for b in range(n // 32):
        body = encode_batch([Message(TOPIC, BODY, 0, {"TAGS": "TagA"}) for _ in range(32)])
        r = await store.put_messages(MessageExtBatch(topic=TOPIC, queue_id=b % QUEUES, body=body,
                                                     born_host=("10.0.0.1", 1), store_host=("10.0.0.2", 10911)))
        assert r.ok


def read_all(store: MessageStore) -> tuple[int, int]:
    count = total = 0
    for q in range(QUEUES):
        offset = 0
        while True:
            r = store.get_message("bench", TOPIC, q, offset, 32)
            if r.status is not GetMessageStatus.FOUND:
                break
            total += len(b"".join(r.buffers))
            count += r.message_count
            offset = r.next_begin_offset
    return count, total


def raw_read(directory: Path, chunk: int) -> tuple[float, int]:
    buf = bytearray(chunk)
    total = 0
    t0 = time.perf_counter()
    for path in sorted(directory.iterdir()):
        fd = os.open(path, os.O_RDONLY)
        try:
            while n := os.readv(fd, [buf]):
                total += n
        finally:
            os.close(fd)
    return time.perf_counter() - t0, total


async def main_async(root: Path, n: int) -> str:
    store = MessageStore(config(root))
    await store.start()
    await fill(store, n)
    read_all(store)  # warm: both paths read from the page cache
    t0 = time.perf_counter()
    count, total = read_all(store)
    elapsed = time.perf_counter() - t0
    used = store.max_phy_offset
    await store.shutdown()
    entry = total // count
    raw_elapsed, _ = raw_read(root / "commitlog", entry * 32)
    raw_rate = (used // entry) / raw_elapsed
    rate = count / elapsed
    return (f"store_read: {rate:,.0f} msg/s by queue ({count:,} msgs, {total / elapsed / 2**20:,.0f} MiB/s; "
            f"raw sequential read {raw_rate:,.0f} msg/s, {rate / raw_rate:.2f}x raw; "
            f"{rate / 300_000:.0%} of target 300,000)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=300_000)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mq-bench-read-", dir=args.dir))
    try:
        print(asyncio.run(main_async(root, args.messages)))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
