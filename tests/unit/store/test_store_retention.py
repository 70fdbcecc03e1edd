"""Retention and disk-full behaviour with tiny files, a fake clock and a fake disk."""

from __future__ import annotations

import os
from datetime import datetime

from unit.store.store_helpers import inner, tiny_config

from mqtools.server.store.cleanup import is_time_to_delete
from mqtools.server.store.message_store import MessageStore
from mqtools.server.store.results import GetMessageStatus, PutMessageStatus

HOUR = 3600.0


class FakeDisk:
    def __init__(self, ratio: float = 0.10) -> None:
        self.ratio = ratio

    def __call__(self, _path) -> float:
        return self.ratio


def _at_hour(hour: int, day: int = 10) -> float:
    return datetime(2026, 3, day, hour, 30).timestamp()


async def _store(tmp_path, clock, disk, **kw) -> MessageStore:
    s = MessageStore(tiny_config(tmp_path, file_reserved_time=48, delete_when="04", **kw),
                     clock=lambda: clock[0], disk_ratio=disk)
    await s.start()
    return s


async def _fill(s: MessageStore, n: int) -> None:
    for i in range(n):
        assert (await s.put_message(inner(body=bytes([i % 256]) * 300, queue_id=i % 2, KEYS=f"k{i}"))).ok


def _age_files(root, when: float) -> None:
    for p in (root / "commitlog").iterdir():
        os.utime(p, (when, when))


def test_delete_when_hours():
    assert is_time_to_delete("04", _at_hour(4))
    assert not is_time_to_delete("04", _at_hour(5))
    assert is_time_to_delete("03;05", _at_hour(5))


async def test_expired_files_deleted_only_at_delete_when_hour(tmp_path):
    clock = [_at_hour(10)]
    s = await _store(tmp_path, clock, FakeDisk())
    await _fill(s, 60)
    n_files = len(s.commitlog.queue.files)
    held = s.get_message("g", "T", 0, 0, 4)  # zero-copy slices of the first file, still referenced
    held_bytes = [bytes(b) for b in held.buffers]
    _age_files(tmp_path, _at_hour(10) - 100 * HOUR)
    assert await s.clean_once(_at_hour(10)) == 0  # expired, but not the delete hour
    deleted = await s.clean_once(_at_hour(4, day=11))
    assert deleted == min(n_files - 1, 10)
    assert len(s.commitlog.queue.files) == n_files - deleted  # the last file is never deleted
    assert [bytes(b) for b in held.buffers] == held_bytes  # readers keep their mapping alive
    min_phy = s.min_phy_offset
    for q in range(2):
        lo = s.get_min_offset_in_queue("T", q)
        assert s.get_commit_log_offset_in_queue("T", q, lo) >= min_phy
        assert lo == 0 or s.get_commit_log_offset_in_queue("T", q, lo - 1) < min_phy
        r = s.get_message("g", "T", q, 0, 32)
        assert r.status is GetMessageStatus.OFFSET_TOO_SMALL and r.next_begin_offset == lo
        assert s.get_message("g", "T", q, lo, 32).status is GetMessageStatus.FOUND
    assert s.get_max_offset_in_queue("T", 0) == 30  # max offsets survive cleaning
    await s.shutdown()


async def test_young_files_are_kept_and_walk_stops_at_first_young(tmp_path):
    clock = [_at_hour(4)]
    s = await _store(tmp_path, clock, FakeDisk())
    await _fill(s, 40)
    files = [mf.path for mf in s.commitlog.queue.files]
    for p in files:
        os.utime(p, (_at_hour(4), _at_hour(4)))
    old = _at_hour(4) - 100 * HOUR
    os.utime(files[0], (old, old))
    os.utime(files[2], (old, old))
    assert await s.clean_once(_at_hour(4)) == 1
    assert s.commitlog.queue.files[0].path == files[1]
    await s.shutdown()


async def test_disk_usage_over_ratio_deletes_expired_files_outside_the_hour(tmp_path):
    clock = [_at_hour(12)]
    disk = FakeDisk(0.80)
    s = await _store(tmp_path, clock, disk)
    await _fill(s, 40)
    _age_files(tmp_path, _at_hour(12) - 100 * HOUR)
    assert await s.clean_once(_at_hour(12)) > 0
    await s.shutdown()


async def test_forced_cleaning_ignores_age_and_disk_full_refuses_puts(tmp_path):
    clock = [_at_hour(12)]
    disk = FakeDisk(0.87)
    s = await _store(tmp_path, clock, disk)
    await _fill(s, 40)
    _age_files(tmp_path, _at_hour(12))  # young files
    assert await s.clean_once(_at_hour(12)) > 0  # above 85 %: deleted regardless of age
    assert not s.is_disk_full
    disk.ratio = 0.95
    await s.clean_once(_at_hour(12))
    assert s.is_disk_full
    r = await s.put_message(inner())
    assert r.status is PutMessageStatus.SERVICE_NOT_AVAILABLE and "disk full" in r.remark
    disk.ratio = 0.50
    await s.clean_once(_at_hour(12))
    assert not s.is_disk_full and (await s.put_message(inner())).ok
    await s.shutdown()


async def test_index_files_below_min_offset_are_deleted(tmp_path):
    clock = [_at_hour(4)]
    s = await _store(tmp_path, clock, FakeDisk(), max_index_num=4)
    await _fill(s, 40)
    s.index.write_header()  # indexes the single messages that wait
    before = len(s.index.files)
    _age_files(tmp_path, _at_hour(4) - 100 * HOUR)
    await s.clean_once(_at_hour(4))
    assert len(s.index.files) < before
    assert all(f.end_phy >= s.min_phy_offset for f in s.index.files)
    await s.shutdown()


async def test_above_the_warning_level_young_files_stay_unless_cleaning_forcibly_is_enabled(tmp_path):
    """Apache's cleanAtOnce is cleanFileForciblyEnable and cleanImmediately: with the flag off, a disk above 90 %
    refuses puts but loses no file before its time (every young file but the last went, 10 a pass)."""
    clock = [_at_hour(12)]
    disk = FakeDisk(0.95)
    s = await _store(tmp_path, clock, disk, clean_file_forcibly_enable=False)
    await _fill(s, 40)
    _age_files(tmp_path, _at_hour(12))  # young files
    assert await s.clean_once(_at_hour(12)) == 0
    assert s.is_disk_full
    _age_files(tmp_path, _at_hour(12) - 100 * HOUR)
    assert await s.clean_once(_at_hour(12)) > 0  # expired ones still go: the disk is above diskMaxUsedSpaceRatio
    await s.shutdown()


async def test_a_disk_that_cannot_be_measured_loses_only_expired_files(tmp_path):
    """A vanished or unmounted directory measures -1: Apache deletes only files past their reserved time; mq took
    it as a full disk and deleted every young file but the last, the store then forgetting data still on disk."""
    clock = [_at_hour(12)]
    s = await _store(tmp_path, clock, FakeDisk(-1.0))
    await _fill(s, 40)
    files = [mf.path for mf in s.commitlog.queue.files]
    _age_files(tmp_path, _at_hour(12))
    old = _at_hour(12) - 100 * HOUR
    os.utime(files[0], (old, old))
    assert await s.clean_once(_at_hour(12)) == 1
    assert s.commitlog.queue.files[0].path == files[1] and not s.is_disk_full
    await s.shutdown()


async def test_files_are_unmapped_and_unlinked_off_the_loop(tmp_path, monkeypatch):
    """Unmapping and unlinking a written 1 GiB file takes about a quarter of a second: ten of them on the loop held
    every request for 2.5 s."""
    import threading

    from mqtools.server.store.mapped_file import MappedFile

    clock = [_at_hour(4)]
    s = await _store(tmp_path, clock, FakeDisk(), delete_commit_log_files_interval=0)
    await _fill(s, 40)
    _age_files(tmp_path, _at_hour(4) - 100 * HOUR)
    loop_thread, where = threading.get_ident(), []
    destroy = MappedFile.destroy

    def recorded(self) -> None:
        where.append(threading.get_ident())
        destroy(self)

    monkeypatch.setattr(MappedFile, "destroy", recorded)
    deleted = await s.clean_once(_at_hour(4))
    assert deleted > 1 and len(where) == deleted and loop_thread not in where
    assert not any(p.exists() for p in (tmp_path / "commitlog").iterdir() if p not in
                   {mf.path for mf in s.commitlog.queue.files})
    await s.shutdown()
