"""Which front workers stop accepting for now (front/accept_gate.py): counts of client connections in, pauses out.
A worker more than SLACK connections above the least-loaded serving worker is paused, and resumed once within it;
a worker that is not serving is left out of the minimum; only changes come out."""

from __future__ import annotations

from mqtools.server.broker.front.accept_gate import SLACK, AcceptGate


def _gate(*counts: int) -> AcceptGate:
    gate = AcceptGate()
    for worker, count in enumerate(counts):
        gate.join(worker, count)
    return gate


def test_the_slack_is_one_connection() -> None:
    assert SLACK == 1


def test_a_worker_more_than_the_slack_above_the_least_loaded_is_paused_and_resumed_within_it() -> None:
    gate = _gate(0, 0)
    assert gate.count(0, 1) == {}  # one above: within the slack
    assert gate.count(0, 2) == {0: True}
    assert gate.paused == {0}
    assert gate.count(0, 3) == {}  # told already: only changes come out
    assert gate.count(1, 1) == {}  # 3 is still more than 1 + 1 above
    assert gate.count(1, 2) == {0: False}
    assert gate.paused == set()


def test_a_closed_connection_resumes_as_an_opened_one_does() -> None:
    gate = _gate(2, 0)
    assert gate.paused == {0}
    assert gate.count(0, 1) == {0: False}


def test_the_least_loaded_drops_and_several_are_paused_at_once() -> None:
    gate = _gate(3, 3, 3)
    assert gate.paused == set()
    assert gate.count(2, 1) == {0: True, 1: True}
    assert gate.paused == {0, 1}


def test_the_least_loaded_is_never_paused_so_never_every_worker() -> None:
    gate = _gate(0, 0, 0)
    for step, (worker, count) in enumerate([(0, 5), (1, 9), (2, 1), (0, 0), (2, 7), (1, 2), (0, 4), (2, 2)]):
        gate.count(worker, count)
        counts = gate.counts
        assert gate.paused == {w for w, n in counts.items() if n > min(counts.values()) + SLACK}, step
        assert len(gate.paused) < 3, step


def test_a_worker_not_serving_is_left_out_of_the_minimum() -> None:
    """A hung worker holding few connections must not keep the healthy ones from accepting."""
    gate = _gate(4, 0)
    assert gate.paused == {0}
    assert gate.serving(1, False) == {0: False}  # the least-loaded went silent: the other takes the new clients
    assert gate.count(0, 9) == {}
    assert gate.serving(1, True) == {0: True}  # it answers again: re-decided with it
    assert gate.paused == {0}


def test_a_worker_not_serving_keeps_its_last_verdict() -> None:
    """It accepts nothing anyway; telling it would only churn once it is back."""
    gate = _gate(0, 3, 0)
    assert gate.paused == {1}
    assert gate.serving(1, False) == {}
    assert gate.count(0, 5) == {0: True}
    assert gate.paused == {0, 1}  # 2 serves and is not paused
    assert gate.serving(2, False) == {0: False}  # 0 is now the least-loaded serving worker


def test_no_worker_serving_pauses_nothing() -> None:
    gate = _gate(0, 0)
    gate.serving(0, False)
    assert gate.serving(1, False) == {}
    assert gate.count(0, 10) == {}
    assert gate.paused == set()


def test_a_worker_that_left_is_forgotten_and_one_started_again_accepts() -> None:
    gate = _gate(5, 0)
    assert gate.paused == {0}
    assert gate.leave(1) == {0: False}  # it died: the one left takes every new client
    assert gate.counts == {0: 5}
    assert gate.join(1, 0) == {0: True}  # started again: a new process accepts, the loaded one waits
    gate = _gate(0, 5)
    assert gate.leave(1) == {}  # a paused worker that died is not told anything
    assert gate.join(1, 0) == {}  # its new process accepts from the start (nothing to tell it)
    assert gate.paused == set()


def test_connections_counted_before_the_worker_joined_are_kept() -> None:
    """A new worker's first OPENs can reach the store in the same read as its HELLO, before it is counted serving."""
    gate = _gate(0)
    assert gate.count(1, 3) == {}  # not serving yet: no verdict on it
    assert gate.join(1, 3) == {1: True}
