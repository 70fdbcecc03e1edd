"""Durability paths: group commit, flush timeout, WAIT=false, the SYNC_MASTER ha_hook seam, async flush."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from unit.store.store_helpers import batch, inner, tiny_config

from mqtools.server.store.message_store import MessageStore
from mqtools.server.store.results import PutMessageResult, PutMessageStatus


async def _store(tmp_path, **kw) -> MessageStore:
    s = MessageStore(tiny_config(tmp_path, mapped_file_size_commit_log=1 << 20, **kw))
    await s.start()
    return s


async def test_group_commit_shares_fsyncs_between_concurrent_puts(tmp_path):
    s = await _store(tmp_path, flush_disk_type="SYNC_FLUSH")
    results = await asyncio.gather(*(s.put_message(inner(queue_id=i % 4)) for i in range(200)))
    assert all(r.ok for r in results)
    assert s.commitlog.flushed_where == s.max_phy_offset
    assert 1 <= s._group_commit.fsyncs < 100
    await s.shutdown()


async def test_slow_disk_reports_flush_disk_timeout_but_keeps_the_message(tmp_path):
    s = await _store(tmp_path, flush_disk_type="SYNC_FLUSH", sync_flush_timeout=50)
    gate = threading.Event()
    real = s.commitlog.flush

    def stuck_flush(least_pages=0):
        gate.wait(5)
        return real(least_pages)

    s.commitlog.flush = stuck_flush
    r = await s.put_message(inner())
    assert r.status is PutMessageStatus.FLUSH_DISK_TIMEOUT and r.append is not None
    assert s.look_message_by_offset(r.append.wrote_offset) is not None
    gate.set()
    await asyncio.sleep(0.05)
    s.commitlog.flush = real
    # the disk is healthy again: the next put is flushed (a loaded machine's fsync may take more than the 50 ms
    # that made the stuck one time out, so the timeout goes back to the default's)
    s.config.sync_flush_timeout = 5000
    assert (await s.put_message(inner())).ok
    await s.shutdown()


async def test_wait_false_does_not_wait_for_the_flush(tmp_path):
    s = await _store(tmp_path, flush_disk_type="SYNC_FLUSH", sync_flush_timeout=50)
    gate = threading.Event()
    real = s.commitlog.flush
    s.commitlog.flush = lambda least_pages=0: (gate.wait(5), real(least_pages))[1]
    r = await s.put_message(inner(WAIT="false"))
    assert r.ok
    gate.set()
    await asyncio.sleep(0.05)
    s.commitlog.flush = real
    await s.shutdown()


class FakeHa:
    def __init__(self, status: PutMessageStatus) -> None:
        self.status = status
        self.calls: list[tuple[int, float]] = []
        self.refusal: str | None = None

    def refuse_put(self) -> str | None:
        return self.refusal

    def when_replicated(self, end_offset: int, timeout_s: float, done: Callable[[PutMessageStatus], None]) -> None:
        self.calls.append((end_offset, timeout_s))
        done(self.status)


async def test_sync_master_waits_for_the_ha_hook(tmp_path):
    s = await _store(tmp_path, broker_role="SYNC_MASTER")
    s.ha_hook = FakeHa(PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
    r = await s.put_message(inner())
    assert r.status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
    assert s.ha_hook.calls == [(r.append.end_offset, 3.0)]
    assert (await s.put_message(inner(WAIT="false"))).ok
    s.ha_hook.status = PutMessageStatus.PUT_OK
    assert (await s.put_message(inner())).ok and len(s.ha_hook.calls) == 2
    await s.shutdown()


async def test_a_refusing_ha_hook_stops_a_sync_master_put_before_it_is_written(tmp_path):
    s = await _store(tmp_path, broker_role="SYNC_MASTER")
    s.ha_hook = FakeHa(PutMessageStatus.PUT_OK)
    s.ha_hook.refusal = "in-sync replicas not enough"
    before = s.max_phy_offset
    r = await s.put_message(inner())
    assert r.status is PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH and r.remark == "in-sync replicas not enough"
    assert s.max_phy_offset == before and s.ha_hook.calls == []
    await s.shutdown()


async def test_async_master_never_waits_for_slaves(tmp_path):
    s = await _store(tmp_path)
    s.ha_hook = FakeHa(PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
    assert (await s.put_message(inner())).ok and s.ha_hook.calls == []
    await s.shutdown()


async def test_async_flush_syncs_in_the_background(tmp_path):
    s = await _store(tmp_path, flush_commit_log_least_pages=0, flush_interval_commit_log=10)
    await s.put_message(inner())
    for _ in range(200):
        if s.commitlog.flushed_where == s.max_phy_offset:
            break
        await asyncio.sleep(0.01)
    assert s.commitlog.flushed_where == s.max_phy_offset
    await s.shutdown()


async def test_a_put_that_waits_for_nothing_is_answered_inline(tmp_path):
    """ASYNC_FLUSH, or WAIT=false under SYNC_FLUSH: the inline put is the result itself (the send path
    answers without a coroutine); SYNC_FLUSH with WAIT: an awaitable that ends after the flush."""
    s = await _store(tmp_path / "async")
    for put in (s.put_message_inline(inner()), s.put_messages_inline(batch("T", 0, [b"a", b"b"]))):
        assert isinstance(put, PutMessageResult) and put.ok
    await s.shutdown()
    s = await _store(tmp_path / "sync", flush_disk_type="SYNC_FLUSH")
    assert isinstance(s.put_message_inline(inner(WAIT="false")), PutMessageResult)
    for put in (s.put_message_inline(inner()), s.put_messages_inline(batch("T", 0, [b"c"]))):
        assert not isinstance(put, PutMessageResult)
        r = await put
        assert r.ok and s.commitlog.flushed_where >= r.append.wrote_offset + r.append.wrote_bytes
    await s.shutdown()
