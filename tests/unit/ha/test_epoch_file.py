"""EpochFileCache: the consistent point of two logs, truncation, and RocketMQ's checkpoint file layout."""

from __future__ import annotations

import zlib

import pytest

from mqtools.server.ha.epoch_file import FILE_NAME, EpochEntry, EpochFileCache, EpochFileError, render


def test_entries_end_where_the_next_starts_and_the_newest_at_the_given_end():
    cache = EpochFileCache(None, [(1, 0), (2, 500), (4, 900)])
    assert cache.entries(1200) == [EpochEntry(1, 0, 500), EpochEntry(2, 500, 900), EpochEntry(4, 900, 1200)]
    assert cache.entry_of_offset(600) == EpochEntry(2, 500, 900)
    assert cache.last_epoch == 4


def test_an_old_master_agrees_with_the_new_one_up_to_where_their_epochs_part():
    # the old master wrote epoch 2 up to 1000; the new master took over at 800 with epoch 3
    old = EpochFileCache(None, [(1, 0), (2, 500)])
    master = EpochFileCache(None, [(1, 0), (2, 500), (3, 800)]).entries(1500)
    assert old.find_consistent_point(1000, master) == 800
    # a slave that is merely behind agrees up to its own end
    assert EpochFileCache(None, [(1, 0), (2, 500)]).find_consistent_point(700, master) == 700
    # the same epoch number started elsewhere is not agreement: fall back to the older epoch
    assert EpochFileCache(None, [(1, 0), (2, 600)]).find_consistent_point(900, master) == 500
    assert EpochFileCache(None, [(7, 0)]).find_consistent_point(10, master) == -1


def test_append_only_moves_forward_and_truncations_drop_what_they_say(tmp_path):
    cache = EpochFileCache(tmp_path / FILE_NAME)
    assert cache.append(1, 0) and cache.append(3, 400)
    assert not cache.append(3, 500) and not cache.append(4, 100)
    cache.append(5, 900)
    cache.truncate_from_offset(900)
    assert [e.epoch for e in cache.entries()] == [1, 3]
    cache.truncate_from_epoch(3)
    assert [e.epoch for e in cache.entries()] == [1]
    cache.append(6, 1000)
    cache.truncate_before(1000)
    assert [(e.epoch, e.start_offset) for e in cache.entries()] == [(6, 1000)]


def test_the_file_is_rocketmqs_checkpoint_layout_and_survives_a_reload(tmp_path):
    cache = EpochFileCache(tmp_path / FILE_NAME)
    cache.append(1, 0)
    cache.append(2, 4096)
    text = (tmp_path / FILE_NAME).read_text()
    block = "1-0\n2-4096\n"
    assert text == f"2\n{zlib.crc32(block.encode()) & 0x7FFFFFFF}\n{block}"
    assert EpochFileCache.load(tmp_path).entries() == cache.entries()


def test_a_damaged_file_falls_back_to_its_backup_and_both_damaged_is_an_error(tmp_path):
    cache = EpochFileCache(tmp_path / FILE_NAME)
    cache.append(1, 0)
    cache.append(2, 10)  # the backup now holds [(1, 0)]
    (tmp_path / FILE_NAME).write_text(render([(1, 0), (2, 10)]).replace("2-10", "2-11"))  # CRC no longer fits
    assert [e.epoch for e in EpochFileCache.load(tmp_path).entries()] == [1]
    (tmp_path / (FILE_NAME + ".bak")).write_text("x")
    with pytest.raises(EpochFileError):
        EpochFileCache.load(tmp_path)
    assert EpochFileCache.load(tmp_path / "fresh").entries() == []
