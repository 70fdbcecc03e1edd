"""The controller's own election after a master died is tried again only when its answer was not committed
(replication failed while this controller still leads). Any other answer is final for that scan: a retried
MASTER_NOT_AVAILABLE committed another "no master" election each time (one death, three elections)."""

from __future__ import annotations

import threading

from mqtools.remoting.codes import ResponseCode as RC
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.controller import BrokerHeartbeatRequestHeader
from mqtools.server.controller import app
from mqtools.server.controller.config import ControllerConfig
from mqtools.server.controller.processor import ControllerRequestProcessor
from mqtools.server.controller.raft import ReplicationError
from mqtools.server.controller.replicas_info import (
    AlterSyncStateSetEvent,
    ApplyBrokerIdEvent,
    ElectMasterEvent,
    Event,
    ReplicasInfoManager,
)

CLUSTER, NAME = "C", "broker-a"
NOW = 1_000_000


class FakeRaft:
    """Leads while `leading`; replicate applies at once, after failing the first `failures` times."""

    def __init__(self, failures: int = 0) -> None:
        self.manager = ReplicasInfoManager()
        self.lock = threading.Lock()
        self.leading = True
        self.failures = failures

    def is_leader(self) -> bool:
        return self.leading

    async def replicate(self, events: list[Event], timeout: float = 5.0) -> None:
        if events and self.failures:
            self.failures -= 1
            raise ReplicationError("not committed within 5 s (no quorum?)")
        for event in events:
            self.manager.apply(event)


def _world(raft: FakeRaft, in_sync: frozenset[int], alive: tuple[int, ...],
           ) -> tuple[app.ControllerManager, list[RemotingCommand]]:
    """Brokers 1 and 2, master 1 (epoch 1) with `in_sync`; `alive` heartbeat. The requests the processor got."""
    for bid in (1, 2):
        raft.manager.apply(ApplyBrokerIdEvent(CLUSTER, NAME, f"h:{bid}", f"h:{bid};{bid}", bid))
    raft.manager.apply(ElectMasterEvent(NAME, 1))
    if in_sync != {1}:
        raft.manager.apply(AlterSyncStateSetEvent(NAME, in_sync))
    config = ControllerConfig(elect_master_max_retry_count=3)
    manager = app.ControllerManager(config, clock=lambda: NOW)
    for bid in alive:
        manager.heartbeats.on_heartbeat(BrokerHeartbeatRequestHeader(CLUSTER, f"h:{bid}", NAME, bid, 1, 0, 0, 3000),
                                        object(), NOW)
    processor = ControllerRequestProcessor(config, raft, manager.heartbeats, lambda: NOW,  # type: ignore[arg-type]
                                           lambda name, result: None)
    asked: list[RemotingCommand] = []
    elect_master = processor.elect_master

    async def counted(conn, req: RemotingCommand, down_since_ms: int | None = None) -> RemotingCommand:
        asked.append(req)
        return await elect_master(conn, req, down_since_ms)

    processor.elect_master = counted  # type: ignore[method-assign]
    manager.raft, manager.processor = raft, processor  # type: ignore[assignment]
    return manager, asked


async def test_a_master_with_no_in_sync_successor_makes_one_no_master_election_not_one_per_retry():
    raft = FakeRaft()
    manager, asked = _world(raft, frozenset({1}), alive=(2,))  # 2 lives but is not in sync
    assert await manager.elect(NAME, NOW) == RC.CONTROLLER_MASTER_NOT_AVAILABLE
    assert len(asked) == 1
    bset = raft.manager.sets[NAME]
    assert (bset.master_broker_id, bset.master_epoch) == (None, 2)
    assert [(e.old_master, e.new_master, e.master_epoch) for e in raft.manager.elections] == [(None, 1, 1),
                                                                                              (1, None, 2)]


async def test_a_master_still_alive_is_asked_about_once():
    raft = FakeRaft()
    manager, asked = _world(raft, frozenset({1, 2}), alive=(1, 2))
    assert await manager.elect(NAME) == RC.CONTROLLER_MASTER_STILL_EXIST
    assert len(asked) == 1
    assert raft.manager.sets[NAME].master_epoch == 1


async def test_an_election_that_was_not_committed_is_tried_again_while_this_controller_leads():
    raft = FakeRaft(failures=1)
    manager, asked = _world(raft, frozenset({1, 2}), alive=(2,))
    assert await manager.elect(NAME, NOW) == RC.SUCCESS
    assert len(asked) == 2
    bset = raft.manager.sets[NAME]
    assert (bset.master_broker_id, bset.master_epoch) == (2, 2)


async def test_a_controller_that_no_longer_leads_does_not_try_again():
    raft = FakeRaft()
    raft.leading = False
    manager, asked = _world(raft, frozenset({1, 2}), alive=(2,))
    assert await manager.elect(NAME, NOW) == RC.CONTROLLER_NOT_LEADER
    assert len(asked) == 1
