"""The first heartbeat round of many new groups: each auto-created group is persisted through the coalesced
writes of subscriptionGroup.json (a few snapshots of the table for the burst, not one per group, which grew
as the square of the groups), and whoever waits for a group's write returns only once that group is on disk."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import orjson
import pytest

from mqtools.server.broker.subscription import SubscriptionGroupManager
from mqtools.server.store import config_manager

BURST = 1_000


class Counting(SubscriptionGroupManager):
    """Counts the snapshots (each encodes the whole table)."""

    encodes = 0

    def encode(self) -> bytes:
        self.encodes += 1
        return super().encode()


def groups_on_disk(path: Path) -> set[str]:
    return set(orjson.loads(path.read_bytes())["subscriptionGroupTable"])


async def test_a_burst_of_new_groups_costs_two_snapshots_and_each_waiter_means_on_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = threading.Event()
    real = config_manager.write_atomic

    def held(path: Path, data: bytes) -> None:  # the first write is still under way while the burst comes in
        gate.wait(10)
        real(path, data)

    monkeypatch.setattr(config_manager, "write_atomic", held)
    groups = Counting(tmp_path, clock=lambda: 1_700_000_000.0)
    names = [f"CG_BURST_{i:04d}" for i in range(BURST)]
    groups.find(names[0])
    first = asyncio.ensure_future(groups.until_written())
    for name in names[1:]:
        assert groups.find(name) is not None
    last = asyncio.ensure_future(groups.until_written())
    await asyncio.sleep(0)
    assert not first.done() and not last.done()  # nothing is answered before its write
    gate.set()
    await asyncio.wait_for(first, 10)
    assert names[0] in groups_on_disk(groups.path)
    await asyncio.wait_for(last, 10)
    assert set(names) <= groups_on_disk(groups.path)
    assert groups.encodes == 2  # the first group alone, then the other 999 in one snapshot
    assert groups.unwritten is None and not groups.dirty
    assert groups.data_version.counter == BURST

    again = Counting(tmp_path)
    assert again.load() and set(names) <= set(again.table)
    assert again.data_version == groups.data_version


async def test_an_update_during_a_burst_is_on_disk_when_its_waiter_returns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What UPDATE_AND_CREATE_SUBSCRIPTIONGROUP relies on (processors/durable.py): the write its change joined."""
    gate = threading.Event()
    real = config_manager.write_atomic
    monkeypatch.setattr(config_manager, "write_atomic", lambda path, data: (gate.wait(10), real(path, data)))
    groups = SubscriptionGroupManager(tmp_path)
    groups.find("CG_A")
    config = groups.find("CG_B")
    assert config is not None
    config.retry_max_times = 3
    groups.update(config)
    waiter = asyncio.ensure_future(groups.until_written())
    await asyncio.sleep(0)
    assert not waiter.done()
    gate.set()
    await asyncio.wait_for(waiter, 10)
    table = orjson.loads(groups.path.read_bytes())["subscriptionGroupTable"]
    assert table["CG_B"]["retryMaxTimes"] == 3 and "CG_A" in table
