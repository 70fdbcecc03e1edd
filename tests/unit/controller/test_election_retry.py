"""The controller's own election after a master died is tried again only when its answer was not committed
(replication failed while this controller still leads). Any other answer is final for that scan: a retried
MASTER_NOT_AVAILABLE committed another "no master" election each time (one death, three elections)."""

from __future__ import annotations

from unit.controller.controller_world import NAME, NOW, FakeRaft, beat, master_1, request_processor

from mqtools.remoting.codes import ResponseCode as RC
from mqtools.remoting.command import RemotingCommand
from mqtools.server.controller import app
from mqtools.server.controller.config import ControllerConfig


def _world(raft: FakeRaft, in_sync: frozenset[int], alive: tuple[int, ...],
           ) -> tuple[app.ControllerManager, list[RemotingCommand]]:
    """Brokers 1 and 2, master 1 (epoch 1) with `in_sync`; `alive` heartbeat. The requests the processor got."""
    master_1(in_sync=in_sync, manager=raft.manager)
    config = ControllerConfig(elect_master_max_retry_count=3)
    manager = app.ControllerManager(config, clock=lambda: NOW)
    for bid in alive:
        beat(manager.heartbeats, bid)
    processor = request_processor(raft, manager.heartbeats, config)
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
