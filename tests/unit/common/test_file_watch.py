"""FileWatch: a change is reported once it has settled for a poll, deletions are not changes, a rewrite of the
same size with its mtime set back is still seen, and the owner's own writes are adopted."""

from __future__ import annotations

import os
from pathlib import Path

from mqtools.common.file_watch import FileWatch


def test_a_change_is_reported_once_it_has_settled_for_a_poll(tmp_path: Path) -> None:
    f = tmp_path / "cert.pem"
    f.write_text("one")
    watch = FileWatch([f])
    assert watch.poll() == []
    f.write_text("two, longer")
    assert watch.poll() == []  # maybe still being written
    assert watch.poll() == [f]
    watch.loaded()
    assert watch.poll() == []


def test_a_file_written_again_between_polls_waits_until_it_stays(tmp_path: Path) -> None:
    f = tmp_path / "key.pem"
    f.write_text("one")
    watch = FileWatch([f])
    f.write_text("two")
    assert watch.poll() == []
    f.write_text("three, longer")
    assert watch.poll() == []
    assert watch.poll() == [f]


def test_a_missing_file_is_not_a_change_and_its_replacement_is(tmp_path: Path) -> None:
    f = tmp_path / "ca.pem"
    f.write_text("one")
    watch = FileWatch([f])
    f.unlink()
    assert watch.poll() == [] and watch.poll() == []
    f.write_text("new CA")
    watch.poll()
    assert watch.poll() == [f]


def test_the_same_size_with_its_mtime_set_back_is_seen(tmp_path: Path) -> None:
    f = tmp_path / "cert.pem"
    f.write_text("aaaa")
    before = os.stat(f)
    watch = FileWatch([f])
    f.write_text("bbbb")  # same inode, same size
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))  # as cp -p leaves it
    watch.poll()
    assert watch.poll() == [f]


def test_adopt_takes_the_files_as_they_are_now(tmp_path: Path) -> None:
    f = tmp_path / "plain_acl.yml"
    f.write_text("one")
    watch = FileWatch([f, f])
    assert watch.paths == (f,)
    f.write_text("written by the owner itself")
    watch.adopt()
    assert watch.poll() == [] and watch.poll() == []
