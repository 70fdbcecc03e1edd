"""`mq top`'s HA notes for a controller-mode set: an election that found no master leaves the set unwritable."""

from __future__ import annotations

from mqtools.client.admin.models.controller import ElectionEvent
from mqtools.client.admin.models.ha import ControllerState, ControllerView
from mqtools.live.ha_view import _controller_notes

STATE = ControllerState(["c0:9878"], None, 5, [1], 6)


def test_an_election_that_found_no_master_reads_still_unwritable() -> None:
    """It read `unwritable 10.000s` (at - down_since), though the set still had no master."""
    nobody = ElectionEvent(1_700_000_010_000, "broker-a", 0, None, 5, "controller", 1_700_000_000_000)
    lines = _controller_notes("broker-a", ControllerView(STATE, "c0:9878", [nobody]))
    assert lines[-1].endswith("master 0 -> none, epoch 5, controller, still unwritable")
    elected = ElectionEvent(1_700_000_020_000, "broker-a", None, 1, 6, "controller", 1_700_000_000_000)
    lines = _controller_notes("broker-a", ControllerView(STATE, "c0:9878", [nobody, elected]))
    assert lines[-2].endswith("master 0 -> none, epoch 5, controller, unwritable n/a")
    assert lines[-1].endswith("master none -> 1, epoch 6, controller, unwritable 20.000s")


def test_controllers_not_answering_read_as_a_partial_view() -> None:
    """With every controller down the note read "controller mode, the controllers cannot be asked", unlike every
    other read that left something out: now the shared `partial:` line, naming what did not answer."""
    from mqtools.common.presentation import Unreachable

    down = ControllerState(["c0:9878", "c1:9878"], None, None, [], None, "timed out",
                           unreachable=[Unreachable(None, "c0:9878", "timed out"),
                                        Unreachable(None, "c1:9878", "connection refused")])
    (line,) = _controller_notes("broker-a", ControllerView(down, None, None))
    assert line.startswith("partial: could not read c0:9878: timed out; c1:9878: connection refused")
    assert "broker-a is in controller mode: its epoch and SyncStateSet are unknown" in line
    unnamed = ControllerState([], None, None, [], None, "no controller address")
    (line,) = _controller_notes("broker-a", ControllerView(unnamed, None, None))
    assert line.startswith("partial: could not read broker-a: controllers: no controller address")
