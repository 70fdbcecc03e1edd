"""The group judge on hand-made samples: each condition gives its verdict and no other."""

from __future__ import annotations

from mqtools.common.exitcodes import EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE
from mqtools.common.presentation import Unreachable
from mqtools.diagnose import group as G
from mqtools.diagnose.findings import Severity, exit_code
from mqtools.remoting.bodies import MessageQueue

T = "Orders"
QUEUES = [MessageQueue(T, "broker-a", q) for q in range(4)]
RETRY = MessageQueue("%RETRY%cg", "broker-a", 0)
WINDOW = 12.0


def sample(at: float, offsets: dict[MessageQueue, tuple[int, int]], members: list[G.Member] | None,
           dlq: int | None = None) -> G.GroupSample:
    return G.GroupSample(at, {mq: G.QueueSample(b, c, 1_000) for mq, (b, c) in offsets.items()}, members, dlq)


def member(cid: str, queues: list[MessageQueue], *, orderly: bool = False, locked: bool = False) -> G.Member:
    return G.Member(cid, "V4_9_8", orderly, {mq: G.HeldQueue(locked=locked) for mq in queues})


ALL = [member("c1", [*QUEUES, RETRY])]


def offsets(broker: int, consumer: int, retry: tuple[int, int] = (0, 0)) -> dict[MessageQueue, tuple[int, int]]:
    return {**{mq: (broker, consumer) for mq in QUEUES}, RETRY: retry}


def judged(first: G.GroupSample, last: G.GroupSample, *between: G.GroupSample) -> G.GroupDiagnosis:
    return G.judge("cg", [first, *between, last])


def test_healthy_when_the_backlog_shrinks_or_stays_low() -> None:
    d = judged(sample(0, offsets(1000, 500), ALL), sample(WINDOW, offsets(1100, 1000), ALL))
    assert (d.verdict, d.also, d.severity) == (G.HEALTHY, [], Severity.OK)
    assert d.lag == 400 and d.lag_at_start == 2000 and "shrinking" in d.summary
    assert d.drain_s is not None and d.drain_s > 0


def test_slow_when_consuming_slower_than_producing_past_the_threshold() -> None:
    d = judged(sample(0, offsets(10_000, 9_000), ALL), sample(WINDOW, offsets(12_000, 10_000), ALL))
    assert (d.verdict, d.also) == (G.SLOW, [])
    assert d.drain_s is None and "does not drain" in d.summary
    assert round(d.produce_tps or 0) == round(4 * 2000 / WINDOW) and round(d.consume_tps or 0) == round(4 * 1000 / WINDOW)


def test_stalled_names_the_queues_and_their_holder() -> None:
    first = offsets(1000, 900)
    last = offsets(1100, 1100)
    last[QUEUES[2]] = (1100, 900)  # no progress on one queue
    d = judged(sample(0, first, ALL), sample(WINDOW, last, ALL))
    assert (d.verdict, d.also) == (G.STALLED, [])
    assert "1 queue(s) made no progress" in d.summary and "c1" in d.summary
    stuck = [q for q in d.queues if q.consumed_per_s == 0.0 and q.lag]
    assert [q.queue for q in stuck] == [QUEUES[2]] and stuck[0].owner == "c1"


def test_no_stall_is_claimed_in_a_window_shorter_than_two_commit_periods() -> None:
    d = judged(sample(0, offsets(1000, 900), ALL), sample(4.0, offsets(1000, 900), ALL))
    assert d.verdict == G.HEALTHY


def test_unowned_queues_when_no_member_holds_them() -> None:
    half = [member("c1", [*QUEUES[:2], RETRY])]
    d = judged(sample(0, offsets(1000, 990), half), sample(WINDOW, offsets(1010, 1000), half))
    assert (d.verdict, d.also) == (G.UNOWNED, [])
    assert d.summary.startswith("2 queue(s) held by no online member")


def test_rebalancing_when_a_member_joins() -> None:
    two = [member("c1", QUEUES[:2]), member("c2", [*QUEUES[2:], RETRY])]
    d = judged(sample(0, offsets(1000, 990), ALL), sample(WINDOW, offsets(1010, 1005), two),
               sample(WINDOW / 2, offsets(1005, 1000), two))
    assert (d.verdict, d.also, d.severity) == (G.REBALANCING, [], Severity.INFO)
    assert "joined c2" in d.summary


def test_rebalancing_when_queues_change_hands() -> None:
    before = [member("c1", QUEUES[:2]), member("c2", [*QUEUES[2:], RETRY])]
    after = [member("c1", QUEUES[:3]), member("c2", [QUEUES[3], RETRY])]
    d = judged(sample(0, offsets(1000, 990), before), sample(WINDOW, offsets(1010, 1005), after))
    assert d.verdict == G.REBALANCING and "1 queue(s) changed hands" in d.summary


def test_blocked_by_retries_when_the_retry_queue_grows() -> None:
    d = judged(sample(0, offsets(1000, 990, (0, 0)), ALL, dlq=0),
               sample(WINDOW, offsets(1100, 1090, (400, 0)), ALL, dlq=0))
    assert (d.verdict, d.also) == (G.RETRIES, [])
    assert d.retry_growth == 400 and d.dlq_growth == 0


def test_blocked_by_retries_when_the_dlq_grows() -> None:
    d = judged(sample(0, offsets(1000, 990), ALL, dlq=3), sample(WINDOW, offsets(1010, 1000), ALL, dlq=5))
    assert d.verdict == G.RETRIES and d.dlq_growth == 2 and "dead-letter" in d.summary


def test_offline_when_no_member_is_online() -> None:
    d = judged(sample(0, offsets(1000, 900), []), sample(WINDOW, offsets(1100, 900), []))
    assert (d.verdict, d.also) == (G.OFFLINE, [])
    assert d.lag == 800 and "no member online" in d.summary


def test_stuck_orderly_queue_when_the_lock_holder_makes_no_progress() -> None:
    holder = [member("c1", [*QUEUES, RETRY], orderly=True, locked=True)]
    last = offsets(1100, 1100)
    last[QUEUES[1]] = (1100, 950)
    d = judged(sample(0, offsets(1000, 950), holder), sample(WINDOW, last, holder))
    assert (d.verdict, d.also) == (G.STUCK_ORDERLY, [])
    assert "held by c1" in d.summary


def test_unknown_names_what_is_missing() -> None:
    d = judged(sample(0, offsets(1000, 900), ALL), sample(WINDOW, offsets(1000, 900), None))
    assert d.verdict == G.UNKNOWN and d.severity == Severity.UNKNOWN and "GET_CONSUMER_CONNECTION_LIST" in d.summary


def test_an_unknown_verdict_still_names_the_sets_not_read() -> None:
    lost = Unreachable("broker-b", None, "no master registered; no slave registered")
    last = G.GroupSample(WINDOW, {mq: G.QueueSample(1000, 900, 1_000) for mq in QUEUES}, None, None, (lost,))
    doc = G.group_diagnosis_view(judged(sample(0, offsets(1000, 900), ALL), last)).document()
    assert (doc["verdict"], doc["partial"], doc["unreachable"]) == ("unknown", True, [lost.to_json()])


def test_json_keeps_unknowns_null() -> None:
    unknown_holdings = [G.Member("c1", None, None, None)]
    d = judged(sample(0, offsets(1000, 990), unknown_holdings), sample(WINDOW, offsets(1010, 1000), unknown_holdings))
    doc = d.to_json()
    assert doc["verdict"] == G.HEALTHY and all(q["owner"] is None for q in doc["queues"])
    assert doc["members"] == [{"clientId": "c1", "version": None, "orderly": None, "queuesHeld": None}]


def test_exit_code_by_the_worst_verdict() -> None:
    assert exit_code([Severity.OK, Severity.INFO]) == EXIT_OK
    assert exit_code([Severity.OK, Severity.UNKNOWN]) == EXIT_UNREACHABLE
    assert exit_code([Severity.UNKNOWN, Severity.ACTION, Severity.OK]) == EXIT_REFUSED


def test_queues_on_a_set_without_master_are_counted_and_judged() -> None:
    """broker-a's queues read from its slave (its master gone): counted in the lag, and the verdict says the
    consumers cannot commit there; a set not read at all is named."""
    def on_slave(at: float, consumer: int, unreachable: tuple[str, ...] = ()) -> G.GroupSample:
        queues = {mq: G.QueueSample(1000, consumer, 1_000, "slave") for mq in QUEUES}
        return G.GroupSample(at, queues, ALL, None, unreachable)

    d = judged(on_slave(0, 900), on_slave(WINDOW, 900))
    assert d.verdict == G.NO_MASTER and d.severity == Severity.ACTION and d.lag == 400
    assert d.summary.startswith("4 queue(s) with 400 message(s) waiting are on broker-a, which has no master")
    assert {q.to_json()["source"] for q in d.queues if q.queue in QUEUES} == {"slave"}
    assert "mq admin ha status" in d.actions
    lost = Unreachable("broker-b", "127.0.0.1:10921", "no master registered; slave 127.0.0.1:10921: timed out")
    gone = judged(sample(0, offsets(1000, 1000), ALL), G.GroupSample(WINDOW, {mq: G.QueueSample(1000, 1000, 1_000)
                                                                              for mq in QUEUES}, ALL, None, (lost,)))
    assert gone.verdict == G.NO_MASTER and "could not read broker-b at all" in gone.summary
    # the document says so too: its lag leaves broker-b's queues out
    view = G.group_diagnosis_view(gone)
    doc = view.document()
    assert (doc["partial"], doc["unreachable"]) == (True, [lost.to_json()])
    assert view.notes() == [f"partial: could not read {lost}"]
    assert G.group_diagnosis_view(d).document()["partial"] is False


def test_figures_summed_without_a_set_not_read_are_said_as_at_least() -> None:
    """A set not read at all leaves its queues out of the lag and its POP messages out of the count: the summary
    and the window's line say "at least", as `group progress` does."""
    lost = Unreachable("broker-b", "127.0.0.1:10931", "no master answering; the slave does not know the group yet")
    last = G.GroupSample(WINDOW, {mq: G.QueueSample(1000, 900, 1_000) for mq in QUEUES}, [], None, (lost,),
                         G.PopSample(16, 0, 0))
    d = judged(sample(0, offsets(1000, 900), []), last)
    assert d.verdict == G.OFFLINE and d.summary.startswith("no member online; at least 400 message(s) wait")
    footer = G.group_diagnosis_view(d).footer
    assert "lag at least 400 (was 400)" in footer[1] and footer[2].startswith("POP: at least 16 popped")
    whole = judged(sample(0, offsets(1000, 900), []), sample(WINDOW, offsets(1000, 900), []))
    assert "at least" not in whole.summary + " ".join(G.group_diagnosis_view(whole).footer)
    # every set read, one from a slave, which tracks no POP messages: the lag is whole, the POP count is not
    from_slave = G.GroupSample(WINDOW, {mq: G.QueueSample(1000, 900, 1_000) for mq in QUEUES}, [], None, (),
                               G.PopSample(16, 0, 0, complete=False))
    footer = G.group_diagnosis_view(judged(sample(0, offsets(1000, 900), []), from_slave)).footer
    assert "lag 400 (was 400)" in footer[1] and footer[2].startswith("POP: at least 16 popped")


def test_a_group_no_set_of_which_could_be_read_is_unknown_and_partial() -> None:
    lost = Unreachable("broker-a", "127.0.0.1:10911", "no master registered; slave: the slave does not know the group")
    d = G.unknown("cg", WINDOW, f"the group's consume stats: could not read {lost}", [lost])
    doc = G.group_diagnosis_view(d).document()
    assert (doc["verdict"], doc["lag"], doc["partial"], doc["unreachable"]) == ("unknown", None, True, [lost.to_json()])
    assert "the slave does not know the group" in doc["summary"]


def pop_sample(at: float, offsets: dict[MessageQueue, tuple[int, int]], pop: G.PopSample) -> G.GroupSample:
    pops = [G.Member("p1", "V5_5_0", False, {}), G.Member("p2", "V5_5_0", False, {})]  # POP members hold nothing
    return G.GroupSample(at, {mq: G.QueueSample(b, c, 1_000) for mq, (b, c) in offsets.items()}, pops, 0, (), pop)


def test_a_pop_group_acknowledging_in_time_is_healthy_and_never_unowned() -> None:
    d = judged(pop_sample(0, offsets(1000, 900), G.PopSample(30, 0, 5)),
               pop_sample(WINDOW, offsets(1100, 1090), G.PopSample(28, 0, 5)))
    assert (d.verdict, d.also) == (G.HEALTHY, [])
    assert d.to_json()["pop"] == {"inflight": 28, "reviveDue": 0, "revivedInWindow": 0}


def test_a_pop_group_whose_messages_come_back_is_not_acknowledging() -> None:
    d = judged(pop_sample(0, offsets(1000, 900), G.PopSample(100, 0, 0)),
               pop_sample(WINDOW, offsets(1100, 1100, retry=(40, 40)), G.PopSample(120, 12, 40)))
    assert d.verdict == G.NOT_ACKED
    assert d.summary == ("40 popped message(s) came back after their invisible time in 12 s; 12 wait past it: not "
                         "acknowledged in time; 120 popped and not acknowledged now")
    assert G.RETRIES in d.also and G.UNOWNED not in d.also
    assert d.actions[0] == "mq admin group progress cg  # POP: in flight, past their invisible time, revived"
    view = G.group_diagnosis_view(d)
    assert "POP: 120 popped and not acknowledged, 12 past their invisible time, 40 came back in the window" in view.footer


def test_a_pop_group_with_messages_past_their_invisible_time_only_is_not_acknowledging() -> None:
    d = judged(pop_sample(0, offsets(1000, 1000), G.PopSample(5, 0, 0)),
               pop_sample(WINDOW, offsets(1000, 1000), G.PopSample(5, 5, 0)))
    assert d.verdict == G.NOT_ACKED and d.summary.startswith("5 wait past it")
