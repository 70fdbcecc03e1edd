"""A controller that has just started has no heartbeat from a healthy master yet: its first scan for
inactive masters must not replace it. Only once it has been up for the set's heartbeat timeout does a master
it never heard from count as dead."""

from __future__ import annotations

import asyncio

from unit.controller.controller_world import (
    CLUSTER,
    NAME,
    NOW,
    TIMEOUT,
    FakeRaft,
    RecordingProcessor,
    beat,
    master_1,
)

from mqtools.server.controller import app
from mqtools.server.controller.config import ControllerConfig
from mqtools.server.controller.heartbeat import BrokerHeartbeatManager

START = NOW  # the controller starts: its heartbeat table is as old as it from here


def test_a_master_never_heard_from_is_gone_only_once_the_table_is_as_old_as_the_sets_timeout():
    hb = BrokerHeartbeatManager(START)
    slave = object()
    beat(hb, 2, START + 200, slave)
    assert not hb.master_gone(CLUSTER, NAME, 1, START + 200)
    assert not hb.master_gone(CLUSTER, NAME, 1, START + TIMEOUT)
    beat(hb, 2, START + TIMEOUT + 1, slave)
    assert hb.master_gone(CLUSTER, NAME, 1, START + TIMEOUT + 1)
    beat(hb, 1, START + TIMEOUT + 1, object())
    assert not hb.master_gone(CLUSTER, NAME, 1, START + TIMEOUT + 1)  # heard: alive
    assert not BrokerHeartbeatManager(START).master_gone(CLUSTER, NAME, 1, START + 60_000)  # nobody alive


async def test_a_new_leaders_first_scan_waits_for_the_heartbeat_timeout_before_replacing_an_unheard_master(
        monkeypatch):
    monkeypatch.setattr(app, "LEADERSHIP_POLL_S", 0.001)
    now = [START]
    config = ControllerConfig(scan_inactive_master_interval=1)
    manager = app.ControllerManager(config, clock=lambda: now[0])
    processor = RecordingProcessor(manager.heartbeats, lambda: now[0])
    manager.raft, manager.processor = FakeRaft(master_1()), processor  # type: ignore[assignment]
    slave = object()
    now[0] = START + 300  # a lone controller leads within a second; the slave's heartbeat came first
    beat(manager.heartbeats, 2, now[0], slave)
    scan = asyncio.create_task(manager._scan_inactive_masters())
    try:
        await asyncio.sleep(0.1)  # the first scan as leader, and many after it
        assert processor.elections == []
        now[0] = START + TIMEOUT + 1  # master 1 never heard from in a whole heartbeat timeout: dead
        beat(manager.heartbeats, 2, now[0], slave)
        async with asyncio.timeout(5):
            while not processor.elections:
                await asyncio.sleep(0.01)
        assert processor.elections[0][0] == NAME
    finally:
        scan.cancel()
        await asyncio.gather(scan, return_exceptions=True)
