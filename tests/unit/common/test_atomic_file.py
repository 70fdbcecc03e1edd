"""write_atomic: a crash at any step leaves the file there, old or new (the previous version moved to `.bak` first
left, until the new one's rename, no file at all: read as empty, every ACL 2.0 user and rule was gone)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from mqtools.common import atomic_file
from mqtools.common.atomic_file import write_atomic


def test_the_file_is_there_at_every_step_and_the_previous_version_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "users.json"
    write_atomic(path, b"v1")
    seen: list[bytes] = []
    real = os.replace

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        seen.append(path.read_bytes())  # a crash here would leave what is read now
        real(src, dst)

    monkeypatch.setattr(atomic_file.os, "replace", replace)
    write_atomic(path, b"v2")
    assert seen and set(seen) == {b"v1"}
    assert path.read_bytes() == b"v2" and (tmp_path / "users.json.bak").read_bytes() == b"v1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["users.json", "users.json.bak"]


def test_without_hard_links_the_previous_version_is_moved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.json"
    write_atomic(path, b"v1")

    def no_links(*_: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(atomic_file.os, "link", no_links)
    write_atomic(path, b"v2")
    assert path.read_bytes() == b"v2" and (tmp_path / "t.json.bak").read_bytes() == b"v1"


def test_concurrent_writers_leave_no_staging_file(tmp_path: Path) -> None:
    """Two writers linking the same version over `.bak`: rename does nothing when both names are one file, and the
    second's staging link was left beside it (the hostile-input test's UPDATE_BROKER_CONFIG flood found two)."""
    path = tmp_path / "broker.properties"
    write_atomic(path, b"v0")
    start = threading.Barrier(4)

    def writer(n: int) -> None:
        start.wait()
        for i in range(50):
            write_atomic(path, f"{n}-{i}".encode())

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broker.properties", "broker.properties.bak"]
