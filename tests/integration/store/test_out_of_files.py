"""A store whose process has no file descriptor left: puts that need a new file are refused, nothing half-written.

Each consume-queue and index file keeps a descriptor open, as Apache's mapped files do, so a broker with many
queues meets its open-file limit (1,024 by default for a login shell or a service). A put to a queue whose file
was not created yet then stored its commitlog entry and failed in the consume queue with the descriptor error:
the producer got SYSTEM_ERROR for a message the commitlog held, the queue's offset counter moved past a unit that
was never written, and the store went on as if dispatch had caught up. Found by lowering a broker's limit while
it ran. The store runs in a process of its own here, whose limit is lowered and whose descriptors are used up.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.descriptors import USE_UP

pytestmark = pytest.mark.integration

STORE = USE_UP + textwrap.dedent("""
    import asyncio, json, os, sys
    from mqtools.common.codec import decode_stored, encode_batch
    from mqtools.common.message import Message, MessageExtBatch, MessageExtBrokerInner
    from mqtools.server.store.config import MessageStoreConfig
    from mqtools.server.store.message_store import MessageStore

    ROOT = sys.argv[1]
    HOSTS = {"born_host": ("10.0.0.1", 4000), "store_host": ("10.0.0.2", 10911)}

    def message(queue_id, key, body=b"x" * 100):
        return MessageExtBrokerInner(topic="T", body=body, queue_id=queue_id, properties={"KEYS": key},
                                     born_timestamp=1, **HOSTS)

    def batch(queue_id, n):
        body = encode_batch([Message("T", b"b" * 50, 0, {"KEYS": f"b{i}"}) for i in range(n)])
        return MessageExtBatch(topic="T", body=body, queue_id=queue_id, **HOSTS)

    def open_store():
        return MessageStore(MessageStoreConfig(store_path_root_dir=ROOT, mapped_file_size_commit_log=1 << 20,
                                               mapped_file_size_consume_queue=20 * 1024, max_hash_slot_num=64,
                                               max_index_num=40))

    async def main():
        store = open_store()
        await store.start()
        out = {"before": [(await store.put_message(message(0, f"k{i}"))).ok for i in range(4)]}
        store.query_message("T", "k1", 4, 0, 1 << 62)  # the waiting keys are indexed: the first index file is made
        taken = use_up(256)  # every descriptor the process may open is taken
        # queue 0's file is there; the keys are indexed 64 at a time, and past the first index file's 40 they need
        # a second one: they wait, and a lookup meanwhile answers from what is indexed
        out["known_queue"] = [(await store.put_message(message(0, f"k{i}"))).ok for i in range(4, 80)]
        out["keys_meanwhile"] = [len(store.query_message("T", k, 4, 0, 1 << 62)) for k in ("k1", "k70")]
        end = store.commitlog.max_offset
        single = await store.put_message(message(1, "new-queue"))
        out["new_queue"] = [single.status.value, single.remark]
        many = await store.put_messages(batch(2, 3))
        out["new_queue_batch"] = many.status.value
        out["commitlog_grew"] = store.commitlog.max_offset - end
        out["queue_1_max"] = store.get_max_offset_in_queue("T", 1)
        for fd in taken:
            os.close(fd)
        again = await store.put_message(message(1, "after", b"after"))
        out["after"] = [again.ok, again.append.logics_offset if again.append else None]
        out["after_batch"] = (await store.put_messages(batch(2, 3))).ok
        out["keys"] = [len(store.query_message("T", k, 4, 0, 1 << 62)) for k in ("k1", "k70", "after")]
        await store.shutdown()
        store = open_store()
        await store.start()
        got = store.get_message("g", "T", 1, 0, 32)
        out["restarted"] = [store.get_max_offset_in_queue("T", q) for q in range(3)]
        out["queue_1_bodies"] = [bytes(decode_stored(b).body).decode() for b in got.buffers]
        await store.shutdown()
        print(json.dumps(out))

    asyncio.run(main())
""")


def test_a_put_that_needs_a_new_file_is_refused_whole_when_no_descriptor_is_left(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", STORE, str(tmp_path / "store")], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-3000:]}"
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["before"] == [True] * 4
    # the queue's file exists: its puts go on, and keys wait for the index file they cannot get yet
    assert out["known_queue"] == [True] * 76 and out["keys_meanwhile"] == [1, 0]
    # a queue without a file yet: refused by name, before anything is written
    assert out["new_queue"][0] == "CREATE_MAPPED_FILE_FAILED" and "Too many open files" in out["new_queue"][1]
    assert out["new_queue_batch"] == "CREATE_MAPPED_FILE_FAILED"
    assert out["commitlog_grew"] == 0 and out["queue_1_max"] == 0
    # descriptors again: the queue starts at 0 with the put that was accepted, and the waiting keys are indexed
    assert out["after"] == [True, 0] and out["after_batch"] is True
    assert out["keys"] == [1, 1, 1]
    assert out["restarted"] == [80, 1, 3] and out["queue_1_bodies"] == ["after"]
