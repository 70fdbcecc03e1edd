"""The transactional drill's journals as history operations, and the report's verdict on them."""

from __future__ import annotations

import json
from pathlib import Path

from mqtools.drills.history import FAIL, OK, RECEIVE, UNKNOWN, History, Op
from mqtools.drills.load import LoadSpec
from mqtools.drills.report import build
from mqtools.drills.scenarios import SCENARIOS
from mqtools.drills.txn_load import TransactionLoad, check_back


def journal(directory: Path, name: str, *entries: dict, torn: bool = False) -> None:
    text = "".join(json.dumps(e) + "\n" for e in entries)
    (directory / f"{name}.jsonl").write_text(text + ('{"e":"decided","id":"cut' if torn else ""))


def load(tmp_path: Path) -> TransactionLoad:
    return TransactionLoad("ns", "T", "G_TX", LoadSpec(), "run", 0.0, tmp_path)


def test_journals_become_send_operations(tmp_path: Path) -> None:
    journal(tmp_path, "g0p0",
            {"e": "send", "id": "a", "t": 1.0}, {"e": "half", "id": "a", "uniq": "U-a", "t": 1.01},
            {"e": "decided", "id": "a", "d": "COMMIT", "t": 1.1}, {"e": "ended", "id": "a", "state": "COMMIT", "t": 1.11},
            {"e": "send", "id": "b", "t": 1.2}, {"e": "half", "id": "b", "uniq": "U-b", "t": 1.21},
            {"e": "decided", "id": "b", "d": "ROLLBACK", "t": 1.3},
            {"e": "send", "id": "c", "t": 1.4}, {"e": "half", "id": "c", "uniq": "U-c", "t": 1.41},
            {"e": "send", "id": "d", "t": 1.5}, {"e": "error", "id": "d", "error": "UnreachableError: x", "t": 4.5},
            {"e": "send", "id": "e", "t": 1.6}, {"e": "half", "id": "e", "uniq": "U-e", "t": 1.61},
            {"e": "decided", "id": "e", "d": "COMMIT", "t": 1.7},
            torn=True)
    journal(tmp_path, "g1p0", {"e": "checked", "id": "e", "d": "COMMIT", "t": 9.0},
            {"e": "checked", "id": "c", "d": "ROLLBACK", "t": 9.1}, {"e": "checked", "id": "e", "d": "COMMIT", "t": 12.0})
    txn = load(tmp_path)
    ops = {op.id: op for op in txn.ops()}
    assert {k: (op.result, op.msg_id) for k, op in ops.items()} == {
        "a": (OK, "U-a"), "b": (FAIL, "U-b"), "c": (FAIL, "U-c"), "d": (UNKNOWN, None), "e": (OK, "U-e")}
    assert ops["b"].status == "ROLLBACK_MESSAGE" and ops["c"].status is None  # b rolled back on purpose, c died
    assert txn.open_at_kill() == 3  # b, c and e began and never ended
    checks = txn.checks()  # e was asked twice: its wait runs to the first answer
    assert (checks["commit"], checks["rollback"]) == (2, 1)
    assert sorted(round(w, 2) for w in checks["waits"]) == [7.39, 7.69]
    assert check_back(checks["waits"]) == {"checkBackP50S": 7.39, "checkBackMaxS": 7.69}
    assert check_back([]) == {"checkBackP50S": None, "checkBackMaxS": None}


def test_a_rolled_back_transaction_that_is_consumed_fails_the_drill(tmp_path: Path) -> None:
    criteria = SCENARIOS["kill-producer-in-transaction"].criteria
    h = History(meta={"scenario": "kill-producer-in-transaction", "criteria": criteria.to_json(),
                      "transactions": {"openLeft": 0}})
    h.event(0.0, "load-start")
    h.event(1.0, "fault", "SIGKILL to 1 transactional producer process(es)")
    h.ops += [Op("txn-g0p0", "send", "a", 0.5, 0.6, OK, planned=0.5), Op("txn-g0p0", "send", "b", 0.7, 0.8, FAIL),
              Op("txn-g1p0", "send", "c", 3.0, 3.1, OK, planned=3.0)]
    h.ops += [Op("consumer-0", RECEIVE, i, 4.0, 4.0, OK) for i in ("a", "c")]
    assert build(h).passed
    h.ops.append(Op("consumer-0", RECEIVE, "b", 4.1, 4.1, OK))
    h.meta["transactions"]["openLeft"] = 1
    failed = [r.text for r in build(h).reasons if not r.ok]
    assert any("reported failed were consumed" in t for t in failed) and any("still open" in t for t in failed)
