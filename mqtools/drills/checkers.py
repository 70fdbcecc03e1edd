"""What a history says about the data: sent, acknowledged, failed, lost, duplicated, reordered.

Pure functions of a `History`, so a saved history is re-checked offline with the same result.
Definitions (a message is its drill id):
- acknowledged: the send returned a result (SEND_OK, or stored with a not-OK status such as
  SLAVE_NOT_AVAILABLE); failed: a definite refusal; unknown: no answer, so it may have been stored.
- lost: acknowledged and never consumed. duplicated: consumed more than once; split into
  redelivered (the same stored message, i.e. the same broker/queue/offset, handed out again: a consumer
  offset went back) and stored twice (a producer retry after an unanswered attempt stored a second copy).
- recovered: unknown but consumed. unexpected: consumed but never sent by this drill.
  failed but consumed: a send reported as definitely failed whose message arrived anyway (a client lie).
- order (with sharding keys): B violates order when some A of the same key was acknowledged before B
  was sent (real-time precedence, as Jepsen's queue checkers use it) yet B was first consumed before A.
- offset regression (apache/rocketmq#1094): when a master returns, the committed offsets it serves are
  compared with its slave's, which consumers committed to while it was away.
- ASYNC_MASTER loss: every lost message should lie beyond the slave's commitlog offset at the fault.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from mqtools.drills.history import FAIL, OK, UNKNOWN, History, Op
from mqtools.remoting.codes import code_name

SHOWN_IDS = 20
"""Ids listed per category in a report (the counts are always complete)."""


@dataclass(slots=True)
class OrderCheck:
    keys: int
    violations: int
    per_key: dict[str, int]
    examples: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class Regression:
    """Committed offsets a returning master served below its slave's, summed over queues."""

    returns: int
    queues: int
    messages: int
    detail: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class LossExplanation:
    """An ASYNC_MASTER fault: what the slave had when its master went away."""

    broker: str
    slave_offset: int
    acked_beyond: int
    explained: int
    unexplained: int
    unexplained_ids: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Integrity:
    sent: int = 0
    acked: int = 0
    acked_not_ok: dict[str, int] = field(default_factory=dict)
    failed: int = 0
    failed_by_code: dict[str, int] = field(default_factory=dict)
    unknown: int = 0
    consumed: int = 0
    consumed_unique: int = 0
    lost: list[str] = field(default_factory=list)
    lost_not_ok: list[str] = field(default_factory=list)
    """Of `lost`, those answered stored-but-not-OK (FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE)."""
    duplicated: list[str] = field(default_factory=list)
    duplicate_deliveries: int = 0
    redelivered: int = 0
    stored_twice: int = 0
    recovered: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    failed_but_consumed: list[str] = field(default_factory=list)
    order: OrderCheck | None = None
    regression: Regression | None = None
    loss: LossExplanation | None = None

    def to_json(self) -> dict[str, Any]:
        def ids(values: list[str]) -> dict[str, Any]:
            return {"count": len(values), "ids": values[:SHOWN_IDS]}

        return {
            "sent": self.sent, "acked": self.acked, "ackedNotOk": self.acked_not_ok, "failed": self.failed,
            "failedByCode": self.failed_by_code, "unknown": self.unknown, "consumed": self.consumed,
            "consumedUnique": self.consumed_unique, "lost": ids(self.lost), "lostNotOk": ids(self.lost_not_ok),
            "duplicated": ids(self.duplicated),
            "duplicateDeliveries": self.duplicate_deliveries, "redelivered": self.redelivered,
            "storedTwice": self.stored_twice, "recovered": ids(self.recovered),
            "unexpected": ids(self.unexpected), "failedButConsumed": ids(self.failed_but_consumed),
            "order": None if self.order is None else {
                "keys": self.order.keys, "violations": self.order.violations, "perKey": self.order.per_key,
                "examples": self.order.examples},
            "offsetRegression": None if self.regression is None else {
                "returns": self.regression.returns, "queues": self.regression.queues,
                "messages": self.regression.messages, "detail": self.regression.detail},
            "asyncLoss": None if self.loss is None else {
                "broker": self.loss.broker, "slaveOffset": self.loss.slave_offset,
                "ackedBeyond": self.loss.acked_beyond, "explained": self.loss.explained,
                "unexplained": self.loss.unexplained, "unexplainedIds": self.loss.unexplained_ids[:SHOWN_IDS]},
        }


def failure_label(op: Op) -> str:
    """`17 TOPIC_NOT_EXIST` for a refusal with a code, else the client-side error's class."""
    if op.code is not None:
        return f"{op.code} {code_name(op.code, response=True)}"
    return (op.error or "error").split(":", 1)[0]


def check(history: History) -> Integrity:
    sends = history.sends()
    receives = history.receives()
    out = Integrity(sent=len(sends))
    by_result: dict[str, set[str]] = {OK: set(), FAIL: set(), UNKNOWN: set()}
    for op in sends:
        by_result[op.result].add(op.id)
        if op.result == OK:
            out.acked += 1
            if op.status and op.status != "SEND_OK":
                out.acked_not_ok[op.status] = out.acked_not_ok.get(op.status, 0) + 1
        elif op.result == FAIL:
            out.failed += 1
            label = failure_label(op)
            out.failed_by_code[label] = out.failed_by_code.get(label, 0) + 1
        else:
            out.unknown += 1
    deliveries = Counter(r.id for r in receives)
    positions: dict[str, set[tuple[Any, ...]]] = defaultdict(set)
    for r in receives:
        positions[r.id].add((r.broker, r.queue, r.offset))
    sent_ids = {op.id for op in sends}
    out.consumed = len(receives)
    out.consumed_unique = len(deliveries)
    out.lost = sorted(by_result[OK] - deliveries.keys())
    not_ok = {op.id for op in sends if op.result == OK and op.status and op.status != "SEND_OK"}
    out.lost_not_ok = [i for i in out.lost if i in not_ok]
    out.duplicated = sorted(i for i, n in deliveries.items() if n > 1)
    out.duplicate_deliveries = sum(n - 1 for n in deliveries.values() if n > 1)
    out.stored_twice = sum(len(p) - 1 for i, p in positions.items() if deliveries[i] > 1)
    out.redelivered = out.duplicate_deliveries - out.stored_twice
    out.recovered = sorted(by_result[UNKNOWN] & deliveries.keys())
    out.unexpected = sorted(deliveries.keys() - sent_ids)
    out.failed_but_consumed = sorted(by_result[FAIL] & deliveries.keys())
    if history.meta.get("settings", {}).get("keys"):
        out.order = check_order(sends, receives)
    out.regression = check_regression(history)
    out.loss = explain_loss(history, out.lost, sends, receives)
    return out


def check_order(sends: list[Op], receives: list[Op]) -> OrderCheck:
    """Per key: B violates when an A acknowledged before B was invoked was first consumed after B."""
    first: dict[str, float] = {}
    for r in receives:
        if r.id not in first or r.complete < first[r.id]:
            first[r.id] = r.complete
    per_key: dict[str, list[Op]] = defaultdict(list)
    for op in sends:
        if op.result == OK and op.key is not None and op.id in first:
            per_key[op.key].append(op)
    counts: dict[str, int] = {}
    examples: list[dict[str, Any]] = []
    for key, ops in per_key.items():
        by_complete = sorted(ops, key=lambda o: o.complete)
        latest_first: tuple[float, Op] | None = None
        i = 0
        bad = 0
        for b in sorted(ops, key=lambda o: o.invoke):
            while i < len(by_complete) and by_complete[i].complete < b.invoke:
                a = by_complete[i]
                if latest_first is None or first[a.id] > latest_first[0]:
                    latest_first = (first[a.id], a)
                i += 1
            if latest_first is not None and latest_first[0] > first[b.id]:
                bad += 1
                if len(examples) < SHOWN_IDS:
                    a = latest_first[1]
                    examples.append({"key": key, "earlier": a.id, "earlierSeq": a.seq, "later": b.id,
                                     "laterSeq": b.seq})
        if bad:
            counts[key] = bad
    return OrderCheck(len(per_key), sum(counts.values()), dict(sorted(counts.items())), examples)


def check_regression(history: History) -> Regression | None:
    """From the `offsets-at-return` events: None when no master returned during the drill, or when the offsets a
    returning master served could not be read (not known, never counted as 0)."""
    returns = [e for e in history.events if e.name == "offsets-at-return"]
    if not returns or any(e.data.get("master", {}) is None for e in returns):
        return None
    queues = messages = 0
    detail = []
    for ev in returns:
        master = ev.data.get("master") or {}
        for queue, slave_offset in sorted((ev.data.get("slave") or {}).items()):
            served = master.get(queue, 0)
            if slave_offset is not None and slave_offset > (served or 0):
                queues += 1
                messages += slave_offset - (served or 0)
                detail.append({"time": ev.time, "queue": queue, "master": served, "slave": slave_offset})
    return Regression(len(returns), queues, messages, detail)


def beyond_slave(history: History, sends: list[Op], receives: list[Op]) -> tuple[str, int, set[str]] | None:
    """An ASYNC_MASTER fault: (broker, the slave's commitlog offset at the fault, the acknowledged sends that
    lay beyond it), or None when the drill recorded no such offset."""
    ev = history.first_event("slave-offset")
    if ev is None or ev.data.get("role") != "ASYNC_MASTER" or ev.data.get("offset") is None:
        return None
    broker = str(ev.data["broker"])
    slave_offset = int(ev.data["offset"])
    # A send's stored size is not in its answer; the largest delivered one of that broker stands in (the
    # drill's messages differ by a few property bytes), so a message straddling the offset counts as beyond.
    size = max((r.size for r in receives if r.broker == broker and r.size), default=0)
    return broker, slave_offset, {op.id for op in sends if op.result == OK and op.broker == broker
                                  and op.commitlog_offset is not None and op.invoke <= ev.time
                                  and op.commitlog_offset + size > slave_offset}


def explain_loss(history: History, lost: list[str], sends: list[Op], receives: list[Op]) -> LossExplanation | None:
    """For an ASYNC_MASTER fault: lost messages should be those the slave had not replicated."""
    found = beyond_slave(history, sends, receives)
    if found is None:
        return None
    broker, slave_offset, beyond = found
    explained = [i for i in lost if i in beyond]
    unexplained = [i for i in lost if i not in beyond]
    return LossExplanation(broker, slave_offset, len(beyond), len(explained), len(unexplained), unexplained)
