"""Property test: random single/batch appends, reopen (clean or crashed), reads by offset and by
queue index always agree with an in-memory model."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unit.store.store_helpers import batch, inner, tiny_config

from mqtools.common.codec import decode_stored
from mqtools.server.store.message_store import MessageStore

QUEUES = [("A", 0), ("A", 1), ("B", 0)]

single = st.tuples(st.just("put"), st.sampled_from(QUEUES), st.binary(min_size=0, max_size=300))
batched = st.tuples(st.just("batch"), st.sampled_from(QUEUES),
                    st.lists(st.binary(min_size=1, max_size=120), min_size=1, max_size=6))
reopen = st.tuples(st.just("reopen"), st.booleans(), st.just(b""))
ops = st.lists(st.one_of(single, single, batched, reopen), min_size=1, max_size=50)


async def _open(root: Path) -> MessageStore:
    s = MessageStore(tiny_config(root, max_index_num=16))
    await s.start()
    return s


async def _crash(s: MessageStore) -> None:
    """Drop the store without shutdown: abort marker stays, nothing extra is flushed."""
    for t in s._tasks:
        t.cancel()
    await asyncio.gather(*s._tasks, return_exceptions=True)
    s._close_files()
    s._lock.release()


def _check(s: MessageStore, model: dict, phys: list) -> None:
    for (topic, qid), bodies in model.items():
        assert s.get_max_offset_in_queue(topic, qid) == len(bodies)
        got, off = [], 0
        while off < len(bodies):
            r = s.get_message("g", topic, qid, off, 32)
            assert r.message_count > 0, r.status
            got += [decode_stored(b, check_crc=True).body for b in r.buffers]
            off = r.next_begin_offset
        assert got == bodies
    for offset, body, qoff in phys:
        m = s.look_message_by_offset(offset)
        assert m is not None and m.body == body and m.queue_offset == qoff


async def _run(ops_list, root: Path) -> None:
    s = await _open(root)
    model: dict = {q: [] for q in QUEUES}
    phys: list = []
    for op, arg, data in ops_list:
        if op == "put":
            (topic, qid) = arg
            r = await s.put_message(inner(topic=topic, queue_id=qid, body=data))
            assert r.ok and r.append.logics_offset == len(model[arg])
            phys.append((r.append.wrote_offset, data, len(model[arg])))
            model[arg].append(data)
        elif op == "batch":
            (topic, qid) = arg
            r = await s.put_messages(batch(topic, qid, data))
            assert r.ok and r.append.msg_num == len(data)
            off = r.append.wrote_offset
            for i, body in enumerate(data):
                phys.append((off, body, len(model[arg]) + i))
                off = off + decode_stored(s.commitlog.entry(off)).store_size
            model[arg].extend(data)
        else:
            if arg:
                await _crash(s)
            else:
                await s.shutdown()
            s = await _open(root)
            assert s.loaded_abnormally == arg
        _check(s, model, phys[-3:])
    _check(s, model, phys)
    await s.shutdown()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_store_agrees_with_model(ops_list):
    root = Path(tempfile.mkdtemp(prefix="mqstore-model-"))
    try:
        asyncio.run(_run(ops_list, root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
