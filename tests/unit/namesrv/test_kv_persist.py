"""kvConfig.json is written by one writer, latest state only: pipelined PUT/DELETE_KV_CONFIG requests share
writes instead of each holding a snapshot of the whole table (200 PUTs on a 1 MB table held 200 MB), and each
request is still answered only once a write that includes its change is on disk (or failed)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.server.namesrv import app
from mqtools.server.namesrv.app import NamesrvController
from mqtools.server.namesrv.config import NamesrvConfig
from mqtools.server.namesrv.kv_config import KVConfigManager


class GatedDisk:
    """write_atomic that holds every write until the test opens the gate, and records what reached the disk."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.written: list[dict] = []
        self.fail: OSError | None = None

    def __call__(self, path: Path, data: bytes) -> None:
        assert self.gate.wait(10)
        if self.fail is not None:
            raise self.fail
        self.written.append(orjson.loads(data)["configTable"])


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[GatedDisk]:
    disk = GatedDisk()
    monkeypatch.setattr(app, "write_atomic", disk)
    yield disk
    disk.gate.set()  # a test that failed early leaves no thread waiting


def controller(tmp_path: Path) -> NamesrvController:
    return NamesrvController(NamesrvConfig(kv_config_path=str(tmp_path / "kv.json"), listen_port=0),
                             clock=lambda: 5_000)


@pytest.fixture
def ctl(tmp_path: Path) -> NamesrvController:
    return controller(tmp_path)


def put(ctl: NamesrvController, key: str) -> asyncio.Future[RemotingCommand]:
    req = RemotingCommand.request(RequestCode.PUT_KV_CONFIG, {"namespace": "NS", "key": key, "value": "v"})
    return asyncio.ensure_future(ctl.processor.put_kv_config(None, req))  # type: ignore[arg-type]


async def test_pipelined_puts_share_writes_and_each_waits_for_its_change_on_disk(
        tmp_path: Path, disk: GatedDisk, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshots = 0
    snapshot = KVConfigManager.snapshot

    def counted(kv: KVConfigManager) -> bytes:
        nonlocal snapshots
        snapshots += 1
        return snapshot(kv)

    monkeypatch.setattr(KVConfigManager, "snapshot", counted)
    ctl = controller(tmp_path)
    on_disk_when_answered: dict[str, bool] = {}
    pending = []
    for i in range(50):
        key = f"k{i}"
        fut = put(ctl, key)
        fut.add_done_callback(lambda _f, key=key: on_disk_when_answered.__setitem__(
            key, bool(disk.written) and key in disk.written[-1].get("NS", {})))
        pending.append(fut)
        await asyncio.sleep(0)  # each request runs up to its wait, as pipelined requests do
    assert snapshots == 1 and not any(f.done() for f in pending)  # one write in flight, the rest wait for the next
    disk.gate.set()
    assert all(r.code == ResponseCode.SUCCESS for r in await asyncio.gather(*pending))
    assert len(disk.written) == 2 and snapshots == 2
    assert disk.written[-1] == {"NS": {f"k{i}": "v" for i in range(50)}}
    assert on_disk_when_answered == {f"k{i}": True for i in range(50)}


async def test_a_failed_write_fails_every_request_waiting_on_it_and_the_next_write_goes_through(
        ctl: NamesrvController, disk: GatedDisk) -> None:
    disk.fail = OSError(28, "No space left on device")
    first, second = put(ctl, "a"), put(ctl, "b")
    disk.gate.set()
    for outcome in await asyncio.gather(first, second, return_exceptions=True):
        assert isinstance(outcome, OSError)
    disk.fail = None
    assert (await put(ctl, "c")).code == ResponseCode.SUCCESS
    assert disk.written == [{"NS": {"a": "v", "b": "v", "c": "v"}}]


async def test_a_cancelled_request_does_not_cancel_the_write_others_wait_for(
        ctl: NamesrvController, disk: GatedDisk) -> None:
    first = put(ctl, "a")
    await asyncio.sleep(0)
    second, third = put(ctl, "b"), put(ctl, "c")
    await asyncio.sleep(0)
    second.cancel()
    disk.gate.set()
    assert (await first).code == ResponseCode.SUCCESS and (await third).code == ResponseCode.SUCCESS
    assert disk.written[-1] == {"NS": {"a": "v", "b": "v", "c": "v"}}


async def test_shutdown_lets_the_pending_write_finish(ctl: NamesrvController, disk: GatedDisk) -> None:
    first = put(ctl, "a")
    await asyncio.sleep(0)
    second = put(ctl, "b")
    await asyncio.sleep(0)
    disk.gate.set()
    await ctl.shutdown()
    assert disk.written[-1] == {"NS": {"a": "v", "b": "v"}}
    await asyncio.gather(first, second)
