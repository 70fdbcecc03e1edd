"""Shared scaffolding for controller tests: one broker set (NAME in CLUSTER, broker n at "h:n"), a Raft stand-in
that applies what it replicates at once, heartbeats, and a scan's view of the processor that records elections."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from mqtools.remoting.codes import ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.controller import BrokerHeartbeatRequestHeader, ElectMasterRequestHeader
from mqtools.server.controller.config import ControllerConfig
from mqtools.server.controller.heartbeat import BrokerHeartbeatManager, BrokerLiveInfo
from mqtools.server.controller.processor import ControllerRequestProcessor
from mqtools.server.controller.raft import ReplicationError
from mqtools.server.controller.replicas_info import (
    AlterSyncStateSetEvent,
    ApplyBrokerIdEvent,
    ControllerResult,
    ElectMasterEvent,
    Event,
    ReplicasInfoManager,
)

CLUSTER, NAME = "C", "broker-a"
NOW = 1_000_000
TIMEOUT = 3_000  # each broker's heartbeat timeout (ms)


def master_1(brokers: tuple[int, ...] = (1, 2), in_sync: frozenset[int] = frozenset({1}),
             manager: ReplicasInfoManager | None = None) -> ReplicasInfoManager:
    """`brokers` registered, master 1 (epoch 1) with SyncStateSet `in_sync`, applied to `manager` (or a new one)."""
    m = ReplicasInfoManager() if manager is None else manager
    for bid in brokers:
        m.apply(ApplyBrokerIdEvent(CLUSTER, NAME, f"h:{bid}", f"h:{bid};{bid}", bid))
    m.apply(ElectMasterEvent(NAME, 1))
    if in_sync != {1}:
        m.apply(AlterSyncStateSetEvent(NAME, in_sync))
    return m


def beat(hb: BrokerHeartbeatManager, bid: int, now: int = NOW, channel: object | None = None,
         max_offset: int = 0) -> None:
    """Broker `bid`'s heartbeat (epoch 1) at `now` on `channel` (a new one unless given)."""
    header = BrokerHeartbeatRequestHeader(CLUSTER, f"h:{bid}", NAME, bid, 1, max_offset, 0, TIMEOUT)
    hb.on_heartbeat(header, object() if channel is None else channel, now)


class FakeRaft:
    """Leads while `leading`; replicate applies at once, as a commit would, after failing the first `failures`
    times."""

    def __init__(self, manager: ReplicasInfoManager | None = None, leading: bool = True, failures: int = 0) -> None:
        self.manager = ReplicasInfoManager() if manager is None else manager
        self.lock = threading.Lock()
        self.leading = leading
        self.failures = failures

    def is_leader(self) -> bool:
        return self.leading

    async def replicate(self, events: list[Event], timeout: float = 5.0) -> None:
        if events and self.failures:
            self.failures -= 1
            raise ReplicationError("not committed within 5 s (no quorum?)")
        for event in events:
            self.manager.apply(event)


def request_processor(raft: FakeRaft, hb: BrokerHeartbeatManager, config: ControllerConfig | None = None,
                      on_elected: Callable[[str, ControllerResult], None] = lambda name, result: None,
                      ) -> ControllerRequestProcessor:
    """The real processor over `raft` and `hb`, its clock stopped at NOW."""
    return ControllerRequestProcessor(ControllerConfig() if config is None else config, raft,  # type: ignore[arg-type]
                                      hb, lambda: NOW, on_elected)


class RecordingProcessor:
    """What the scan for inactive masters uses of the processor: liveness, and the election request, recorded
    with the loop time it came."""

    def __init__(self, hb: BrokerHeartbeatManager, clock: Callable[[], int]) -> None:
        self.hb, self.clock = hb, clock
        self.elections: list[tuple[str, float]] = []

    def live(self, cluster: str, name: str, bid: int) -> BrokerLiveInfo | None:
        info = self.hb.live_info(cluster, name, bid)
        return info if info is not None and not info.expired(self.clock()) else None

    async def elect_master(self, conn, req: RemotingCommand, down_since_ms: int | None = None) -> RemotingCommand:
        name = ElectMasterRequestHeader.from_ext(req.ext_fields).broker_name
        self.elections.append((name, asyncio.get_running_loop().time()))
        return req.response(ResponseCode.SUCCESS)
