"""The TimerStatus document and the timer bodies it is read from, rendered from hand-made answers (no cluster)."""

from __future__ import annotations

import struct

import pytest
from support.documents import check

from mqtools.client.admin.models.timer import TimerBrokerStatus, TimerStatus, timer_status_view
from mqtools.common.presentation import Unreachable
from mqtools.remoting.errors import BodyError
from mqtools.remoting.timer import TimerCheckpointBody, TimerMetric, TimerMetricsBody

RUNTIME = {"timerReadBehind": "2", "timerOffsetBehind": "7", "timerCongestNum": "0", "timerEnqueueTps": "12.5",
           "timerDequeueTps": "3.25"}


def test_checkpoint_bodies_of_both_lengths() -> None:
    full = struct.pack(">7q", 1_700_000_001_000, 104, 12, 12, 0, 1_700_000_000_000, 9)
    ck = TimerCheckpointBody.decode(full)
    assert (ck.last_read_time_ms, ck.last_timer_log_flush_pos, ck.last_timer_queue_offset, ck.counter) == (
        1_700_000_001_000, 104, 12, 9)
    assert ck.encode() == full
    legacy = TimerCheckpointBody.decode(full[:32])
    assert legacy.state_version is None and legacy.encode() == full[:32]
    with pytest.raises(BodyError):
        TimerCheckpointBody.decode(full[:20])


def test_metrics_body_is_apaches_json() -> None:
    body = TimerMetricsBody.from_json(b'{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1},'
                                      b'"timingCount":{"A":{"count":2,"timeStamp":5},"B":{"count":0,"timeStamp":6}}}')
    assert body.timing_count == {"A": TimerMetric(2, 5), "B": TimerMetric(0, 6)}


def broker(name: str, pending: dict[str, int], source: str = "master") -> TimerBrokerStatus:
    ck = TimerCheckpointBody(1_700_000_001_000, 104, 12, 12, 0, 1, 1)
    metrics = TimerMetricsBody({}, {t: TimerMetric(n, 1) for t, n in pending.items()})
    return TimerBrokerStatus.from_answers(name, f"10.0.0.{len(name)}:10911", source, ck, metrics, RUNTIME, known=True)


def test_timer_status_sums_pending_and_names_the_busiest_topics() -> None:
    st = TimerStatus([broker("broker-a", {"Orders": 3, "Done": 0}), broker("broker-b", {"Orders": 1, "Pay": 2}, "slave")])
    view = timer_status_view(st)
    doc = check(view)
    assert doc["pendingTotal"] == 6 and not doc["partial"]
    a = doc["brokers"][0]
    assert (a["timerEnabled"], a["pending"], a["readBehindSeconds"], a["offsetBehind"], a["enqueueTps"]) == (
        True, {"Done": 0, "Orders": 3}, 2, 7, 12.5)
    assert view.rows[1][0] == "broker-b*" and view.rows[0][2] == "on" and view.rows[0][3] == 3
    assert view.footer[:2] == ["total: 6 pending timer messages on 2 broker sets", "most pending: Orders 4, Pay 2"]


def test_no_timer_store_and_an_old_broker_have_no_figures() -> None:
    off = TimerBrokerStatus.from_answers("broker-a", "h:1", "master", None, None, {"timerReadBehind": "0"}, known=True)
    old = TimerBrokerStatus.from_answers("broker-b", "h:2", "master", None, None, {}, known=False)
    st = TimerStatus([off, old], [Unreachable("broker-c", "h:3", "connection refused")])
    view = timer_status_view(st)
    doc = check(view)
    assert doc["partial"] and doc["unreachable"][0]["brokerName"] == "broker-c"
    assert doc["pendingTotal"] is None
    assert [b["timerEnabled"] for b in doc["brokers"]] == [False, None]
    assert doc["brokers"][0]["readBehindSeconds"] is None  # Apache's zeros without a wheel mean nothing
    assert view.rows[0][2] == "off" and view.rows[1][2] is None
    assert view.footer[0] == "total: n/a pending timer messages on 2 broker sets"
    assert view.notes() == ["partial: could not read broker-c h:3: connection refused"]
