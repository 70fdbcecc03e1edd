"""The open-transaction and DLQ resend documents, rendered from hand-made models (no cluster)."""

from __future__ import annotations

from support.documents import check

from mqtools.cli.output import plain
from mqtools.client.admin.models.messages import Resend, dlq_resend_view
from mqtools.client.admin.models.transactions import (
    BrokerTransactions,
    OpenTransaction,
    open_transactions_view,
)
from mqtools.common.presentation import cell, when
from mqtools.remoting.bodies import MessageQueue

BROKERS = [
    BrokerTransactions("broker-a", "10.0.0.1:10911", [
        OpenTransaction("broker-a", "OrderTx", "Orders", "M1", 1_700_000_000_000, 12_345, 2),
        OpenTransaction("broker-a", None, None, "M2", 1_700_000_001_000, 999, 0)], 100, True),
    BrokerTransactions("broker-b", "10.0.0.2:10911", [], 0, False, "timed out"),
]


def test_open_transactions_with_an_unknown_group_a_cut_scan_and_a_silent_broker() -> None:
    view = open_transactions_view(BROKERS)
    doc = check(view)
    assert view.rows[0] == ["broker-a", "OrderTx", "Orders", "M1", when(1_700_000_000_000), 12.3, 2]
    assert [cell(v) for v in view.rows[1][1:3]] == ["n/a", "n/a"]
    assert doc["transactions"][1]["producerGroup"] is None and doc["transactions"][1]["topic"] is None
    assert doc["brokers"][1] == {"brokerName": "broker-b", "brokerAddr": "10.0.0.2:10911", "scanned": 0,
                                 "cut": False, "error": "timed out"}
    assert view.footer == ["1 open in producer group None", "1 open in producer group OrderTx",
                           "broker-a: more than 100 half messages; only those were read"]
    # broker-b's transactions are not known: the document is partial and names it (the table's last line too)
    assert (doc["partial"], doc["unreachable"]) == (True, [{"brokerName": "broker-b", "addr": "10.0.0.2:10911",
                                                            "reason": "timed out"}])
    assert view.notes() == ["partial: could not read broker-b 10.0.0.2:10911: timed out"]


def test_open_transactions_of_one_group_keep_every_broker() -> None:
    view = open_transactions_view(BROKERS, "OrderTx")
    doc = check(view)
    assert [t["msgId"] for t in doc["transactions"]] == ["M1"]
    assert len(doc["brokers"]) == 2
    empty = open_transactions_view([])
    assert check(empty)["transactions"] == []
    assert empty.footer == ["no broker has stored a transactional message"]


def test_dlq_resend_says_what_failed() -> None:
    view = dlq_resend_view("OrderConsumers", [
        Resend("ID1", "Orders", MessageQueue("%RETRY%OrderConsumers", "broker-a", 2), "OFF1", None),
        Resend("ID2", None, None, None, "not found in the DLQ")])
    doc = check(view)
    assert view.rows[0] == ["ID1", "Orders", "resent", "broker-a", 2, "OFF1", None]
    assert plain(view).splitlines()[2].split()[:6] == ["ID2", "n/a", "failed", "n/a", "n/a", "n/a"]
    assert doc["results"][1] == {"msgId": "ID2", "topic": None, "resent": False, "brokerName": None,
                                 "queueId": None, "offsetMsgId": None, "error": "not found in the DLQ"}
    assert view.footer == ["1 of 2 resent to %RETRY%OrderConsumers"]
