"""The drill checkers on hand-made histories: each anomaly is found, a clean history passes."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mqtools.drills.checkers import check
from mqtools.drills.history import FAIL, OK, RECEIVE, SEND, UNKNOWN, History, Op
from mqtools.drills.report import build
from mqtools.drills.scenarios import Criteria
from mqtools.drills.timeline import analyze

FAULT_AT = 2.0


def history(keys: int = 0, criteria: Criteria | None = None, **meta: Any) -> History:
    h = History(meta={"scenario": "kill-master", "settings": {"keys": keys},
                      "criteria": replace(criteria or Criteria(), toolkit_truth=False).to_json(), **meta})
    h.event(0.0, "load-start")
    h.event(FAULT_AT, "fault", "SIGKILL broker-a")
    h.event(4.0, "load-end")
    return h


def send(h: History, i: int, *, at: float | None = None, result: str = OK, key: str | None = None,
         broker: str = "broker-b", offset: int | None = None, commitlog: int | None = None,
         took: float = 0.01) -> str:
    """Send number i, invoked at `at` (default i/100 s) and acknowledged `took` later."""
    start = at if at is not None else i / 100
    msg = f"run-{i:04d}"
    h.ops.append(Op("producer-0", SEND, msg, start, start + took, result, key=key, seq=i, planned=start,
                    broker=broker if result == OK else None, queue=i % 4 if result == OK else None,
                    offset=(offset if offset is not None else i) if result == OK else None,
                    commitlog_offset=commitlog, code=17 if result == FAIL else None,
                    error="MQBrokerError: CODE: 17 DESC: no topic" if result == FAIL else None))
    return msg


def receive(h: History, msg: str, at: float, *, broker: str = "broker-b", queue: int = 0, offset: int = 0,
            key: str | None = None) -> None:
    h.ops.append(Op("consumer-0", RECEIVE, msg, at, at, OK, key=key, broker=broker, queue=queue, offset=offset,
                    size=400))


def clean(n: int = 20) -> History:
    h = history()
    for i in range(n):
        msg = send(h, i)
        receive(h, msg, i / 100 + 0.05, offset=i)
    return h


def test_a_clean_history_passes() -> None:
    h = clean()
    integrity = check(h)
    assert (integrity.sent, integrity.acked, integrity.consumed_unique) == (20, 20, 20)
    assert not (integrity.lost or integrity.duplicated or integrity.recovered or integrity.unexpected)
    report = build(h)
    assert report.passed, [r.text for r in report.reasons]
    assert report.timeline.rto == 0.0 and not report.timeline.unavailable


def test_an_acknowledged_message_never_consumed_is_lost() -> None:
    h = clean()
    gone = send(h, 99, at=1.0)
    integrity = check(h)
    assert integrity.lost == [gone]
    report = build(h)
    assert not report.passed
    assert any(not r.ok and r.text.startswith("lost 1") for r in report.reasons)


def test_duplicates_split_into_redelivered_and_stored_twice() -> None:
    h = clean()
    receive(h, "run-0003", 3.5, offset=3)            # the same stored message again: an offset went back
    receive(h, "run-0004", 3.6, offset=1000)         # a second stored copy (a producer retry)
    integrity = check(h)
    assert integrity.duplicated == ["run-0003", "run-0004"]
    assert (integrity.duplicate_deliveries, integrity.redelivered, integrity.stored_twice) == (2, 1, 1)
    assert build(h).passed  # at-least-once: duplicates are reported, not judged, unless a bound is set
    strict = history(criteria=Criteria(max_duplicates=0))
    strict.ops = h.ops
    assert not build(strict).passed


def test_an_unknown_send_that_was_consumed_is_recovered_not_lost() -> None:
    h = clean()
    maybe = send(h, 50, at=FAULT_AT + 0.1, result=UNKNOWN, took=3.0)
    receive(h, maybe, 3.9, offset=50)
    never = send(h, 51, at=FAULT_AT + 0.2, result=UNKNOWN, took=3.0)
    integrity = check(h)
    assert integrity.recovered == [maybe]
    assert never not in integrity.lost and integrity.unknown == 2


def test_a_message_consumed_but_never_sent_is_unexpected() -> None:
    h = clean()
    receive(h, "foreign:ABC", 1.0, offset=77)
    integrity = check(h)
    assert integrity.unexpected == ["foreign:ABC"]
    assert not build(h).passed


def test_a_failed_send_that_arrives_anyway_is_reported() -> None:
    h = clean()
    liar = send(h, 60, at=1.5, result=FAIL)
    receive(h, liar, 1.7, offset=60)
    integrity = check(h)
    assert integrity.failed == 1 and integrity.failed_by_code == {"17 TOPIC_NOT_EXIST": 1}
    assert integrity.failed_but_consumed == [liar]


def test_order_violation_per_key_uses_real_time_precedence() -> None:
    h = history(keys=2)
    a = send(h, 0, at=0.10, key="k0")
    b = send(h, 2, at=0.20, key="k0")        # sent after a was acknowledged
    c = send(h, 4, at=0.205, key="k0", took=0.2)  # concurrent with nothing earlier that is out of order
    d = send(h, 1, at=0.10, key="k1")
    e = send(h, 3, at=0.105, key="k1")       # invoked before d was acknowledged: concurrent, no order owed
    receive(h, b, 0.50, key="k0", offset=1)
    receive(h, a, 0.60, key="k0", offset=0)  # a acknowledged before b was sent, yet consumed after b
    receive(h, c, 0.70, key="k0", offset=2)
    receive(h, e, 0.50, key="k1", offset=1)
    receive(h, d, 0.60, key="k1", offset=0)
    order = check(h).order
    assert order is not None
    assert order.violations == 1 and order.per_key == {"k0": 1}
    assert order.examples[0]["earlier"] == a and order.examples[0]["later"] == b


def test_no_order_check_without_keys() -> None:
    assert check(clean()).order is None


def test_rto_is_first_failure_invoke_to_next_success_completion() -> None:
    h = clean()
    send(h, 70, at=2.05, result=FAIL, took=0.5)    # fails at 2.55
    send(h, 71, at=2.10, result=UNKNOWN, took=3.0)
    ok = send(h, 72, at=2.80, took=0.3)            # first success after the failure: completes 3.10
    receive(h, ok, 3.2, offset=72)
    timeline = analyze(h)
    assert timeline.unavailable and timeline.rto == round(3.10 - 2.05, 3)
    labels = {m.label: m.at for m in timeline.moments}
    assert labels["first client error"] == round(2.55 - FAULT_AT, 3)


def test_offset_regression_from_a_returning_master() -> None:
    h = clean()
    h.event(3.0, "offsets-at-return", master={"0": 10, "1": 12}, slave={"0": 15, "1": 12})
    regression = check(h).regression
    assert regression is not None and (regression.queues, regression.messages) == (1, 5)
    judged = history(criteria=Criteria(max_regression=0))
    judged.ops, judged.events = h.ops, h.events
    assert not build(judged).passed


def test_offsets_a_returning_master_did_not_give_are_unknown_not_a_regression_from_0() -> None:
    h = clean()
    h.event(3.0, "offsets-at-return", master=None, slave=None)
    assert check(h).regression is None
    judged = history(criteria=Criteria(max_regression=0))
    judged.ops, judged.events = h.ops, h.events
    report = build(judged)
    assert not report.passed and any(not r.ok and "could not be read" in r.text for r in report.reasons)


def test_async_loss_is_explained_by_the_slave_offset_at_the_fault() -> None:
    h = history(criteria=Criteria(max_lost=None, loss_explained=True))
    for i in range(10):
        msg = send(h, i, broker="broker-a", commitlog=i * 400)
        receive(h, msg, i / 100 + 0.05, broker="broker-a", offset=i)
    beyond = send(h, 10, at=1.9, broker="broker-a", commitlog=4000)  # acknowledged, never replicated
    h.event(2.3, "slave-offset", broker="broker-a", offset=4000, role="ASYNC_MASTER")
    integrity = check(h)
    assert integrity.lost == [beyond]
    assert integrity.loss is not None and (integrity.loss.explained, integrity.loss.unexplained) == (1, 0)
    assert build(h).passed
    replicated = send(h, 11, at=1.95, broker="broker-a", commitlog=3000)  # the slave had this one
    integrity = check(h)
    assert integrity.loss is not None and integrity.loss.unexplained == 1
    assert not build(h).passed and replicated in integrity.loss.unexplained_ids


def _elected(h: History, *, writers: list[tuple[float, str]], elections: list[float]) -> None:
    for at in elections:
        h.event(at, "master-elected", "broker 2 master of broker-a, epoch 2")
    for i, (at, host) in enumerate(writers):
        send(h, i, at=at, broker="broker-a")
        h.ops[-1].store_host = host


def test_controller_mode_figures_and_criteria() -> None:
    criteria = Criteria(max_group_rto=1.0, split_brain=True)
    h = history(criteria=criteria, target={"brokerName": "broker-a"})
    _elected(h, writers=[(1.0, "a:1"), (1.9, "a:1"), (FAULT_AT + 0.2, "b:1"), (FAULT_AT + 0.8, "b:1")],
             elections=[FAULT_AT + 0.1])
    t = analyze(h)
    assert (t.election, t.group_rto, t.writers, t.elections) == (0.1, 0.21, ["a:1", "b:1"], 1)
    assert not t.split_brain
    report = build(h)
    assert [r.text for r in report.reasons if "group write RTO" in r.text] == ["group write RTO 0.210s <= 1s"]
    assert any(r.ok and "one master at a time" in r.text for r in report.reasons)


def test_writers_alternating_without_elections_is_split_brain_and_a_late_group_fails() -> None:
    h = history(criteria=Criteria(max_group_rto=0.5, split_brain=True), target={"brokerName": "broker-a"})
    _elected(h, writers=[(1.0, "a:1"), (FAULT_AT + 1.0, "b:1"), (FAULT_AT + 1.2, "a:1")], elections=[FAULT_AT + 0.9])
    t = analyze(h)
    assert t.split_brain and t.writers == ["a:1", "b:1", "a:1"]
    failing = [r.text for r in build(h).reasons if not r.ok]
    assert any("two masters acknowledged writes in one epoch" in text for text in failing)
    assert any(text.startswith("group write RTO 1.010s") for text in failing)


def test_a_group_that_never_takes_a_write_again_fails_the_group_rto() -> None:
    h = history(criteria=Criteria(max_group_rto=5.0), target={"brokerName": "broker-a"})
    _elected(h, writers=[(1.0, "a:1")], elections=[])
    assert analyze(h).group_rto is None and analyze(h).election is None
    assert "the target group never acknowledged a send begun after the fault" in \
        [r.text for r in build(h).reasons if not r.ok]
