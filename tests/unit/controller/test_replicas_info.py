"""ReplicasInfoManager and DefaultElectPolicy: checks give answers and events, applying events changes the
state, bytes and clocks stay out (sans-IO)."""

from __future__ import annotations

import pytest
from unit.controller.controller_world import CLUSTER, NAME, NOW

from mqtools.remoting.codes import ResponseCode as RC
from mqtools.remoting.controller import BrokerHeartbeatRequestHeader, SyncStateSet
from mqtools.server.controller.heartbeat import BrokerHeartbeatManager
from mqtools.server.controller.replicas_info import (
    ApplyBrokerIdEvent,
    ControllerResult,
    ElectMasterEvent,
    ReplicasInfoManager,
)


class World:
    """A manager plus a heartbeat table, with the time under the test's control."""

    def __init__(self) -> None:
        self.m = ReplicasInfoManager()
        self.hb = BrokerHeartbeatManager(0)
        self.now = NOW
        self.channels: dict[int, object] = {}

    def live(self, cluster, name, bid):
        info = self.hb.live_info(cluster, name, bid)
        return info if info is not None and not info.expired(self.now) else None

    def commit(self, result: ControllerResult) -> ControllerResult:
        for event in result.events:
            self.m.apply(event)
        return result

    def join(self, bid: int, epoch: int = -1, max_offset: int = -1, priority: int | None = None) -> None:
        addr = f"127.0.0.1:{10900 + bid}"
        got = self.commit(self.m.apply_broker_id(CLUSTER, NAME, bid, f"{addr};{bid}"))
        assert got.code == RC.SUCCESS, got.remark
        self.beat(bid, epoch, max_offset, priority)

    def beat(self, bid: int, epoch: int = -1, max_offset: int = -1, priority: int | None = None) -> None:
        header = BrokerHeartbeatRequestHeader(CLUSTER, f"127.0.0.1:{10900 + bid}", NAME, bid, epoch, max_offset, 0,
                                              3000, priority)
        self.hb.on_heartbeat(header, self.channels.setdefault(bid, object()), self.now)


@pytest.fixture
def w() -> World:
    return World()


def test_ids_are_applied_in_order_and_a_retry_with_the_same_check_code_is_accepted(w):
    assert w.m.next_broker_id(CLUSTER, NAME).header.next_broker_id == 1
    refused = w.m.apply_broker_id(CLUSTER, NAME, 2, "a:1;1")
    assert refused.code == RC.CONTROLLER_BROKER_ID_INVALID and not refused.events
    w.join(1)
    assert w.m.next_broker_id(CLUSTER, NAME).header.next_broker_id == 2
    assert w.m.apply_broker_id(CLUSTER, NAME, 1, "127.0.0.1:10901;1").code == RC.SUCCESS  # its own retry
    assert w.m.apply_broker_id(CLUSTER, NAME, 1, "other:1;9").code == RC.CONTROLLER_BROKER_ID_INVALID


def test_the_first_broker_to_ask_becomes_master_and_later_ones_learn_it_at_registration(w):
    w.join(1)
    w.join(2)
    first = w.commit(w.m.elect_master(NAME, 2, False, False, w.live))
    assert first.code == RC.SUCCESS
    assert (first.header.master_broker_id, first.header.master_epoch, first.header.sync_state_set_epoch) == (2, 1, 1)
    assert first.body.broker_member_group.broker_addrs == {1: "127.0.0.1:10901", 2: "127.0.0.1:10902"}
    again = w.m.elect_master(NAME, 1, False, False, w.live)
    assert again.code == RC.CONTROLLER_MASTER_STILL_EXIST and again.header.master_broker_id == 2
    reg = w.m.register_broker(CLUSTER, NAME, 1, "127.0.0.1:10901", w.live)
    assert reg.code == RC.SUCCESS and reg.header.master_broker_id == 2 and reg.body.sync_state_set == {2}


def test_sync_state_set_changes_are_fenced_by_master_and_epochs(w):
    for bid in (1, 2, 3):
        w.join(bid)
    w.commit(w.m.elect_master(NAME, 1, False, False, w.live))
    grow = SyncStateSet({1, 2, 3}, 1)
    assert w.m.alter_sync_state_set(NAME, 2, 1, grow, w.live).code == RC.CONTROLLER_INVALID_MASTER
    assert w.m.alter_sync_state_set(NAME, 1, 0, grow, w.live).code == RC.CONTROLLER_FENCED_MASTER_EPOCH
    stale = SyncStateSet({1, 2}, 0)
    assert w.m.alter_sync_state_set(NAME, 1, 1, stale, w.live).code == RC.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH
    assert w.m.alter_sync_state_set(NAME, 1, 1, SyncStateSet({1, 9}, 1), w.live).code == RC.CONTROLLER_INVALID_REPLICAS
    assert w.m.alter_sync_state_set(NAME, 1, 1, SyncStateSet({2, 3}, 1), w.live).code == \
        RC.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED  # without its master
    ok = w.commit(w.m.alter_sync_state_set(NAME, 1, 1, grow, w.live))
    assert ok.code == RC.SUCCESS and ok.header.new_sync_state_set_epoch == 2
    assert w.m.sets[NAME].sync_state_set == {1, 2, 3}
    w.now += 10_000  # every heartbeat is now older than its 3 s timeout
    w.beat(1)
    assert w.m.alter_sync_state_set(NAME, 1, 1, SyncStateSet({1, 2}, 2), w.live).code == RC.CONTROLLER_BROKER_NOT_ALIVE
    assert w.commit(w.m.alter_sync_state_set(NAME, 1, 1, SyncStateSet({1}, 2), w.live)).code == RC.SUCCESS


def test_a_dead_master_is_replaced_by_the_in_sync_replica_with_the_newest_data(w):
    w.join(1, epoch=1, max_offset=500)
    w.join(2, epoch=1, max_offset=400)
    w.join(3, epoch=1, max_offset=900)
    w.commit(w.m.elect_master(NAME, 1, False, False, w.live))
    w.commit(w.m.alter_sync_state_set(NAME, 1, 1, SyncStateSet({1, 2}, 1), w.live))
    w.hb.on_channel_close(w.hb.live_info(CLUSTER, NAME, 1).channel)
    result = w.commit(w.m.elect_master(NAME, -1, False, False, w.live))
    # 3 has more data but was not in sync: not electable without enableElectUncleanMaster
    assert result.code == RC.SUCCESS and result.header.master_broker_id == 2
    assert (w.m.sets[NAME].master_epoch, w.m.sets[NAME].sync_state_set) == (2, {2})


def test_unclean_election_only_when_allowed_and_a_failed_one_leaves_no_master(w):
    w.join(1)
    w.join(2)
    w.commit(w.m.elect_master(NAME, 1, False, False, w.live))
    w.hb.on_channel_close(w.hb.live_info(CLUSTER, NAME, 1).channel)
    failed = w.commit(w.m.elect_master(NAME, -1, False, False, w.live))
    assert failed.code == RC.CONTROLLER_MASTER_NOT_AVAILABLE and failed.events == [ElectMasterEvent(NAME, None, 0, "controller", master_epoch=1)]
    assert (w.m.sets[NAME].master_broker_id, w.m.sets[NAME].master_epoch) == (None, 2)
    unclean = w.commit(w.m.elect_master(NAME, -1, False, True, w.live))
    assert unclean.code == RC.SUCCESS and unclean.header.master_broker_id == 2 and unclean.header.master_epoch == 3


def test_an_admin_can_designate_a_live_in_sync_master_only(w):
    for bid in (1, 2, 3):
        w.join(bid, priority=bid)
    w.commit(w.m.elect_master(NAME, 1, False, False, w.live))
    w.commit(w.m.alter_sync_state_set(NAME, 1, 1, SyncStateSet({1, 2}, 1), w.live))
    assert w.m.elect_master(NAME, 3, True, False, w.live).code == RC.CONTROLLER_ELECT_MASTER_FAILED
    moved = w.commit(w.m.elect_master(NAME, 2, True, False, w.live))
    assert moved.code == RC.SUCCESS and w.m.sets[NAME].master_broker_id == 2


def test_ties_go_to_the_lower_election_priority(w):
    w.join(1)
    w.join(2, epoch=3, max_offset=100, priority=5)
    w.join(3, epoch=3, max_offset=100, priority=1)
    w.commit(w.m.elect_master(NAME, 1, False, False, w.live))
    w.commit(w.m.alter_sync_state_set(NAME, 1, 1, SyncStateSet({1, 2, 3}, 1), w.live))
    w.hb.on_channel_close(w.hb.live_info(CLUSTER, NAME, 1).channel)
    assert w.commit(w.m.elect_master(NAME, -1, False, False, w.live)).header.master_broker_id == 3


def test_clean_broker_data_refuses_live_brokers_unless_told(w):
    w.join(1)
    w.join(2)
    w.commit(w.m.elect_master(NAME, 1, False, False, w.live))
    assert w.m.clean_broker_data(NAME, None, False, w.live).code == RC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    assert w.m.clean_broker_data(NAME, "2", False, w.live).code == RC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    assert w.m.clean_broker_data(NAME, "x", True, w.live).code == RC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    w.commit(w.m.clean_broker_data(NAME, "2", True, w.live))
    assert set(w.m.sets[NAME].brokers) == {1}
    w.commit(w.m.clean_broker_data(NAME, None, True, w.live))
    assert NAME not in w.m.sets
    assert w.m.clean_broker_data(NAME, None, True, w.live).code == RC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA


def test_register_reports_the_master_only_while_it_is_alive_and_updates_a_moved_address(w):
    w.join(1)
    w.join(2)
    w.commit(w.m.elect_master(NAME, 1, False, False, w.live))
    w.hb.on_channel_close(w.hb.live_info(CLUSTER, NAME, 1).channel)
    reg = w.commit(w.m.register_broker(CLUSTER, NAME, 2, "127.0.0.1:20000", w.live))
    assert reg.header.master_broker_id is None
    assert w.m.sets[NAME].address(2) == "127.0.0.1:20000"
    assert w.m.register_broker(CLUSTER, NAME, 7, "x:1", w.live).code == RC.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
    assert w.m.register_broker(CLUSTER, "nope", 1, "x:1", w.live).code == RC.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED


def test_applying_is_deterministic_and_ignores_events_of_unknown_sets(w):
    events = [ApplyBrokerIdEvent(CLUSTER, NAME, "a:1", "a:1;1", 1), ElectMasterEvent(NAME, 1),
              ElectMasterEvent("unknown", 1)]
    other = ReplicasInfoManager()
    for event in events:
        w.m.apply(event)
        other.apply(event)
    assert w.m.sets == other.sets and set(other.sets) == {NAME}


def test_heartbeat_figures_only_move_forward(w):
    w.join(1, epoch=2, max_offset=100)
    w.beat(1, epoch=2, max_offset=50)
    assert w.hb.live_info(CLUSTER, NAME, 1).max_offset == 100
    w.beat(1, epoch=3, max_offset=10)
    info = w.hb.live_info(CLUSTER, NAME, 1)
    assert (info.epoch, info.max_offset) == (3, 10)
    w.now += 3001
    assert [i.broker_id for i in w.hb.scan(w.now)] == [1] and w.hb.live_info(CLUSTER, NAME, 1) is None


def test_the_next_scan_is_due_when_the_first_broker_would_time_out(w):
    """The controller scans then (as well as every scanNotActiveBrokerInterval): a silent master is found at its
    heartbeat timeout, not up to an interval later."""
    assert w.hb.next_expiry() is None
    w.join(1)
    w.now += 400
    w.join(2)
    assert w.hb.next_expiry() == w.now - 400 + 3001  # broker 1's, 3 s after its heartbeat
    assert w.hb.scan(w.hb.next_expiry() - 1) == []
    w.beat(1)  # a heartbeat moves its expiry on: broker 2's is now the first
    assert w.hb.next_expiry() == w.now + 3001
    assert [i.broker_id for i in w.hb.scan(w.hb.next_expiry())] == [1, 2]


def test_every_committed_election_is_in_the_history_with_its_cause(w):
    w.join(1)
    w.join(2)
    w.commit(w.m.elect_master(NAME, 1, False, False, w.live, now_ms=10))
    w.commit(w.m.alter_sync_state_set(NAME, 1, 1, SyncStateSet({1, 2}, 1), w.live))
    w.commit(w.m.elect_master(NAME, 2, True, False, w.live, now_ms=20))
    w.hb.on_channel_close(w.hb.live_info(CLUSTER, NAME, 2).channel)
    w.commit(w.m.elect_master(NAME, -1, False, False, w.live, now_ms=30))
    assert [(e.at_ms, e.old_master, e.new_master, e.master_epoch, e.cause) for e in w.m.elections] == [
        (10, None, 1, 1, "broker"), (20, 1, 2, 2, "admin"), (30, 2, None, 3, "controller")]  # 1 left the set at 2's election


def test_the_election_that_ends_a_masterless_spell_counts_its_unwritable_time_from_the_old_masters_death(w):
    """A dead master whose in-sync slave was not heard from (stopped, starved) leaves the set without a master;
    the slave, heard again, asks and is elected. That election's unwritable span runs from the old master's last
    sign of life, which the election without a master recorded: it was n/a."""
    w.join(1)
    w.join(2)
    w.commit(w.m.elect_master(NAME, 1, False, False, w.live, now_ms=10))
    w.commit(w.m.alter_sync_state_set(NAME, 1, 1, SyncStateSet({1, 2}, 1), w.live))
    w.hb.on_channel_close(w.hb.live_info(CLUSTER, NAME, 1).channel)
    w.hb.on_channel_close(w.hb.live_info(CLUSTER, NAME, 2).channel)
    w.commit(w.m.elect_master(NAME, -1, False, False, w.live, now_ms=1_000, down_since_ms=900))
    w.beat(2)
    w.commit(w.m.elect_master(NAME, 2, False, False, w.live, now_ms=5_000))
    assert [(e.old_master, e.new_master, e.master_epoch, e.cause, e.down_since_ms) for e in w.m.elections] == [
        (None, 1, 1, "broker", None), (1, None, 2, "controller", 900), (None, 2, 3, "broker", 900)]
