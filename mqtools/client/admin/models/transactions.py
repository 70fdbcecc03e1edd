"""Typed results about transactional messages: the transactions a broker holds open."""

from __future__ import annotations

from dataclasses import dataclass


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
    """Why this broker's transactions are not known (it refused or did not answer); `open` is then empty."""
