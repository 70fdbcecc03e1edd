"""ConfigManager's rules, tested once for topics, groups, consumer offsets and delay offsets:
load falls back to the .bak, persist keeps the previous version as .bak, newest snapshot wins,
write errors are raised or logged (never lost), the periodic persist writes only changes."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path

import pytest
from support.clientsupport import until

from mqtools.server.store import config_manager
from mqtools.server.store.config_manager import ConfigManager, loads


class Table(ConfigManager):
    """The smallest manager: one dict, written as JSON."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.value: dict[str, int] = {}

    def set(self, key: str, value: int) -> None:
        self.value[key] = value
        self.dirty = True

    def encode(self) -> bytes:
        return json.dumps({"table": self.value}).encode()

    def decode(self, data: bytes) -> None:
        self.value = dict(json.loads(data)["table"])


def on_disk(path: Path) -> dict[str, int]:
    return json.loads(path.read_bytes())["table"]


def test_load_without_file_or_backup_is_false_and_leaves_the_table(tmp_path: Path) -> None:
    t = Table(tmp_path / "t.json")
    t.value = {"kept": 1}
    assert not t.load()
    assert t.value == {"kept": 1}


@pytest.mark.parametrize("damage", ["missing", "empty", "blank", "torn", "wrong shape"])
def test_load_falls_back_to_the_backup(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "t.json"
    t = Table(path)
    t.set("a", 1)
    t.persist()
    t.set("a", 2)
    t.persist()
    assert on_disk(path.with_name("t.json.bak")) == {"a": 1}
    damaged = {"empty": b"", "blank": b" \n\t", "torn": b'{"table": {"a"', "wrong shape": b"[1, 2]"}
    if damage == "missing":
        path.unlink()
    else:
        path.write_bytes(damaged[damage])
    again = Table(path)
    assert again.load() and again.value == {"a": 1}


def test_persist_is_atomic_and_keeps_the_previous_version(tmp_path: Path) -> None:
    path = tmp_path / "config" / "t.json"  # the directory is created on first write
    t = Table(path)
    t.set("a", 1)
    t.persist()
    assert on_disk(path) == {"a": 1} and not path.with_name("t.json.bak").exists()
    t.set("a", 2)
    t.persist()
    assert on_disk(path) == {"a": 2} and on_disk(path.with_name("t.json.bak")) == {"a": 1}
    assert sorted(p.name for p in path.parent.iterdir()) == ["t.json", "t.json.bak"]  # no temp files left


def test_an_older_snapshot_never_overwrites_a_newer_one(tmp_path: Path) -> None:
    t = Table(tmp_path / "t.json")
    t.set("a", 1)
    old = t.snapshot()
    t.set("a", 2)
    new = t.snapshot()
    assert t.write(*new)
    assert not t.write(*old)  # the thread that took the older snapshot finishes last
    assert on_disk(t.path) == {"a": 2}


def test_the_same_snapshot_is_written_once_so_the_backup_stays_distinct(tmp_path: Path) -> None:
    t = Table(tmp_path / "t.json")
    t.set("a", 1)
    t.persist()
    t.set("a", 2)
    snap = t.snapshot()
    assert t.write(*snap)
    assert not t.write(*snap)
    assert on_disk(t.path) == {"a": 2} and on_disk(t.path.with_name("t.json.bak")) == {"a": 1}


def test_out_of_order_writes_from_many_threads_leave_the_newest(tmp_path: Path) -> None:
    t = Table(tmp_path / "t.json")
    snaps = []
    for i in range(40):
        t.set("n", i)
        snaps.append(t.snapshot())
    threads = [threading.Thread(target=t.write, args=s) for s in reversed(snaps)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert on_disk(t.path) == {"n": 39}


def _failing_writes(monkeypatch: pytest.MonkeyPatch, failures: int) -> list[bytes]:
    """write_atomic raises OSError ``failures`` times, then writes; returns what was attempted."""
    real = config_manager.write_atomic
    attempts: list[bytes] = []

    def flaky(path: Path, data: bytes) -> None:
        attempts.append(data)
        if len(attempts) <= failures:
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(config_manager, "write_atomic", flaky)
    return attempts


def test_a_failed_write_raises_and_does_not_block_a_retry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _failing_writes(monkeypatch, 1)
    t = Table(tmp_path / "t.json")
    t.set("a", 1)
    snap = t.snapshot()
    with pytest.raises(OSError, match="No space"):
        t.write(*snap)
    assert t.write(*snap)  # the failed sequence was not recorded as written
    assert on_disk(t.path) == {"a": 1}


async def test_persist_soon_writes_in_a_thread_and_logs_a_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    attempts = _failing_writes(monkeypatch, 1)
    t = Table(tmp_path / "t.json")
    t.set("a", 1)
    with caplog.at_level(logging.ERROR, logger=config_manager.__name__):
        t.persist_soon()
        assert not t.dirty
        await until(lambda: t.dirty, 1.0, "the failed write")
    assert t.dirty and "No space" in caplog.text  # logged, and left for the next persist
    t.set("a", 2)
    t.persist_soon()
    await until(t.path.exists, 1.0, "the next change's write")
    assert on_disk(t.path) == {"a": 2} and len(attempts) == 2


async def test_until_written_waits_for_the_latest_change_and_a_cancelled_waiter_does_not_stop_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the broker's answers to config changes wait for (processors/durable.py)."""
    gate = threading.Event()
    real = config_manager.write_atomic

    def held(path: Path, data: bytes) -> None:
        gate.wait(5)
        real(path, data)

    monkeypatch.setattr(config_manager, "write_atomic", held)
    t = Table(tmp_path / "t.json")
    assert t.unwritten is None
    t.set("a", 1)
    t.persist_soon()
    t.set("a", 2)
    t.persist_soon()
    first, second = asyncio.ensure_future(t.until_written()), asyncio.ensure_future(t.until_written())
    await asyncio.sleep(0.05)
    assert not first.done() and not second.done() and not t.path.exists()
    first.cancel()
    gate.set()
    await asyncio.wait_for(second, 5)
    assert on_disk(t.path) == {"a": 2} and t.unwritten is None


async def test_changes_made_while_a_write_runs_share_the_next_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A burst of changes (a thousand groups created at once) costs a few snapshots of the whole table, not
    one each: that was quadratic. Each change's waiter still returns only once it is on disk."""
    gate = threading.Event()
    real = config_manager.write_atomic
    written: list[dict[str, int]] = []

    def held(path: Path, data: bytes) -> None:
        gate.wait(5)
        real(path, data)
        written.append(on_disk(path))

    monkeypatch.setattr(config_manager, "write_atomic", held)
    t = Table(tmp_path / "t.json")
    t.set("k0", 0)
    t.persist_soon()
    first = asyncio.ensure_future(t.until_written())
    for i in range(1, 100):
        t.set(f"k{i}", i)
        t.persist_soon()
    last = asyncio.ensure_future(t.until_written())
    await asyncio.sleep(0.05)
    assert not first.done() and not last.done()
    gate.set()
    await asyncio.wait_for(first, 5)
    await asyncio.wait_for(last, 5)
    assert len(written) == 2 and written[0] == {"k0": 0} and len(written[1]) == 100
    assert t.unwritten is None and not t.dirty


async def test_a_failed_write_is_tried_again_without_another_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A topic created while the disk was full: on disk once there is room, not only at the next change."""
    attempts = _failing_writes(monkeypatch, 1)
    monkeypatch.setattr(config_manager, "RETRY_WRITE_S", 0.01)
    t = Table(tmp_path / "t.json")
    t.set("a", 1)
    t.persist_soon()
    await until(t.path.exists, 2.0, "the write tried again")
    assert on_disk(t.path) == {"a": 1} and len(attempts) == 2 and not t.dirty


async def test_until_written_returns_after_a_failed_write_which_stays_for_the_next_persist(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _failing_writes(monkeypatch, 1)
    t = Table(tmp_path / "t.json")
    t.set("a", 1)
    t.persist_soon()
    await asyncio.wait_for(t.until_written(), 5)
    assert t.dirty and t.unwritten is None and not t.path.exists()


def test_persist_soon_outside_a_loop_writes_now(tmp_path: Path) -> None:
    t = Table(tmp_path / "t.json")
    t.set("a", 1)
    t.persist_soon()
    assert on_disk(t.path) == {"a": 1}


async def test_persist_loop_writes_changes_only_and_retries_failures(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    attempts = _failing_writes(monkeypatch, 1)
    t = Table(tmp_path / "t.json")
    task = asyncio.create_task(t.persist_loop(0.01))
    try:
        await asyncio.sleep(0.05)
        assert attempts == []  # nothing changed: nothing written
        with caplog.at_level(logging.ERROR, logger=config_manager.__name__):
            t.set("a", 1)
            await until(t.path.exists, 2.0, "the persist loop's retry")
        assert "No space" in caplog.text and len(attempts) == 2  # failed, logged, retried
        assert on_disk(t.path) == {"a": 1} and not t.dirty
        await asyncio.sleep(0.05)
        assert len(attempts) == 2
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def test_loads_reads_fastjson_unquoted_integer_keys() -> None:
    text = '{\n\t"offsetTable":{\n\t\t"T@g":{0:12,1:3,10:7},\n\t\t"a,1:b@g":{"2":5}\n\t}\n}'
    data = loads(text)
    assert data["offsetTable"]["T@g"] == {"0": 12, "1": 3, "10": 7}
    assert "a,1:b@g" in data["offsetTable"]  # a string key that looks like one is left alone
    assert loads(b'{"offsetTable":{-1:2}}') == {"offsetTable": {"-1": 2}}
