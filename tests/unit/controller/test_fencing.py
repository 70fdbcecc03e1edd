"""A check made on a controller that lost the lead must not reach the log, and if it does anyway (pysyncobj
forwards a follower's entries to the leader) applying it must change nothing: an election or SyncStateSet
change carries the epochs it was checked against."""

from __future__ import annotations

import asyncio
import copyreg
import io
import pickle
import threading

import pytest
from pysyncobj import FAIL_REASON
from unit.controller.controller_world import CLUSTER, NAME, NOW, FakeRaft, beat, master_1, request_processor

from mqtools.remoting.codes import RequestCode
from mqtools.remoting.codes import ResponseCode as RC
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.controller import ApplyBrokerIdRequestHeader, ElectMasterRequestHeader, SyncStateSet
from mqtools.server.controller.heartbeat import BrokerHeartbeatManager
from mqtools.server.controller.raft import ControllerRaft, ReplicationError, _Metadata
from mqtools.server.controller.replicas_info import (
    AlterSyncStateSetEvent,
    ApplyBrokerIdEvent,
    ElectMasterEvent,
    Event,
    ReplicasInfoManager,
)


def _set_with_master_1(hb: BrokerHeartbeatManager) -> ReplicasInfoManager:
    """Brokers 1-3, master 1 (epoch 1) with all three in sync; 2 and 3 heartbeat, 1 does not (it died)."""
    m = master_1((1, 2, 3), frozenset({1, 2, 3}))
    for bid in (2, 3):
        beat(hb, bid, max_offset=100 * bid)
    return m


def _live(hb: BrokerHeartbeatManager):
    return lambda cluster, name, bid: hb.live_info(cluster, name, bid)


class GatedRaft(FakeRaft):
    """Leads until `leading` is cleared; replicate waits for `gate`, then applies, as a commit would."""

    def __init__(self, manager: ReplicasInfoManager) -> None:
        super().__init__(manager)
        self.gate = asyncio.Event()
        self.replicated: list[list[Event]] = []

    async def replicate(self, events: list[Event], timeout: float = 5.0) -> None:
        self.replicated.append(list(events))
        await self.gate.wait()
        with self.lock:
            for event in events:
                self.manager.apply(event)


async def test_a_request_queued_behind_one_that_outlived_the_lead_is_not_checked_or_replicated():
    hb = BrokerHeartbeatManager(0)
    raft = GatedRaft(_set_with_master_1(hb))
    elected: list[str] = []
    processor = request_processor(raft, hb, on_elected=lambda name, _result: elected.append(name))
    first = RemotingCommand.request(RequestCode.CONTROLLER_APPLY_BROKER_ID, ApplyBrokerIdRequestHeader(
        CLUSTER, NAME, 4, "h:4;4").to_ext())
    election = RemotingCommand.request(RequestCode.CONTROLLER_ELECT_MASTER, ElectMasterRequestHeader(
        "", NAME, -1, False, NOW).to_ext())
    t1 = asyncio.create_task(processor.apply_broker_id(None, first))  # type: ignore[arg-type]
    t2 = asyncio.create_task(processor.elect_master(None, election))
    while not raft.replicated:  # the first is replicating, the election waits for its turn
        await asyncio.sleep(0)
    await asyncio.sleep(0.01)
    raft.leading = False  # the lead is lost while the first waits on Raft
    raft.gate.set()
    assert (await t1).code == RC.SUCCESS
    answer = await t2
    assert answer.code == RC.CONTROLLER_NOT_LEADER
    assert raft.replicated == [[ApplyBrokerIdEvent(CLUSTER, NAME, "h:4", "h:4;4", 4)]] and elected == []
    assert raft.manager.sets[NAME].master_broker_id == 1


def test_an_election_checked_against_an_older_master_epoch_changes_nothing():
    hb = BrokerHeartbeatManager(0)
    m = _set_with_master_1(hb)
    stale = m.elect_master(NAME, -1, False, False, _live(hb), now_ms=5)  # made before the other's commit
    current = m.elect_master(NAME, -1, False, False, _live(hb), now_ms=6)
    assert stale.events[0].master_epoch == current.events[0].master_epoch == 1
    assert m.apply(current.events[0])
    before = (m.sets[NAME].master_broker_id, m.sets[NAME].master_epoch, set(m.sets[NAME].sync_state_set),
              m.sets[NAME].sync_state_set_epoch, len(m.elections))
    assert before[:2] == (3, 2)
    assert not m.apply(stale.events[0])
    assert (m.sets[NAME].master_broker_id, m.sets[NAME].master_epoch, set(m.sets[NAME].sync_state_set),
            m.sets[NAME].sync_state_set_epoch, len(m.elections)) == before


def test_an_alter_checked_against_older_epochs_changes_nothing():
    hb = BrokerHeartbeatManager(0)
    m = _set_with_master_1(hb)
    beat(hb, 1, max_offset=100)
    shrink = m.alter_sync_state_set(NAME, 1, 1, SyncStateSet({1, 2}, 2), _live(hb)).events[0]
    other = m.alter_sync_state_set(NAME, 1, 1, SyncStateSet({1, 3}, 2), _live(hb)).events[0]
    assert (shrink.master_epoch, shrink.sync_state_set_epoch) == (1, 2)
    assert m.apply(shrink) and not m.apply(other)  # the set's epoch moved on with the first
    assert (m.sets[NAME].sync_state_set, m.sets[NAME].sync_state_set_epoch) == ({1, 2}, 3)
    grow = m.alter_sync_state_set(NAME, 1, 1, SyncStateSet({1, 2, 3}, 3), _live(hb)).events[0]
    m.apply(ElectMasterEvent(NAME, 2, master_epoch=1))  # a new master meanwhile
    assert not m.apply(grow)
    assert (m.sets[NAME].master_broker_id, m.sets[NAME].sync_state_set, m.sets[NAME].sync_state_set_epoch) == \
        (2, {2}, 4)


def _pickled_by_older_code(cls: type, fields: list[object]) -> bytes:
    """The bytes the event class pickled to before it had the epoch fields: its class and those values."""

    class Older(pickle.Pickler):
        def reducer_override(self, obj: object) -> object:
            return (copyreg.__newobj__, (cls,), fields) if type(obj) is cls else NotImplemented  # type: ignore[attr-defined]

    out = io.BytesIO()
    Older(out).dump(object.__new__(cls))
    return out.getvalue()


def test_events_of_a_log_written_before_the_epochs_were_kept_still_apply_unfenced():
    """pysyncobj's journal holds pickled events; a slotted dataclass restores the fields it was pickled with."""
    m = ReplicasInfoManager()
    m.apply(ApplyBrokerIdEvent(CLUSTER, NAME, "h:1", "h:1;1", 1))
    m.apply(ApplyBrokerIdEvent(CLUSTER, NAME, "h:2", "h:2;2", 2))
    old_elect = _pickled_by_older_code(ElectMasterEvent, [NAME, 1, 7, "broker", None])
    old_alter = _pickled_by_older_code(AlterSyncStateSetEvent, [NAME, frozenset({1, 2})])
    for data in (old_elect, old_elect, old_alter):
        assert m.apply(pickle.loads(data))
    assert (m.sets[NAME].master_broker_id, m.sets[NAME].master_epoch, m.sets[NAME].sync_state_set) == (1, 2, {1, 2})


async def test_replicate_fails_when_the_log_dropped_its_events_as_stale():
    """The leader's answer was made from a state the log had left, so it is not given (CONTROLLER_NOT_LEADER)."""
    metadata = _Metadata(threading.Lock())
    metadata.manager.apply(ApplyBrokerIdEvent(CLUSTER, NAME, "h:1", "h:1;1", 1))

    class Log:
        def apply_events(self, events: list[Event], callback) -> None:
            callback(metadata.apply_events(events, _doApply=True), FAIL_REASON.SUCCESS)

    raft = object.__new__(ControllerRaft)
    raft._metadata = Log()  # type: ignore[assignment]
    await raft.replicate([ElectMasterEvent(NAME, 1, master_epoch=0)])
    with pytest.raises(ReplicationError, match="dropped"):
        await raft.replicate([ElectMasterEvent(NAME, 1, master_epoch=0)])
    assert metadata.manager.sets[NAME].master_epoch == 1
