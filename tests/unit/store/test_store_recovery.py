"""Recovery: torn tails, corrupt entries, dirty consume queues, checkpoint and abort marker."""

from __future__ import annotations

import os
import random

import pytest
from unit.store.store_helpers import inner, tiny_config

from mqtools.common.codec import decode_stored
from mqtools.server.store.checkpoint import StoreCheckpoint
from mqtools.server.store.mapped_file import StoreLoadError
from mqtools.server.store.message_store import MessageStore


async def _fill(tmp_path, n=50, **kw):
    s = MessageStore(tiny_config(tmp_path, **kw))
    await s.start()
    results = []
    for i in range(n):
        r = await s.put_message(inner(body=i.to_bytes(2, "big") * 60, queue_id=i % 2, KEYS=f"k{i}"))
        results.append(r.append)
    return s, results


def _flip_byte(path, pos: int) -> None:
    with open(path, "r+b") as fh:
        fh.seek(pos)
        b = fh.read(1)
        fh.seek(pos)
        fh.write(bytes([b[0] ^ 0xFF]))


def _crash(s: MessageStore) -> None:
    for t in s._tasks:
        t.cancel()
    s._close_files()
    s._lock.release()


@pytest.mark.parametrize("seed", range(6))
async def test_truncated_last_file_recovers_to_last_whole_entry(tmp_path, seed):
    s, results = await _fill(tmp_path)
    await s.shutdown()
    files = sorted((tmp_path / "commitlog").iterdir())
    last = files[-1]
    used = max(r.end_offset for r in results) - int(last.name)
    cut = random.Random(seed).randrange(0, used)
    os.truncate(last, cut)
    (tmp_path / "abort").touch()
    s = MessageStore(tiny_config(tmp_path))
    await s.start()
    survivors = [r for r in results if r.end_offset <= int(last.name) + cut]
    assert s.max_phy_offset == (max(int(last.name), survivors[-1].end_offset))
    total_q = [len([r for i, r in enumerate(survivors) if i % 2 == q]) for q in range(2)]
    assert [s.get_max_offset_in_queue("T", q) for q in range(2)] == total_q
    for q in range(2):
        res = s.get_message("g", "T", q, 0, 32)
        assert all(decode_stored(b, check_crc=True).queue_offset == i for i, b in enumerate(res.buffers))
    r = await s.put_message(inner(queue_id=len(survivors) % 2))
    assert r.ok and r.append.wrote_offset == s.max_phy_offset - r.append.wrote_bytes
    await s.shutdown()


async def test_crc_corruption_cuts_the_log_and_dirty_consume_queue_units(tmp_path):
    s, results = await _fill(tmp_path)
    victim = results[30]
    _crash(s)
    _flip_byte(tmp_path / "commitlog" / f"{victim.wrote_offset // 4096 * 4096:020d}",
               victim.wrote_offset % 4096 + 100)
    cp = StoreCheckpoint(tmp_path / "checkpoint")
    cp.close()
    s = MessageStore(tiny_config(tmp_path))
    await s.start()
    assert s.loaded_abnormally
    assert s.max_phy_offset == victim.wrote_offset
    assert [s.get_max_offset_in_queue("T", q) for q in range(2)] == [15, 15]
    assert s.query_message("T", "k29", 8, 0, 2**62)[0].queue_offset == 14
    assert all(m.queue_offset < 15 for m in s.query_message("T", "k31", 8, 0, 2**62))
    r = await s.put_message(inner(queue_id=0))
    assert r.append.logics_offset == 15 and r.append.wrote_offset == victim.wrote_offset
    await s.shutdown()


async def test_missing_consume_queue_is_rebuilt_after_crash(tmp_path):
    s, _ = await _fill(tmp_path)
    _crash(s)
    import shutil
    shutil.rmtree(tmp_path / "consumequeue" / "T" / "1")
    s = MessageStore(tiny_config(tmp_path))
    await s.start()
    assert s.get_max_offset_in_queue("T", 1) == 25
    await s.shutdown()


async def test_wrong_size_middle_file_refuses_to_load(tmp_path):
    s, _ = await _fill(tmp_path)
    await s.shutdown()
    first = min((tmp_path / "commitlog").iterdir())
    os.truncate(first, 100)
    s = MessageStore(tiny_config(tmp_path))
    with pytest.raises(StoreLoadError, match="file size"):
        await s.start()
    # the lock was released: a fixed store can start
    os.truncate(first, 4096)
    s = MessageStore(tiny_config(tmp_path))
    await s.start()
    await s.shutdown()


async def test_checkpoint_written_at_shutdown(tmp_path):
    s, results = await _fill(tmp_path, n=5)
    await s.shutdown()
    cp = StoreCheckpoint(tmp_path / "checkpoint")
    assert cp.physic_msg_timestamp == results[-1].store_timestamp
    assert cp.logics_msg_timestamp == results[-1].store_timestamp
    assert cp.index_msg_timestamp == results[-1].store_timestamp
    assert os.path.getsize(tmp_path / "checkpoint") == 4096
    cp.close()
