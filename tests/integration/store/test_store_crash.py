"""Crash tests with real processes: SIGKILL a SYNC_FLUSH writer at random moments and check that
every acked message survives intact, consume queues match the commitlog, and appends continue."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mqtools.common.codec import decode_stored

sys.path.insert(0, str(Path(__file__).parent))
from crash_child import QUEUES, body_for, crash_config, message_for

from mqtools.server.store.message_store import MessageStore

pytestmark = pytest.mark.integration
CHILD = Path(__file__).parent / "crash_child.py"
ROUNDS = 20


def _run_child(root: Path, start: int, kill_after: float) -> list[tuple[int, ...]]:
    """Start the writer, SIGKILL it ``kill_after`` seconds after it is ready; return acked puts."""
    proc = subprocess.Popen([sys.executable, str(CHILD), str(root), str(start)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=Path(__file__).parents[3])
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first == b"ready\n", (first, proc.stderr.read() if proc.stderr else b"")
    time.sleep(kill_after)
    proc.send_signal(signal.SIGKILL)
    out = proc.stdout.read()
    proc.wait()
    proc.stdout.close()
    if proc.stderr is not None:
        proc.stderr.close()
    acked = []
    for line in out.split(b"\n"):
        parts = line.split()
        if len(parts) == 5:  # a line torn by the kill is incomplete and was never acked in full
            acked.append(tuple(int(p) for p in parts))
    return acked


async def _verify(root: Path, acked: dict[int, tuple[int, ...]], next_seq: int) -> None:
    store = MessageStore(crash_config(str(root)))
    await store.start()
    assert store.loaded_abnormally
    for seq, (_, offset, size, qid, qoff) in acked.items():
        raw = store.select_one_message_by_offset(offset, size)
        assert raw is not None, f"acked message {seq} at {offset} is missing"
        msg = decode_stored(raw, check_crc=True)
        assert (msg.body, msg.queue_id, msg.queue_offset) == (body_for(seq), qid, qoff)
        assert store.get_commit_log_offset_in_queue("Crash", qid, qoff) == offset
    for seq in random.Random(next_seq).sample(sorted(acked), min(30, len(acked))):
        hits = store.query_message("Crash", f"s{seq}", 64, 0, 2**62)
        assert any(m.keys == [f"s{seq}"] for m in hits), f"acked message {seq} not found by key"
    for qid in range(QUEUES):
        lo, hi = store.get_min_offset_in_queue("Crash", qid), store.get_max_offset_in_queue("Crash", qid)
        for qoff in range(lo, hi):
            phys = store.get_commit_log_offset_in_queue("Crash", qid, qoff)
            m = store.look_message_by_offset(phys)
            assert m is not None and (m.queue_id, m.queue_offset) == (qid, qoff)
    r = await store.put_message(message_for(next_seq))
    assert r.ok and r.append.wrote_offset + r.append.wrote_bytes == store.max_phy_offset
    await store.shutdown()


async def test_sigkill_under_sync_flush_loses_no_acked_message(tmp_path):
    rng = random.Random(1234)
    acked: dict[int, tuple[int, ...]] = {}
    next_seq = 0
    for _ in range(ROUNDS):
        round_acked = _run_child(tmp_path, next_seq, rng.uniform(0.02, 0.25))
        for rec in round_acked:
            acked[rec[0]] = rec
        next_seq = max([next_seq, *(r[0] + 1 for r in round_acked)]) + 100
        await _verify(tmp_path, acked, next_seq)
        next_seq += 1
        # the verify put shifted its queue: later acks carry their own offsets, older ones stay valid
    assert len(acked) > ROUNDS * 10
    assert len(os.listdir(tmp_path / "commitlog")) > 1
