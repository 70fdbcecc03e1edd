"""GET_POP_IN_FLIGHT's figures from the revive ledgers and the FIFO table, with stand-ins for the broker."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from mqtools.remoting.pop_stats import PopInFlightBody, PopQueueInFlight
from mqtools.server.broker.pop.ledger import ReviveLedger
from mqtools.server.broker.pop.order import ConsumerOrderInfoManager
from mqtools.server.broker.pop.records import AckMsg, PopCheckPoint
from mqtools.server.broker.processors.pop_stats import PopStatsProcessor

NOW = 1_700_000_100_000


def processor(ledgers: dict[int, ReviveLedger], order: ConsumerOrderInfoManager, popped: set[tuple[str, str]], *,
              slave: bool = False, revived: dict[str, int] | None = None) -> PopStatsProcessor:
    state = SimpleNamespace(revive=SimpleNamespace(ledgers=ledgers, revived=revived or {}), order=order,
                            popped_topics=lambda g: {t for grp, t in popped if grp == g})
    broker = SimpleNamespace(config=SimpleNamespace(is_slave=slave), clock=lambda: NOW / 1000)
    return PopStatsProcessor(SimpleNamespace(s=state, c=broker))  # type: ignore[arg-type]


def ck(topic: str, group: str, qid: int, start: int, num: int, pop_time: int, invisible: int) -> PopCheckPoint:
    return PopCheckPoint(topic, group, qid, start, pop_time, invisible, num, "broker-a")


def test_unacked_messages_are_in_flight_until_their_invisible_time_then_revive_due(tmp_path: Path) -> None:
    ledger = ReviveLedger("broker-a")
    ledger.add(ck("T", "G", 0, 10, 4, NOW - 1000, 60_000), 0)  # invisible for another 59 s
    ledger.add(ck("T", "G", 1, 0, 2, NOW - 5000, 1000), 1)  # invisible time over 4 s ago
    ledger.add(ck("T", "Other", 0, 0, 3, NOW, 60_000), 2)
    ledger.add(AckMsg(11, 10, "G", "T", 0, NOW - 1000, "broker-a"), 3)  # one of the four acknowledged
    body = processor({0: ledger}, ConsumerOrderInfoManager(tmp_path), {("G", "T")}, revived={"G": 7}).collect("G", None, NOW)
    assert body == PopInFlightBody(True, True, 7, [PopQueueInFlight("T", 0, 3, 0), PopQueueInFlight("T", 1, 0, 2)])
    assert processor({0: ledger}, ConsumerOrderInfoManager(tmp_path), set()).collect("G", "U", NOW).queues == []  # another topic


def test_fifo_batches_count_while_they_hold_their_queue(tmp_path: Path) -> None:
    order = ConsumerOrderInfoManager(tmp_path)
    order.on_pop(("T", "G", 2), NOW - 1000, 30_000, [5, 6, 7], 8)
    order.ack(("T", "G", 2), 5, NOW - 1000)
    order.on_pop(("T", "G", 3), NOW - 40_000, 30_000, [1], 2)  # expired: comes again, not in flight
    body = processor({0: ReviveLedger("broker-a")}, order, set()).collect("G", None, NOW)
    assert body.queues == [PopQueueInFlight("T", 2, 2, 0, orderly=True)] and body.popped


def test_a_slave_says_it_does_not_track_and_a_group_that_never_popped_says_so(tmp_path: Path) -> None:
    assert processor({}, ConsumerOrderInfoManager(tmp_path), set(), slave=True).collect("G", None, NOW).tracked is False
    quiet = processor({0: ReviveLedger("broker-a")}, ConsumerOrderInfoManager(tmp_path), set()).collect("G", None, NOW)
    assert quiet == PopInFlightBody(True, False, 0, [])
