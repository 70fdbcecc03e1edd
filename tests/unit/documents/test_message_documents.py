"""The message documents (a message, a list of them, a trace, a send), rendered from hand-made models (no cluster)."""

from __future__ import annotations

from support.documents import check

from mqtools.cli.output import plain
from mqtools.client.admin.models.messages import (
    MessageDetail,
    MessageTrace,
    MessageTrack,
    MessageTracks,
    TraceEntry,
    message_json,
    message_list_view,
    message_trace_view,
    message_view,
    send_result_view,
)
from mqtools.client.types import SendResult, SendStatus
from mqtools.common.message import MessageExt
from mqtools.common.presentation import Unreachable, cell, when
from mqtools.common.trace_data import TraceRecord, TraceType
from mqtools.remoting.bodies import MessageQueue

STORED = 1_700_000_000_500


def message(uniq: str, tags: str | None, body: bytes, stored: int) -> MessageExt:
    """A stored message with the properties the golden cluster's messages carry, in their order."""
    props = {"KEYS": "order-1 order-2", "UNIQ_KEY": uniq, "CLUSTER": "DefaultCluster"}
    if tags is not None:
        props["TAGS"] = tags
    return MessageExt("Orders", body, 0, props, queue_id=1, queue_offset=11, born_timestamp=STORED - 500,
                      born_host=("10.0.0.9", 50001), store_timestamp=stored, store_host=("10.0.0.1", 10911),
                      msg_id="0A00000100002A9F0000000000001000", commit_log_offset=4096, reconsume_times=2)


ONE = message("C0A8010A00002A9F0000000000000001", None, b'{"id": 1}', STORED)
LONG = message("C0A8010A00002A9F0000000000000002", None, b"line one\nline two " + b"x" * 60, 0)


def test_message_list_cuts_the_body_and_leaves_unknowns_unknown() -> None:
    view = message_list_view("Orders", [ONE, LONG])
    doc = check(view, "msg key")
    assert view.rows[0] == ["C0A8010A00002A9F0000000000000001", "Orders", "10.0.0.1:10911", 1, 11, None,
                            "order-1 order-2", when(STORED), 2, '{"id": 1}']
    assert view.rows[1][-1] == "line one line two " + "x" * 27 + "..." and len(view.rows[1][-1]) == 48
    assert cell(view.rows[1][5]) == "n/a" and cell(view.rows[1][7]) == "n/a"
    assert doc["count"] == 2 and doc["messages"][0]["tags"] is None and doc["messages"][1]["storeTimestamp"] is None
    assert doc["messages"][1]["body"].startswith("line one\nline two")
    assert view.footer == []


def test_message_print_has_its_footer() -> None:
    view = message_list_view("Orders", [ONE], ["1 messages from 4 queues"])
    check(view, "msg print")
    assert plain(view).splitlines()[-1] == "1 messages from 4 queues"


def test_a_message_without_a_unique_key_is_named_by_its_offset_id() -> None:
    m = MessageExt("Orders", b"x", 0, {}, msg_id="0A00000100002A9F0000000000000042")
    assert message_json(m)["msgId"] == "0A00000100002A9F0000000000000042"
    assert message_list_view("Orders", [m]).rows[0][0] == "0A00000100002A9F0000000000000042"


def test_message_detail_with_tracks() -> None:
    view = message_view(MessageDetail(ONE, MessageTracks([MessageTrack("G1", "CONSUMED"),
                                                         MessageTrack("G2", "NOT_ONLINE", "no consumer")])))
    doc = check(view, "msg get")
    rows = dict(view.rows)
    assert rows["msgId"] == "C0A8010A00002A9F0000000000000001" and rows["offsetMsgId"] == ONE.msg_id
    assert rows["keys"] == "order-1 order-2" and rows["storeTimestamp"] == when(STORED)
    assert rows["tags"] is None and rows["property CLUSTER"] == "DefaultCluster"
    assert [r[0] for r in view.rows][-3:] == ["property CLUSTER", "property KEYS", "property UNIQ_KEY"]
    assert doc["message"]["keys"] == ["order-1", "order-2"] and doc["message"]["tags"] is None
    assert doc["tracks"] == [{"group": "G1", "trackType": "CONSUMED", "exceptionDesc": None},
                             {"group": "G2", "trackType": "NOT_ONLINE", "exceptionDesc": "no consumer"}]
    assert view.footer == ["group G1: CONSUMED", "group G2: NOT_ONLINE (no consumer)"]


def test_message_detail_whose_groups_were_not_all_read_is_partial() -> None:
    """A set of the topic's route no replica answered for: a group consuming only there has no track."""
    gone = Unreachable("broker-a", "10.0.0.1:10911", "no master registered; slave 10.0.0.2:10911: timed out")
    view = message_view(MessageDetail(ONE, MessageTracks([MessageTrack("G1", "CONSUMED")], [gone])))
    doc = check(view, "msg get")
    assert (doc["partial"], doc["unreachable"], doc["tracks"][0]["group"]) == (True, [gone.to_json()], "G1")


def test_message_detail_never_stored_time_and_no_group() -> None:
    view = message_view(MessageDetail(LONG, MessageTracks([])))
    doc = check(view, "msg at")
    assert dict(view.rows)["storeTimestamp"] is None and doc["message"]["storeTimestamp"] is None
    assert view.footer == ["no consumer group consumes this topic"]


def test_message_trace_timeline() -> None:
    trace = MessageTrace("U1", "RMQ_SYS_TRACE_TOPIC", [
        TraceEntry(TraceRecord(TraceType.Pub, "U1", 1_700_000_000_000, "DefaultRegion", "PG", "Orders", "TagA", "k1",
                               "10.0.0.1:10911", 9, 3, 0, "OFF1", True), "10.0.0.9"),
        TraceEntry(TraceRecord(TraceType.SubBefore, "U1", 1_700_000_000_100, group="CG", request_id="R1",
                               retry_times=0), "10.0.0.8"),
        TraceEntry(TraceRecord(TraceType.SubAfter, "U1", None, group="CG", request_id="R1", context_code=1), None),
        TraceEntry(TraceRecord(TraceType.EndTransaction, "U1", 1_700_000_000_300, group="PG", transaction_id="T1",
                               transaction_state="COMMIT_MESSAGE", from_transaction_check=True), "10.0.0.9"),
    ])
    view = message_trace_view(trace)
    doc = check(view)
    assert view.rows[0] == ["Pub", "PG", "10.0.0.9", when(1_700_000_000_000), 3, "success",
                            "topic Orders, stored on 10.0.0.1:10911, 9 bytes"]
    assert view.rows[1][5:] == ["delivered", "reconsume 0, request R1"]
    assert [cell(v) for v in view.rows[2][2:6]] == ["n/a", "n/a", "n/a", "n/a"]
    assert view.rows[3][5:] == ["COMMIT_MESSAGE", "transaction T1 (answering a check)"]
    assert doc["records"][2]["success"] is None and doc["records"][2]["timestamp"] is None
    assert (doc["msgId"], doc["traceTopic"]) == ("U1", "RMQ_SYS_TRACE_TOPIC")
    assert view.footer == ["4 trace records in RMQ_SYS_TRACE_TOPIC"]


def test_send_result() -> None:
    r = SendResult(SendStatus.SLAVE_NOT_AVAILABLE, "U9", "OFF9", MessageQueue("Orders", "broker-b", 3), 77)
    view = send_result_view("Orders", r)
    doc = check(view)
    assert view.rows == [["broker-b", 3, 77, "SLAVE_NOT_AVAILABLE", "U9", "OFF9"]]
    assert doc["status"] == "SLAVE_NOT_AVAILABLE" and doc["topic"] == "Orders" and doc["queueOffset"] == 77
