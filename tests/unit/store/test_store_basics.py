"""MessageStore behaviour on tiny files: puts, rolls, reads, statuses, index, lock, reopen."""

from __future__ import annotations

import struct

import pytest
from unit.store.store_helpers import batch, inner, tiny_config

from mqtools.common.codec import (
    BATCH_ENTRY_FIXED,
    BATCH_HEAD,
    BLANK_MAGIC,
    MAX_PROPERTIES_LEN,
    SHORT,
    decode_stored,
)
from mqtools.common.hashing import tags_code
from mqtools.common.ids import decode_offset_msg_id
from mqtools.server.store.index import WAITING_LIMIT
from mqtools.server.store.message_store import MessageStore
from mqtools.server.store.results import GetMessageStatus, PutMessageStatus
from mqtools.server.store.store_lock import StoreLockedError


async def _store(tmp_path, **kw) -> MessageStore:
    s = MessageStore(tiny_config(tmp_path, **kw))
    await s.start()
    return s


async def test_put_roll_and_read_back(tmp_path):
    s = await _store(tmp_path)
    offsets = []
    for i in range(60):
        r = await s.put_message(inner(body=bytes([i]) * 200, TAGS="a" if i % 2 else "b"))
        assert r.ok and r.append.logics_offset == i
        offsets.append(r.append.wrote_offset)
    files = s.commitlog.queue.files
    assert len(files) > 3
    # every non-last file ends with a blank record where the next message did not fit
    for mf in files[:-1]:
        pos = 0
        while True:
            size, magic = struct.unpack_from(">ii", mf.mm, pos)
            if magic == BLANK_MAGIC:
                assert pos + size == mf.size
                break
            pos += size
    for i, off in enumerate(offsets):
        m = s.look_message_by_offset(off)
        assert m.body == bytes([i]) * 200 and m.queue_offset == i and m.commit_log_offset == off
    got, off = [], 0
    while off < 60:
        res = s.get_message("g", "T", 0, off, 32)
        assert res.status is GetMessageStatus.FOUND
        got += [decode_stored(b).body[0] for b in res.buffers]
        off = res.next_begin_offset
    assert got == list(range(60))
    await s.shutdown()


async def test_get_message_statuses(tmp_path):
    s = await _store(tmp_path)
    assert s.get_message("g", "T", 0, 0, 32).status is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    for _ in range(3):
        await s.put_message(inner(TAGS="x"))
    assert s.get_message("g", "T", 0, 3, 32).status is GetMessageStatus.OFFSET_OVERFLOW_ONE
    r = s.get_message("g", "T", 0, 9, 32)
    assert r.status is GetMessageStatus.OFFSET_OVERFLOW_BADLY and r.next_begin_offset == 0
    from mqtools.common.hashing import java_hash
    r = s.get_message("g", "T", 0, 0, 32, tag_filter=lambda code: code == java_hash("y"))
    assert r.status is GetMessageStatus.NO_MATCHED_MESSAGE and r.next_begin_offset == 3
    r = s.get_message("g", "T", 0, 1, 1)
    assert r.message_count == 1 and r.next_begin_offset == 2 and (r.min_offset, r.max_offset) == (0, 3)
    await s.shutdown()


async def test_batch_is_one_write_with_consecutive_offsets(tmp_path):
    s = await _store(tmp_path)
    await s.put_message(inner(queue_id=1))
    r = await s.put_messages(batch("T", 1, [b"a" * 10, b"b" * 20, b"c" * 30], KEYS="bk"))
    assert r.ok and r.append.msg_num == 3 and r.append.logics_offset == 1
    ids = r.append.msg_ids
    assert len(ids) == 3 and ids[0] == r.append.msg_id
    assert [s.look_message_by_offset(decode_offset_msg_id(i)[1]).body[:1] for i in ids] == [b"a", b"b", b"c"]
    assert s.get_max_offset_in_queue("T", 1) == 4
    res = s.get_message("g", "T", 1, 1, 32)
    assert [decode_stored(b).body for b in res.buffers] == [b"a" * 10, b"b" * 20, b"c" * 30]
    assert sum(len(b) for b in res.buffers) == r.append.wrote_bytes
    assert len(s.query_message("T", "bk", 10, 0, 2**62)) == 3
    bad = batch("T", 1, [b"x"])
    bad.body = bad.body[:-1]
    assert (await s.put_messages(bad)).status is PutMessageStatus.MESSAGE_ILLEGAL
    await s.shutdown()


def _raw_batch(props: list[bytes]) -> bytes:
    """A batch body whose messages carry these properties bytes as given (not all end with \\x02)."""
    return b"".join(BATCH_HEAD.pack(BATCH_ENTRY_FIXED + 1 + len(p), 0, 0, 0, 1) + b"m" + SHORT.pack(len(p)) + p
                    for p in props)


async def test_batch_properties_are_appended_to_every_message(tmp_path):
    """Apache's CommitLog stores a batch message's properties followed by the batch's own (the header's
    with CLUSTER), with a \\x02 between them when the message's do not end with one; the consume queue's
    tag code and the index come from the stored properties, as a slave's dispatch reads them back."""
    s = await _store(tmp_path / "m", mapped_file_size_commit_log=1 << 16)
    own = [b"TAGS\x01ta\x02KEYS\x01k0\x02", b"TAGS\x01tb\x02KEYS\x01k1 kx\x02UNIQ_KEY\x01U1", b""]
    extra = b"origin\x01hdr\x02CLUSTER\x01C1\x02"
    b = batch("T", 1, [])
    b.body, b.properties, b.properties_string = _raw_batch(own), {"origin": "hdr", "CLUSTER": "C1"}, extra.decode()
    r = await s.put_messages(b)
    assert r.ok and r.append.msg_num == 3
    stored = [own[0] + extra, own[1] + b"\x02" + extra, extra]
    bufs = [bytes(x) for x in s.get_message("g", "T", 1, 0, 32).buffers]
    assert [x[-len(p) - 2:] for x, p in zip(bufs, stored)] == [SHORT.pack(len(p)) + p for p in stored]
    assert sum(len(x) for x in bufs) == r.append.wrote_bytes == s.max_phy_offset
    props = [decode_stored(x).properties for x in bufs]
    assert props == [{"TAGS": "ta", "KEYS": "k0", "origin": "hdr", "CLUSTER": "C1"},
                     {"TAGS": "tb", "KEYS": "k1 kx", "UNIQ_KEY": "U1", "origin": "hdr", "CLUSTER": "C1"},
                     {"origin": "hdr", "CLUSTER": "C1"}]
    cq = s.dispatcher.cq("T", 1).queue.files[0].mv
    assert [struct.unpack_from(">qiq", cq, 20 * i)[2] for i in range(3)] == [tags_code("ta"), tags_code("tb"), 0]
    assert [m.queue_offset for m in s.query_message("T", "kx", 8, 0, 2**62)] == [1]
    assert [m.queue_offset for m in s.query_message("T", "U1", 8, 0, 2**62)] == [1]
    assert s.query_message("T", "hdr", 8, 0, 2**62) == []
    # a slave dispatching the same bytes from its commitlog builds the same consume queue and index
    slave = await _store(tmp_path / "s", broker_role="SLAVE", mapped_file_size_commit_log=1 << 16)
    assert slave.append_to_commit_log(0, bytes(s.get_commit_log_data(0)))
    slave.dispatch_appended()
    assert bytes(slave.dispatcher.cq("T", 1).queue.files[0].mv[:60]) == bytes(cq[:60])
    s.index.write_header()
    slave.index.write_header()
    assert [bytes(f.mm[:]) for f in s.index.files] == [bytes(f.mm[:]) for f in slave.index.files]
    # a message whose properties with the batch's would not fit their 2-byte length is refused whole
    end = s.max_phy_offset
    b.body = _raw_batch([b"", b"a\x01" + b"v" * (MAX_PROPERTIES_LEN - len(extra) - 2)])
    assert (await s.put_messages(b)).status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    assert s.max_phy_offset == end
    b.body = _raw_batch([b"", b"a\x01" + b"v" * (MAX_PROPERTIES_LEN - len(extra) - 3)])
    assert (await s.put_messages(b)).ok
    await s.shutdown()
    await slave.shutdown()


async def test_illegal_messages(tmp_path):
    s = await _store(tmp_path, max_message_size=1000)
    assert (await s.put_message(inner(body=b"x" * 1001))).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert (await s.put_message(inner(body=b"x" * 900, P="v" * 4000))).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert (await s.put_message(inner(P="v" * 40000))).status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    assert s.max_phy_offset == 0
    await s.shutdown()
    assert (await s.put_message(inner())).status is PutMessageStatus.SERVICE_NOT_AVAILABLE


async def test_index_query_across_index_files(tmp_path):
    s = await _store(tmp_path, max_index_num=5)
    for i in range(20):
        await s.put_message(inner(KEYS=f"k{i % 4}", UNIQ_KEY=f"U{i}"))
    hits = s.query_message("T", "k1", 64, 0, 2**62)  # indexes the single messages that wait, first
    assert len(s.index.files) > 3
    assert sorted(m.queue_offset for m in hits if "k1" in m.keys) == [1, 5, 9, 13, 17]
    assert [m.queue_offset for m in s.query_message("T", "U7", 64, 0, 2**62)] == [7]
    assert s.query_message("Other", "k1", 64, 0, 2**62) == [] or all(
        m.topic == "T" for m in s.query_message("Other", "k1", 64, 0, 2**62))
    await s.shutdown()


def entries(s: MessageStore) -> int:
    """Index entries in all of the store's index files (entry 0 of each is unused)."""
    return sum(f.index_count - 1 for f in s.index.files)


async def test_single_messages_are_indexed_in_runs_and_before_any_reader(tmp_path):
    """build keeps single messages back (WAITING_LIMIT): the index flush, on its own thread, syncs none of
    them (its checkpoint time stays behind them), a query indexes them first, and the limit indexes
    them with no reader at all."""
    s = await _store(tmp_path)
    for i in range(WAITING_LIMIT - 1):
        await s.put_message(inner(KEYS=f"k{i}", UNIQ_KEY=f"U{i}"))
    assert s.index.flush() == 0
    assert [m.queue_offset for m in s.query_message("T", "k5", 64, 0, 2**62)] == [5]
    assert entries(s) == 2 * (WAITING_LIMIT - 1)
    for i in range(WAITING_LIMIT):
        await s.put_message(inner(KEYS=f"k{WAITING_LIMIT + i}"))
    assert entries(s) == 2 * (WAITING_LIMIT - 1) + WAITING_LIMIT
    assert s.index.flush() == s.index.files[-1].end_ts > 0
    await s.shutdown()


async def test_time_lookup_and_queue_metadata(tmp_path):
    now = [1000.0]
    s = MessageStore(tiny_config(tmp_path), clock=lambda: now[0])
    await s.start()
    for i in range(10):
        now[0] = 1000.0 + i
        await s.put_message(inner(queue_id=2))
    assert s.get_earliest_message_time("T", 2) == 1_000_000
    assert s.get_offset_in_queue_by_time("T", 2, 1_004_000) == 4
    assert s.get_offset_in_queue_by_time("T", 2, 1_004_500) == 5
    assert s.get_offset_in_queue_by_time("T", 2, 9_999_999_999) == 10
    assert s.get_message_store_timestamp("T", 2, 9) == 1_009_000
    assert s.get_commit_log_offset_in_queue("T", 2, 0) == 0
    assert s.topic_queue_ids("T") == [2]
    s.delete_topics({"T"})
    assert s.get_max_offset_in_queue("T", 2) == 0 and s.topic_queue_ids("T") == []
    await s.shutdown()


async def test_arrival_listener_and_schedule_tag_code(tmp_path):
    s = await _store(tmp_path)
    seen = []
    s.add_arrival_listener(lambda *a: seen.append(a))
    r = await s.put_message(inner(topic="SCHEDULE_TOPIC_XXXX", queue_id=2, DELAY="3"))
    assert seen == [("SCHEDULE_TOPIC_XXXX", 2, 1, r.append.store_timestamp + 10_000, r.append.store_timestamp)]
    await s.shutdown()


async def test_second_store_on_same_directory_refuses(tmp_path):
    s = await _store(tmp_path)
    other = MessageStore(tiny_config(tmp_path))
    with pytest.raises(StoreLockedError, match="locked"):
        await other.start()
    await s.shutdown()
    await other.start()
    await other.shutdown()


async def test_clean_reopen_keeps_everything_and_removes_abort(tmp_path):
    s = await _store(tmp_path)
    for i in range(40):
        await s.put_message(inner(queue_id=i % 3, KEYS=f"k{i}"))
    end = s.max_phy_offset
    await s.shutdown()
    assert not (tmp_path / "abort").exists()
    s = await _store(tmp_path)
    assert not s.loaded_abnormally and s.max_phy_offset == end
    assert [s.get_max_offset_in_queue("T", q) for q in range(3)] == [14, 13, 13]
    r = await s.put_message(inner(queue_id=0))
    assert r.append.logics_offset == 14 and r.append.wrote_offset >= end
    assert s.query_message("T", "k5", 8, 0, 2**62)[0].queue_offset == 1
    await s.shutdown()


async def test_slave_append_and_ha_data(tmp_path):
    master = await _store(tmp_path / "m")
    slave = await _store(tmp_path / "s", broker_role="SLAVE")
    for i in range(30):
        await master.put_message(inner(body=bytes([i]) * 150, queue_id=i % 2, TAGS=f"t{i % 3}", KEYS=f"k{i}"))
    await master.put_messages(batch("T", 1, [b"q" * 40] * 5, TAGS="bt", KEYS="bk"))
    await master.put_message(inner(topic="SCHEDULE_TOPIC_XXXX", queue_id=4, DELAY="5"))
    assert (await slave.put_message(inner())).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert not slave.append_to_commit_log(5, b"junk")
    while slave.max_phy_offset < master.max_phy_offset:
        data = master.get_commit_log_data(slave.max_phy_offset)
        chunk = bytes(data[:777])  # uneven chunks split entries
        assert slave.append_to_commit_log(slave.max_phy_offset, chunk)
        slave.dispatch_appended()
    assert bytes(master.get_commit_log_data(0)) == bytes(slave.get_commit_log_data(0))
    for q in range(2):
        assert slave.get_max_offset_in_queue("T", q) == 15 + 5 * q
        a = master.get_message("g", "T", q, 0, 32).buffers
        b = slave.get_message("g", "T", q, 0, 32).buffers
        assert [bytes(x) for x in a] == [bytes(x) for x in b]
    # inline dispatch (master) and commitlog-driven dispatch (slave) build identical queues and index
    for (topic, qid) in [("T", 0), ("T", 1), ("SCHEDULE_TOPIC_XXXX", 4)]:
        mf_m = master.dispatcher.cq(topic, qid).queue.files
        mf_s = slave.dispatcher.cq(topic, qid).queue.files
        assert [bytes(f.mv[:f.wrote]) for f in mf_m] == [bytes(f.mv[:f.wrote]) for f in mf_s]
    master.index.write_header()
    slave.index.write_header()
    im = [bytes(f.mm[:]) for f in master.index.files]
    assert im == [bytes(f.mm[:]) for f in slave.index.files]
    await master.shutdown()
    await slave.shutdown()


async def test_runtime_info_figures(tmp_path):
    s = await _store(tmp_path)
    await s.put_message(inner())
    info = s.runtime_info()
    assert info["commitLogMaxOffset"] == str(s.max_phy_offset) and info["putMessageTimesTotal"] == "1"
    assert info["dispatchBehindBytes"] == "0"
    await s.shutdown()


async def test_empty_slave_accepts_data_starting_at_a_later_file(tmp_path):
    master = await _store(tmp_path / "m")
    for _ in range(40):
        await master.put_message(inner(body=b"z" * 300))
    last = master.commitlog.queue.files[-1].start
    assert last > 0
    slave = await _store(tmp_path / "s", broker_role="SLAVE")
    assert not slave.append_to_commit_log(last + 20, b"x")
    assert slave.append_to_commit_log(last, bytes(master.get_commit_log_data(last)))
    slave.dispatch_appended()
    assert slave.max_phy_offset == master.max_phy_offset and slave.min_phy_offset == last
    assert slave.get_max_offset_in_queue("T", 0) == 40
    lo = slave.get_min_offset_in_queue("T", 0)
    assert lo > 0 and master.get_commit_log_offset_in_queue("T", 0, lo) >= last
    got, off = [], lo
    while off < 40:
        r = slave.get_message("g", "T", 0, off, 32)
        got += [bytes(b) for b in r.buffers]
        off = r.next_begin_offset
    want, off = [], lo
    while off < 40:
        r = master.get_message("g", "T", 0, off, 32)
        want += [bytes(b) for b in r.buffers]
        off = r.next_begin_offset
    assert got == want and len(got) == 40 - lo
    assert slave.get_commit_log_offset_in_queue("T", 0, lo) >= last > slave.get_commit_log_offset_in_queue(
        "T", 0, lo - 1)
    await master.shutdown()
    await slave.shutdown()


async def test_ipv6_hosts_are_stored_and_timestamps_found(tmp_path):
    now = [2000.0]
    s = MessageStore(tiny_config(tmp_path), clock=lambda: now[0])
    await s.start()
    msg = inner()
    msg.born_host, msg.store_host = ("2001:db8::1", 5555), ("2001:db8::2", 10911)
    r = await s.put_message(msg)
    assert r.ok and len(r.append.msg_id) == 56
    m = s.look_message_by_offset(r.append.wrote_offset)
    assert m.born_host == ("2001:db8::1", 5555) and m.store_host == ("2001:db8::2", 10911)
    assert m.sys_flag & 0x30 == 0x30
    assert s.get_message_store_timestamp("T", 0, 0) == 2_000_000
    assert s.get_offset_in_queue_by_time("T", 0, 2_000_000) == 0
    await s.shutdown()


async def test_transaction_types_and_consume_queue_dispatch(tmp_path):
    s = await _store(tmp_path)
    await s.put_message(inner(KEYS="normal"))
    prepared = inner(KEYS="prepared")
    prepared.sys_flag = 0x4
    rollback = inner(KEYS="rollback")
    rollback.sys_flag = 0xC
    commit = inner(KEYS="commit")
    commit.sys_flag = 0x8
    rp = await s.put_message(prepared)
    rr = await s.put_message(rollback)
    rc = await s.put_message(commit)
    assert rp.append.logics_offset == 0 and rr.append.logics_offset == 0  # no offset consumed
    assert rc.append.logics_offset == 1 and s.get_max_offset_in_queue("T", 0) == 2
    assert s.look_message_by_offset(rp.append.wrote_offset).queue_offset == 0
    assert len(s.query_message("T", "prepared", 8, 0, 2**62)) == 1
    assert s.query_message("T", "rollback", 8, 0, 2**62) == []
    await s.shutdown()


async def test_in_disk_check_follows_access_message_in_memory_max_ratio(tmp_path):
    for ratio, first_in_disk in ((40, False), (0, True)):
        s = MessageStore(tiny_config(tmp_path / str(ratio), access_message_in_memory_max_ratio=ratio))
        await s.start()
        for _ in range(2):
            await s.put_message(inner())
        assert s.check_in_disk_by_consume_offset("T", 0, 0) is first_in_disk
        assert s.check_in_disk_by_consume_offset("T", 0, 2) is False  # no such message
        assert s.check_in_disk_by_consume_offset("Other", 0, 0) is False
        await s.shutdown()
