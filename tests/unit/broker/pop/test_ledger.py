"""Revive decisions from records and a clock passed in (pop/ledger.py)."""

from __future__ import annotations

from mqtools.server.broker.pop.ledger import CARRY_BEHIND, ReviveLedger, destination
from mqtools.server.broker.pop.records import AckMsg, BatchAckMsg, PopCheckPoint

POP = 1_000_000


def ck(
    start: int, diffs: list[int], pop_time: int = POP, invisible: int = 1000, topic: str = "T"
) -> PopCheckPoint:
    return PopCheckPoint(
        topic=topic,
        cid="G",
        queue_id=0,
        start_offset=start,
        pop_time=pop_time,
        invisible_time=invisible,
        num=len(diffs),
        broker_name="b",
        queue_offset_diff=diffs,
    )


def ack(offset: int, start: int, pop_time: int = POP) -> AckMsg:
    return AckMsg(offset, start, "G", "T", 0, pop_time, "b")


def test_nothing_is_due_before_the_invisible_time_and_unacked_messages_are_after() -> None:
    ledger = ReviveLedger("b")
    ledger.add(ck(10, [0, 1, 2]), 0)
    ledger.add(ack(11, 10), 1)
    assert ledger.due(POP + 999) == []
    (due,) = ledger.due(POP + 1000)
    assert ledger.unacked(due) == [10, 12]
    assert ledger.next_revive_time() == POP + 1000
    ledger.done(due)
    assert ledger.due(POP + 5000) == [] and len(ledger) == 0


def test_a_fully_acknowledged_checkpoint_is_never_due() -> None:
    ledger = ReviveLedger("b")
    ledger.add(ck(10, [0, 2]), 0)
    ledger.add(BatchAckMsg(-1, 10, "G", "T", 0, POP, "b", ack_offset_list=[10, 12]), 1)
    assert ledger.due(POP + 10_000) == [] and len(ledger) == 0
    assert ledger.commit_offset() == 1


def test_acks_of_another_pop_or_offset_do_not_count() -> None:
    ledger = ReviveLedger("b")
    ledger.add(ck(10, [0]), 0)
    ledger.add(ack(10, 10, pop_time=POP + 1), 1)  # a later pop of the same offset (change of invisible time)
    ledger.add(ack(11, 10), 2)  # not one of this checkpoint's offsets
    (due,) = ledger.due(POP + 1000)
    assert ledger.unacked(due) == [10]


def test_the_progress_stays_before_the_oldest_pending_checkpoint() -> None:
    ledger = ReviveLedger("b", read_offset=4)
    assert ledger.commit_offset() == 4
    ledger.add(ck(10, [0], invisible=5000), 5)
    ledger.add(ck(11, [0], invisible=1000), 6)
    ledger.add(ack(99, 99), 7)
    assert ledger.commit_offset() == 4  # the checkpoint at 5 is pending
    (early,) = ledger.due(POP + 1000)  # the later record is due first: no head-of-line blocking
    assert early.start_offset == 11
    ledger.done(early)
    assert ledger.commit_offset() == 4
    ledger.add(ack(10, 10), 8)
    assert ledger.commit_offset() == 8


def test_an_ack_read_before_its_checkpoint_still_counts() -> None:
    ledger = ReviveLedger("b")
    ledger.add(ack(10, 10), 0)
    ledger.add(ck(10, [0]), 1)
    assert len(ledger) == 0


def test_a_replay_after_restart_rebuilds_the_same_decisions() -> None:
    records = [(ck(0, [0, 1]), 0), (ack(0, 0), 1), (ck(2, [0, 1]), 2), (ack(2, 2), 3), (ack(3, 2), 4)]
    first = ReviveLedger("b")
    for record, offset in records:
        first.add(record, offset)
    progress = first.commit_offset()
    assert progress == -1  # the checkpoint at 0 still waits for offset 1
    second = ReviveLedger("b", read_offset=progress)
    for record, offset in records[progress + 1 :]:
        second.add(record, offset)
    assert [second.unacked(c) for c in second.due(POP + 1000)] == [[1]]


def test_destination_is_the_retry_topic_then_the_dlq() -> None:
    normal = ck(0, [0])
    assert destination(normal, 0, 16).topic == "%RETRY%G_T"
    retry = ck(0, [0], topic="%RETRY%G_T")
    assert destination(retry, 3, 16).topic == "%RETRY%G_T"
    dead = destination(retry, 16, 16)
    assert dead.dead and dead.topic == "%DLQ%G"
    assert destination(normal, 1, 1).dead


def test_late_acks_do_not_pile_up(monkeypatch) -> None:
    monkeypatch.setattr("mqtools.server.broker.pop.ledger.MAX_ORPHAN_ACKS", 2)
    ledger = ReviveLedger("b")
    for i in range(3):
        ledger.add(ack(i, i), i)  # acks of checkpoints already revived
    ledger.add(ck(0, [0]), 3)  # the oldest orphan was dropped: this one stays pending
    ledger.add(ck(2, [0]), 4)  # the newest was kept: acknowledged at once
    assert [c.start_offset for c in ledger.due(POP + 1000)] == [0]


def test_every_fifth_pop_reads_the_retry_topic_first() -> None:
    from types import SimpleNamespace

    from mqtools.server.broker.pop.state import PopState

    state = SimpleNamespace(retry_share=20)
    assert [PopState.retry_first(state, n) for n in range(10)] == [n % 5 == 0 for n in range(10)]
    assert not any(PopState.retry_first(SimpleNamespace(retry_share=0), n) for n in range(10))
    assert all(PopState.retry_first(SimpleNamespace(retry_share=100), n) for n in range(10))


def test_a_checkpoint_far_behind_and_not_due_soon_is_carried_with_its_acks() -> None:
    """One POP with a long invisible time held the progress at its record: every record after it was read again
    at each start. Carried (written again at the end, its acks so far in its bits), it lets the progress move."""
    ledger = ReviveLedger("b")
    far = ck(10, [0, 1, 2], invisible=2 * 86_400_000)
    ledger.add(far, 0)
    ledger.add(ack(11, 10), 1)
    ledger.add(ck(20, [0], invisible=1000), 2)  # a short one: due soon, never carried
    ledger.skip_to(CARRY_BEHIND + 10)
    assert ledger.to_carry(POP) == [far]
    assert ledger.commit_offset() == -1
    carried = PopCheckPoint.from_json(far.to_json())  # the record as written again, its bits so far in it
    ledger.add(ack(12, 10), CARRY_BEHIND + 10)  # an ack between the two records counts too
    ledger.add(carried, CARRY_BEHIND + 11)
    (pending,) = [c for c in ledger.pending.values() if c.start_offset == 10]
    assert pending.revive_offset == CARRY_BEHIND + 11 and ledger.unacked(pending) == [10]
    assert ledger.to_carry(POP) == [] and ledger.commit_offset() == 1  # held only by the short one now
    assert ledger.due(POP + 1000)[0].start_offset == 20
