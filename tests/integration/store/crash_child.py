"""Child process for the crash tests: appends under SYNC_FLUSH and reports every acked put.

Usage: crash_child.py <store root> <first sequence number>. Each acked put prints one line
``seq wrote_offset wrote_bytes queue_id logics_offset`` on stdout (unbuffered) after PUT_OK.
The parent SIGKILLs this process at a random moment.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mqtools.common.message import MessageExtBrokerInner
from mqtools.server.store.config import MessageStoreConfig
from mqtools.server.store.message_store import MessageStore

WRITERS = 8
QUEUES = 3


def crash_config(root: str) -> MessageStoreConfig:
    return MessageStoreConfig(store_path_root_dir=root, flush_disk_type="SYNC_FLUSH",
                              mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 256,
                              max_hash_slot_num=256, max_index_num=512)


def body_for(seq: int) -> bytes:
    return (f"message-{seq}-".encode() * (1 + seq % 40))[: 50 + seq % 700]


def message_for(seq: int) -> MessageExtBrokerInner:
    return MessageExtBrokerInner(topic="Crash", body=body_for(seq), queue_id=seq % QUEUES,
                                 properties={"KEYS": f"s{seq}"}, born_host=("127.0.0.1", 1),
                                 store_host=("127.0.0.1", 10911))


async def main(root: str, start: int) -> None:
    store = MessageStore(crash_config(root))
    await store.start()
    counter = iter(range(start, start + 10**9))

    async def writer() -> None:
        while True:
            seq = next(counter)
            r = await store.put_message(message_for(seq))
            if not r.ok:
                raise SystemExit(f"put failed: {r.status}")
            a = r.append
            os.write(1, f"{seq} {a.wrote_offset} {a.wrote_bytes} {seq % QUEUES} {a.logics_offset}\n".encode())

    os.write(1, b"ready\n")
    await asyncio.gather(*(writer() for _ in range(WRITERS)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
