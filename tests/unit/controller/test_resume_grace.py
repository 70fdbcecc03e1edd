"""A controller whose heartbeat table was just emptied by expiry (it was hung longer than the heartbeat timeout,
then resumed) and then becomes the leader must not replace a healthy master before that master's next heartbeat
could have arrived: its table waits a heartbeat timeout from the drop before it judges any master inactive."""

from __future__ import annotations

import asyncio

from unit.controller.controller_world import NAME, NOW, TIMEOUT, FakeRaft, RecordingProcessor, beat, master_1

from mqtools.server.controller import app
from mqtools.server.controller.config import ControllerConfig


def _manager(now: list[int], interval_ms: int, leading: bool,
             ) -> tuple[app.ControllerManager, FakeRaft, RecordingProcessor]:
    manager = app.ControllerManager(ControllerConfig(scan_inactive_master_interval=interval_ms), clock=lambda: now[0])
    raft, processor = FakeRaft(master_1(), leading), RecordingProcessor(manager.heartbeats, lambda: now[0])
    manager.raft, manager.processor = raft, processor  # type: ignore[assignment]
    return manager, raft, processor


async def _stop(task: asyncio.Task) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_resumed_controller_that_becomes_leader_keeps_the_master_whose_heartbeat_comes_after_the_slaves(
        monkeypatch):
    monkeypatch.setattr(app, "LEADERSHIP_POLL_S", 0.001)
    now = [NOW]
    manager, raft, processor = _manager(now, 1, leading=False)
    beat(manager.heartbeats, 1, now[0], object())
    beat(manager.heartbeats, 2, now[0], object())
    now[0] = NOW + 30_000  # hung (SIGSTOP) 30 s, resumed: its expiry scan drops both brokers
    assert {i.broker_id for i in manager.heartbeats.scan(now[0])} == {1, 2}
    slave = object()
    beat(manager.heartbeats, 2, now[0], slave)  # the slave's heartbeat comes first
    raft.leading = True  # then this controller wins the Raft election
    scan = asyncio.create_task(manager._scan_inactive_masters())
    try:
        await asyncio.sleep(0.1)  # its first scans as leader
        assert processor.elections == []
        now[0] += 300
        beat(manager.heartbeats, 1, now[0], object())  # the master's heartbeat, 300 ms later
        await asyncio.sleep(0.05)
        assert processor.elections == []
        assert raft.manager.sets[NAME].master_broker_id == 1
        now[0] += TIMEOUT + 1  # the master falls silent for good: once the grace is over it is replaced
        beat(manager.heartbeats, 2, now[0], slave)
        async with asyncio.timeout(5):
            while not processor.elections:
                await asyncio.sleep(0.01)
        assert processor.elections[0][0] == NAME
    finally:
        await _stop(scan)
