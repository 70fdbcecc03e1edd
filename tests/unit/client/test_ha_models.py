"""The replication figures and the readiness verdict, from hand-made samples and groups."""

from __future__ import annotations

import dataclasses

from mqtools.client.admin.models.ha import (
    GROWING,
    NOT_SAFE,
    RUNTIME_INFO,
    SAFE,
    SHRINKING,
    STEADY,
    UNKNOWN,
    ReplicationGroup,
    SlaveReplication,
    SlaveView,
    catch_up_seconds,
    diff_messages,
    offset_speed,
    pair_slaves,
    status_from_offsets,
    trend_of,
)
from mqtools.client.admin.models.ha_readiness import assess

MB = 1024 * 1024


def test_trend_needs_two_samples_and_a_span() -> None:
    assert trend_of([]) is None
    assert trend_of([(0.0, 5)]) is None
    assert trend_of([(1.0, 5), (1.0, 9)]) is None


def test_trend_of_a_stopped_slave_under_load_is_growing() -> None:
    assert trend_of([(t * 0.5, int(t * 0.5 * MB)) for t in range(6)]) == GROWING


def test_trend_of_a_resumed_slave_is_shrinking_even_when_it_catches_up_in_one_step() -> None:
    assert trend_of([(0.0, 8 * MB), (0.5, 8 * MB), (1.0, 8 * MB), (1.5, 0), (2.0, 0)]) == SHRINKING
    assert trend_of([(0.0, 8 * MB), (0.5, 0), (1.0, 0), (1.5, 0), (2.0, 0)]) == SHRINKING
    assert trend_of([(0.0, 8 * MB), (0.5, 8 * MB), (1.0, 8 * MB), (1.5, 8 * MB), (2.0, 0)]) == SHRINKING


def test_trend_ignores_the_jitter_of_async_replication_under_load() -> None:
    jitter = [0, 12_000, 3_000, 40_000, 0, 8_000]
    assert trend_of([(i * 0.5, d) for i, d in enumerate(jitter)]) == STEADY
    assert trend_of([(0.0, 0), (2.0, 0)]) == STEADY
    # a large diff moving by less than a tenth of itself is steady too
    assert trend_of([(0.0, 500 * MB), (1.0, 520 * MB), (2.0, 510 * MB)]) == STEADY


def test_catch_up_is_diff_over_speed_and_never_infinite() -> None:
    assert catch_up_seconds(10 * MB, 2 * MB) == 5.0
    assert catch_up_seconds(0, 0) == 0.0
    assert catch_up_seconds(100, 0) is None
    assert catch_up_seconds(100, None) is None
    assert catch_up_seconds(None, 100.0) is None


def test_diff_in_messages_over_the_average_stored_size() -> None:
    assert diff_messages(2_000, 200.0) == 10
    assert diff_messages(2_050, 200.0) == 10
    assert diff_messages(0, None) == 0
    assert diff_messages(100, None) is None
    assert diff_messages(None, 200.0) is None


def test_pairing_by_host_then_by_offset() -> None:
    conns = [("10.0.0.3:51000", 900), ("10.0.0.2:51002", 1000)]
    slaves = [("10.0.0.2:10911", 1000), ("10.0.0.3:10911", 901), ("10.0.0.4:10911", None)]
    assert pair_slaves(conns, slaves) == [(0, 1), (1, 0), (None, 2)]
    same_host = [("127.0.0.1:5001", 100), ("127.0.0.1:5002", 5000)]
    assert pair_slaves(same_host, [("127.0.0.1:30011", 5000), ("127.0.0.1:30021", 99)]) == [(0, 1), (1, 0)]
    # one connection and one slave pair up even across addresses (NAT, a second interface)
    assert pair_slaves([("192.168.1.5:4000", 7)], [("10.0.0.9:10911", 7)]) == [(0, 0)]
    assert pair_slaves([("192.168.1.5:4000", 7)], []) == [(0, None)]


def view(**kw: object) -> SlaveView:
    base: dict[str, object] = {"broker_addr": "10.0.0.2:10911", "broker_id": 1, "master_ha_addr": "10.0.0.1:10912",
                               "max_offset": 1000, "transfer_bytes_per_s": 0.0, "last_read_ms": 1,
                               "last_write_ms": 1, "connected": True}
    return SlaveView(**{**base, **kw})  # type: ignore[arg-type]


def slave(diff: int = 0, *, speed: float = 0.0, in_sync: bool = True, trend: str | None = STEADY,
          slave_view: SlaveView | None = None, connection: str | None = "10.0.0.2:51000") -> SlaveReplication:
    return SlaveReplication(connection, 1000 - diff, diff, diff // 100, speed, catch_up_seconds(diff, speed),
                            in_sync, trend, 1000, [], slave_view or view())


def group(*slaves: SlaveReplication, role: str = "ASYNC_MASTER", error: str | None = None,
          master: str | None = "10.0.0.1:10911") -> ReplicationGroup:
    return ReplicationGroup("C", "broker-a", master, role, 1000, 1, 100.0, 2.0, list(slaves), error)


def failed(r: object) -> list[str]:
    return [c.name for c in r.checks if c.ok is False]  # type: ignore[attr-defined]


def test_in_sync_idle_slave_is_safe_and_sync_master_loses_nothing() -> None:
    r = assess(group(slave(0), role="SYNC_MASTER"))
    assert r.verdict == SAFE and r.safe is True and failed(r) == []
    assert (r.loss_bytes, r.loss_messages) == (0, 0)
    assert "loses no acknowledged message" in r.checks[-1].detail


def test_async_master_costs_up_to_the_diff() -> None:
    r = assess(group(slave(500, speed=1000.0)), max_diff=1000)
    assert r.verdict == SAFE and r.loss_bytes == 500 and r.loss_messages == 5
    assert "ASYNC_MASTER" in r.checks[-1].detail and "500 bytes" in r.checks[-1].detail


def test_no_slave_is_not_safe() -> None:
    r = assess(group())
    assert r.verdict == NOT_SAFE and failed(r) == ["slave connected"]


def test_a_stopped_slave_is_not_safe_even_when_the_master_counts_it_in_sync() -> None:
    r = assess(group(slave(0, slave_view=view(error="timed out after 2.0s"))))
    assert r.verdict == NOT_SAFE and failed(r) == ["slave answers"]


def test_far_behind_not_moving_and_growing_each_give_a_reason() -> None:
    r = assess(group(slave(5 * MB, speed=0.0, in_sync=True, trend=GROWING)), max_diff=MB)
    assert r.verdict == NOT_SAFE
    assert failed(r) == ["diff under bound", "catching up", "not falling behind"]
    slow = assess(group(slave(500_000, speed=10_000.0)), max_diff=MB, max_catchup_s=10)
    assert failed(slow) == ["catching up"]


def test_registered_but_unconnected_slave_is_not_safe() -> None:
    lone = SlaveReplication(None, None, None, None, None, None, None, None, None, [], view(connected=False))
    assert "slave connected" in failed(assess(group(lone)))


def test_the_best_slave_decides() -> None:
    r = assess(group(slave(0, slave_view=view(error="timeout")), slave(0, slave_view=view(broker_addr="h:2"))))
    assert r.verdict == SAFE and r.slave is not None and r.slave.slave is not None
    assert r.slave.slave.broker_addr == "h:2"


def test_unreachable_or_missing_master_is_unknown() -> None:
    assert assess(group(slave(0), error="timed out")).verdict == UNKNOWN
    r = assess(group(slave(0), master=None))
    assert r.verdict == UNKNOWN and r.safe is None and "no master" in r.checks[0].detail


def test_runtime_offsets_stand_in_for_the_ha_status_of_a_4x_master() -> None:
    """Apache 4.x has no GET_BROKER_HA_STATUS: a slave's diff is the master's max offset less its own (never
    below 0: the slave's offset may be read a moment after the master's), and a slave without one is left out."""
    status = status_from_offsets(5000, [("10.0.0.2:10911", 4200), ("10.0.0.3:10911", 5100), ("10.0.0.4:10911", None)])
    assert status.is_master and status.in_sync_slaves is None
    assert [(c.addr, c.ack_offset, c.diff_bytes, c.in_sync) for c in status.slaves] == [
        ("10.0.0.2:10911", 4200, 800, None), ("10.0.0.3:10911", 5100, 0, None)]


def test_offset_speed_over_the_window() -> None:
    assert offset_speed([(0.0, 1000), (0.5, 1500), (2.0, 3000)]) == 1000.0
    assert offset_speed([(0.0, 1000)]) is None
    assert offset_speed([(1.0, 1000), (1.0, 2000)]) is None


def test_a_4x_slave_that_answers_and_has_every_byte_is_safe() -> None:
    """From runtime info the slave's HA client state is unknown (connected None): answering with the
    master's offset is what there is, and the checks say where the figures came from."""
    g = ReplicationGroup("C", "broker-a", "10.0.0.1:10911", "SYNC_MASTER", 1000, None, 100.0, 2.0,
                         [SlaveReplication("10.0.0.2:10911", 1000, 0, 0, 0.0, 0.0, True, STEADY, None, [],
                                           view(connected=None, master_ha_addr=None))], None, RUNTIME_INFO)
    r = assess(g)
    assert r.verdict == SAFE and failed(r) == []
    details = {c.name: c.detail for c in r.checks}
    assert "runtime info" in details["slave connected"] and "haSlaveFallbehindMax" in details["in sync"]


def test_a_4x_slave_that_does_not_answer_is_not_safe() -> None:
    g = ReplicationGroup("C", "broker-a", "10.0.0.1:10911", "SYNC_MASTER", 1000, None, 100.0, 2.0,
                         [SlaveReplication(None, None, None, None, None, None, None, None, None, [],
                                           view(error="connect to 10.0.0.2:10911 failed", connected=None))],
                         None, RUNTIME_INFO)
    r = assess(g)
    assert r.verdict == NOT_SAFE and "slave answers" in failed(r)


def test_controller_mode_needs_the_slave_in_the_sync_state_set() -> None:
    from mqtools.client.admin.models.ha import ControllerState

    inside = ControllerState(["10.0.0.9:9878"], 0, 3, [0, 1], 4)
    r = assess(dataclasses.replace(group(slave(0), role="SYNC_MASTER"), controller=inside))
    assert r.verdict == SAFE and [c.ok for c in r.checks if c.name == "electable"] == [True]
    outside = dataclasses.replace(inside, sync_state_set=[0])
    r = assess(dataclasses.replace(group(slave(0), role="SYNC_MASTER"), controller=outside))
    assert r.verdict == NOT_SAFE and failed(r) == ["electable"]
    unknown = ControllerState(["10.0.0.9:9878"], None, None, [], None, error="connect refused")
    r = assess(dataclasses.replace(group(slave(0), role="SYNC_MASTER"), controller=unknown))
    assert r.verdict == UNKNOWN and failed(r) == ["controllers reachable"]  # nobody known to elect a new master


def test_a_hung_slave_the_master_dropped_is_not_in_sync_and_its_read_is_partial() -> None:
    """A registered slave with no HA connection at a master that answered is known not in sync (it was n/a), and a
    node of the group that did not answer makes `ha status` partial, named once (it exited 0 with the slave's own
    figures unknown)."""
    from mqtools.client.admin.ha import HA_STATUS, HAStatus, _group, _Target
    from mqtools.client.admin.models.ha_views import ha_status_view
    from mqtools.client.errors import RequestTimeoutError

    target = _Target("C", "broker-a", "10.0.0.1:10911", {1: "10.0.0.2:10911"})
    hung = RequestTimeoutError("request code 907 to 10.0.0.2:10911 timed out after 5.000s")
    lone = view(master_ha_addr=None, max_offset=None, transfer_bytes_per_s=None, last_read_ms=None,
                last_write_ms=None, connected=None, error=str(hung))
    g = _group(target, [(0.0, HAStatus(True, 1000, 0, [], None))], None, {}, [lone], 0.0, HA_STATUS,
               {"10.0.0.2:10911": hung})
    (s,) = g.slaves
    assert (s.connection, s.in_sync) == (None, False)
    shown = ha_status_view([g], 0.0)
    assert shown.document()["partial"] is True
    assert shown.document()["unreachable"] == [{"brokerName": "broker-a", "addr": "10.0.0.2:10911",
                                                 "reason": "timed out"}]
    assert not any("10.0.0.2:10911" in line for line in shown.footer)  # the partial line names it
    whole = _group(target, [(0.0, HAStatus(True, 1000, 0, [], None))], None, {}, [view(connected=False)], 0.0,
                   HA_STATUS, {})
    assert whole.unreachable == [] and not ha_status_view([whole], 0.0).partial
