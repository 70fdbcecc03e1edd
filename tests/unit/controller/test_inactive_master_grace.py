"""A controller that has just started has no heartbeat from a healthy master yet: its first scan for
inactive masters must not replace it. Only once it has been up for the set's heartbeat timeout does a master
it never heard from count as dead."""

from __future__ import annotations

import asyncio
import threading

from mqtools.remoting.codes import ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.controller import BrokerHeartbeatRequestHeader, ElectMasterRequestHeader
from mqtools.server.controller import app
from mqtools.server.controller.config import ControllerConfig
from mqtools.server.controller.heartbeat import BrokerHeartbeatManager
from mqtools.server.controller.replicas_info import ApplyBrokerIdEvent, ElectMasterEvent, ReplicasInfoManager

CLUSTER, NAME = "C", "broker-a"
START = 1_000_000
TIMEOUT = 3_000


def _master_1() -> ReplicasInfoManager:
    m = ReplicasInfoManager()
    for bid in (1, 2):
        m.apply(ApplyBrokerIdEvent(CLUSTER, NAME, f"h:{bid}", f"h:{bid};{bid}", bid))
    m.apply(ElectMasterEvent(NAME, 1))
    return m


def _beat(hb: BrokerHeartbeatManager, bid: int, now: int, channel: object) -> None:
    hb.on_heartbeat(BrokerHeartbeatRequestHeader(CLUSTER, f"h:{bid}", NAME, bid, 1, 0, 0, TIMEOUT), channel, now)


def test_a_master_never_heard_from_is_gone_only_once_the_table_is_as_old_as_the_sets_timeout():
    hb = BrokerHeartbeatManager(START)
    slave = object()
    _beat(hb, 2, START + 200, slave)
    assert not hb.master_gone(CLUSTER, NAME, 1, START + 200)
    assert not hb.master_gone(CLUSTER, NAME, 1, START + TIMEOUT)
    _beat(hb, 2, START + TIMEOUT + 1, slave)
    assert hb.master_gone(CLUSTER, NAME, 1, START + TIMEOUT + 1)
    _beat(hb, 1, START + TIMEOUT + 1, object())
    assert not hb.master_gone(CLUSTER, NAME, 1, START + TIMEOUT + 1)  # heard: alive
    assert not BrokerHeartbeatManager(START).master_gone(CLUSTER, NAME, 1, START + 60_000)  # nobody alive


class LeadingRaft:
    def __init__(self, manager: ReplicasInfoManager) -> None:
        self.manager = manager
        self.lock = threading.Lock()

    def is_leader(self) -> bool:
        return True


class RecordingProcessor:
    """What the scan uses of the processor: liveness and the election request."""

    def __init__(self, hb: BrokerHeartbeatManager, clock) -> None:
        self.hb, self.clock = hb, clock
        self.elections: list[str] = []

    def live(self, cluster: str, name: str, bid: int):
        info = self.hb.live_info(cluster, name, bid)
        return info if info is not None and not info.expired(self.clock()) else None

    async def elect_master(self, conn, req: RemotingCommand, down_since_ms: int | None = None) -> RemotingCommand:
        self.elections.append(ElectMasterRequestHeader.from_ext(req.ext_fields).broker_name)
        return req.response(ResponseCode.SUCCESS)


async def test_a_new_leaders_first_scan_waits_for_the_heartbeat_timeout_before_replacing_an_unheard_master(
        monkeypatch):
    monkeypatch.setattr(app, "LEADERSHIP_POLL_S", 0.001)
    now = [START]
    config = ControllerConfig(scan_inactive_master_interval=1)
    manager = app.ControllerManager(config, clock=lambda: now[0])
    processor = RecordingProcessor(manager.heartbeats, lambda: now[0])
    manager.raft, manager.processor = LeadingRaft(_master_1()), processor  # type: ignore[assignment]
    slave = object()
    now[0] = START + 300  # a lone controller leads within a second; the slave's heartbeat came first
    _beat(manager.heartbeats, 2, now[0], slave)
    scan = asyncio.create_task(manager._scan_inactive_masters())
    try:
        await asyncio.sleep(0.1)  # the first scan as leader, and many after it
        assert processor.elections == []
        now[0] = START + TIMEOUT + 1  # master 1 never heard from in a whole heartbeat timeout: dead
        _beat(manager.heartbeats, 2, now[0], slave)
        async with asyncio.timeout(5):
            while not processor.elections:
                await asyncio.sleep(0.01)
        assert processor.elections[0] == NAME
    finally:
        scan.cancel()
        await asyncio.gather(scan, return_exceptions=True)
