"""After a crash, an index file newer than the index checkpoint is dropped and rebuilt from the commitlog: the
rebuild must start where that file began, which can be several commitlog files before the checkpoint's time
(seen as a key lost after a SIGKILL in test_store_crash on a loaded machine, where the flush ran late)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from crash_child import crash_config, message_for

from mqtools.server.store.checkpoint import FIELDS
from mqtools.server.store.message_store import MessageStore

pytestmark = pytest.mark.integration

MESSAGES = 900


async def test_a_dropped_index_file_is_rebuilt_from_where_it_began(tmp_path: Path) -> None:
    store = MessageStore(crash_config(str(tmp_path)))
    await store.start()
    for seq in range(MESSAGES):
        assert (await store.put_message(message_for(seq))).ok
        if seq >= MESSAGES // 2:
            # the newest index file's keys spread over more than the checkpoint's 3 s of slack, and over several
            # commitlog files
            await asyncio.sleep(0.01)
    index_files = [(f.begin_ts, f.end_ts) for f in store.index.files]
    commitlog_files = len(store.commitlog.queue.files)
    await store.shutdown()
    assert len(index_files) >= 2 and commitlog_files >= 4

    # a crash whose last index flush covered all but the newest index file, whose keys began in an earlier
    # commitlog file than the one the checkpoint's time falls in
    (tmp_path / "abort").touch()
    checkpoint = tmp_path / "checkpoint"
    data = checkpoint.read_bytes()
    physic, logics, _ = FIELDS.unpack_from(data)
    newest_begin, newest_end = index_files[-1]
    assert newest_end - newest_begin > 3000, (newest_begin, newest_end)
    checkpoint.write_bytes(FIELDS.pack(physic, logics, newest_end - 1) + data[FIELDS.size:])

    store = MessageStore(crash_config(str(tmp_path)))
    await store.start()
    try:
        assert store.loaded_abnormally
        missing = [seq for seq in range(MESSAGES)
                   if not any(m.keys == [f"s{seq}"] for m in store.query_message("Crash", f"s{seq}", 64, 0, 2**62))]
        assert missing == []
    finally:
        await store.shutdown()
