"""Typed results about transactional messages: the transactions a broker holds open, and their document."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from mqtools.common.presentation import Column, Unreachable, View, renders, when


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    """A half message no END_TRANSACTION has settled yet."""

    broker_name: str
    producer_group: str | None
    topic: str | None
    """The topic the message goes to once committed (REAL_TOPIC)."""
    msg_id: str
    born_timestamp: int
    age_ms: int
    checks: int
    """How many times the broker has asked the producer group about it (TRANSACTION_CHECK_TIMES)."""


@dataclass(frozen=True, slots=True)
class BrokerTransactions:
    broker_name: str
    broker_addr: str
    open: list[OpenTransaction]
    scanned: int
    """Half messages read past the check service's progress."""
    cut: bool
    """More half messages were left unread (MAX_SCAN)."""
    error: str | None = None
    """Why this broker's transactions are not known (it refused or did not answer, or its set has no master);
    `open` is then empty."""


@renders("OpenTransactions")
def open_transactions_view(brokers: list[BrokerTransactions], group: str | None = None) -> View:
    """Every broker's scan, and the open transactions (only those of producer group `group` when given); partial
    when some broker's are not known."""
    open_ = [t for b in brokers for t in b.open if group is None or t.producer_group == group]
    rows = [[t.broker_name, t.producer_group, t.topic, t.msg_id, when(t.born_timestamp),
             round(t.age_ms / 1000, 1), t.checks] for t in open_]
    per_group = Counter(t.producer_group for t in open_)
    footer = [f"{n} open in producer group {g}" for g, n in sorted(per_group.items(), key=lambda e: str(e[0]))]
    footer += [f"{b.broker_name}: more than {b.scanned} half messages; only those were read" for b in brokers
               if b.cut]
    if not brokers:
        footer.append("no broker has stored a transactional message")
    data = {"brokers": [{"brokerName": b.broker_name, "brokerAddr": b.broker_addr, "scanned": b.scanned,
                         "cut": b.cut, "error": b.error} for b in brokers],
            "transactions": [{"brokerName": t.broker_name, "producerGroup": t.producer_group, "topic": t.topic,
                              "msgId": t.msg_id, "bornTimestamp": t.born_timestamp, "ageMs": t.age_ms,
                              "checks": t.checks} for t in open_]}
    return View("OpenTransactions", [Column("BROKER"), Column("PRODUCER GROUP"), Column("TOPIC"), Column("MSG ID"),
                                     Column("BORN"), Column("AGE S", True), Column("CHECKS", True)],
                rows, data, footer=footer,
                unreachable=[Unreachable(b.broker_name, b.broker_addr, b.error) for b in brokers if b.error])
