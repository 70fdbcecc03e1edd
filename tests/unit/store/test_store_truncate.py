"""Controller mode's truncation: a returning old master cuts its divergent tail and goes on from there."""

from __future__ import annotations

import pytest
from unit.store.store_helpers import inner, tiny_config

from mqtools.server.store.message_store import MessageStore


async def _store(tmp_path, **kw) -> MessageStore:
    s = MessageStore(tiny_config(tmp_path, mapped_file_size_commit_log=4096, **kw))
    await s.start()
    return s


async def test_truncation_cuts_the_commitlog_queues_and_offsets_back_to_the_point(tmp_path):
    s = await _store(tmp_path)
    kept = [await s.put_message(inner(queue_id=0)) for _ in range(30)]  # several 4 KiB files
    point = kept[-1].append.end_offset
    tail = [await s.put_message(inner(queue_id=q % 2)) for q in range(25)]
    assert s.max_phy_offset > point and s.get_max_offset_in_queue("T", 1) == 12
    assert s.truncate_commit_log(point) == tail[-1].append.end_offset - point
    assert s.max_phy_offset == point
    assert (s.get_max_offset_in_queue("T", 0), s.get_max_offset_in_queue("T", 1)) == (30, 0)
    assert s.look_message_by_offset(kept[-1].append.wrote_offset) is not None
    assert s.look_message_by_offset(tail[0].append.wrote_offset) is None
    again = await s.put_message(inner(queue_id=0))  # the log goes on from the point, queue offsets too
    assert (again.append.wrote_offset, again.append.logics_offset) == (point, 30)
    assert s.truncate_commit_log(s.max_phy_offset + 100) == 0
    await s.shutdown()


async def test_a_truncated_store_recovers_to_the_point_after_a_restart(tmp_path):
    s = await _store(tmp_path)
    point = [await s.put_message(inner()) for _ in range(5)][-1].append.end_offset
    for _ in range(5):
        await s.put_message(inner())
    s.truncate_commit_log(point)
    await s.shutdown()
    s = await _store(tmp_path)
    assert s.max_phy_offset == point and s.get_max_offset_in_queue("T", 0) == 5
    await s.shutdown()


async def test_a_torn_last_entry_is_cut_and_whole_ones_stay(tmp_path):
    s = await _store(tmp_path)
    whole = [await s.put_message(inner()) for _ in range(3)][-1].append.end_offset
    entry = bytes(s.commitlog.slice(0, whole // 3))
    assert s.append_to_commit_log(whole, entry[:40])  # a slave's copy ending mid-entry
    assert s.max_phy_offset == whole + 40
    assert s.truncate_torn_tail() == 40 and s.max_phy_offset == whole
    assert s.truncate_torn_tail() == 0
    await s.shutdown()


async def test_with_a_dispatch_limit_consumers_see_only_what_the_group_confirmed(tmp_path):
    s = await _store(tmp_path)
    confirmed = [0]
    s.dispatch_limit = lambda: confirmed[0]
    first = await s.put_message(inner())
    second = await s.put_message(inner())
    assert s.get_max_offset_in_queue("T", 0) == 0  # written, not yet built into the queue
    confirmed[0] = first.append.end_offset
    s.dispatch_confirmed()
    assert s.get_max_offset_in_queue("T", 0) == 1
    confirmed[0] = second.append.end_offset - 1  # an entry ending past the limit waits whole
    s.dispatch_confirmed()
    assert s.get_max_offset_in_queue("T", 0) == 1
    s.dispatch_limit = None
    s.dispatch_confirmed()
    assert s.get_max_offset_in_queue("T", 0) == 2 and second.append.logics_offset == 1
    await s.shutdown()


@pytest.mark.parametrize("cut", [39, 35, 25])
@pytest.mark.parametrize("indexed", [True, False], ids=["indexed", "waiting"])
async def test_truncation_keeps_the_keys_before_the_point_and_forgets_those_past_it(tmp_path, cut, indexed):
    """Two index files (31 keys a file): the cut falls in the newest one or in the one before. Keys stored
    before the point are found again, also after a restart; a cut key finds nothing, not even the message
    written next at its offset, whether its key was indexed before the cut or still waited."""
    s = await _store(tmp_path)
    sent = [await s.put_message(inner(KEYS=f"k{i}")) for i in range(40)]
    if indexed:
        assert len(s.query_message("T", "k0", 8, 0, 2**62)) == 1
    point = sent[cut].append.wrote_offset
    s.truncate_commit_log(point)
    again = await s.put_message(inner(KEYS="next"))
    assert again.append.wrote_offset == point

    def found(key: str) -> list[int]:
        return [m.commit_log_offset for m in s.query_message("T", key, 8, 0, 2**62)]

    for _ in range(2):
        for i, r in enumerate(sent):
            assert found(f"k{i}") == ([r.append.wrote_offset] if i < cut else []), i
        assert found("next") == [point]
        await s.shutdown()
        s = await _store(tmp_path)
    await s.shutdown()
