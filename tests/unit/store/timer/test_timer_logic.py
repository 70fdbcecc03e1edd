"""The timer's sans-IO decisions: the send path's rewrite, the roll plan, flow control, the written-back message."""

from __future__ import annotations

import pytest

from mqtools.common import properties as P
from mqtools.common.message import MessageExt, MessageExtBrokerInner
from mqtools.server.store.timer import timer_logic as L
from mqtools.server.store.timer.timer_log import MAGIC_DEFAULT, MAGIC_DELETE, MAGIC_ROLL

NOW = 1_700_000_000_300
SETTINGS = L.TimerSettings(enabled=True, precision_ms=1000, max_delay_sec=60)


def msg(**props: str) -> MessageExtBrokerInner:
    return MessageExtBrokerInner(topic="Orders", body=b"x", queue_id=3, properties=dict(props))


@pytest.mark.parametrize(
    ("value", "out_ms"),
    [
        (str(NOW + 5_500), NOW - 300 + 5_000),  # rounded down to the precision ...
        (str(NOW - 300 + 5_000), NOW - 300 + 4_000),  # ... and an exact tick goes one earlier
    ],
)
def test_deliver_ms_moves_to_the_wheel(value: str, out_ms: int) -> None:
    m = msg(TIMER_DELIVER_MS=value, TAGS="t")
    assert L.rewrite_for_timer(m, NOW, SETTINGS) is L.Rewrite.REWRITTEN
    assert (m.topic, m.queue_id) == (L.TIMER_TOPIC, 0)
    assert m.properties[P.TIMER_OUT_MS] == str(out_ms)
    assert m.properties[P.REAL_TOPIC] == "Orders" and m.properties[P.REAL_QID] == "3"
    # never early: the tick at TIMER_OUT_MS is delivered once it is over, at or after the time asked
    assert out_ms + 1000 >= int(value)


def test_delay_sec_and_ms_count_from_the_brokers_now() -> None:
    m = msg(TIMER_DELAY_SEC="10", TIMER_DELAY_MS="999999")  # seconds win, as in Apache
    assert L.rewrite_for_timer(m, NOW, SETTINGS) is L.Rewrite.REWRITTEN
    assert int(m.properties[P.TIMER_OUT_MS]) == (NOW + 10_000) // 1000 * 1000
    m = msg(TIMER_DELAY_MS="2500")
    assert L.rewrite_for_timer(m, NOW, SETTINGS) is L.Rewrite.REWRITTEN
    assert int(m.properties[P.TIMER_OUT_MS]) == (NOW + 2500) // 1000 * 1000


@pytest.mark.parametrize(
    "props",
    [
        {"TIMER_DELIVER_MS": "soon"},
        {"TIMER_DELIVER_MS": " 17"},
        {"TIMER_DELAY_SEC": "1.5"},
        {"TIMER_DELAY_MS": "9223372036854775808"},  # past Long.MAX_VALUE
        {"TIMER_DELAY_SEC": "61"},  # past timerMaxDelaySec
        {
            "TIMER_DELIVER_MS": str(NOW - 1),
            "TIMER_DEL_UNIQKEY": "Orders+ABC",
        },  # a delete marker must be ahead
    ],
)
def test_illegal_values_are_refused_and_left_alone(props: dict[str, str]) -> None:
    m = msg(**props)
    assert L.rewrite_for_timer(m, NOW, SETTINGS) is L.Rewrite.WHEEL_TIMER_MSG_ILLEGAL
    assert m.topic == "Orders" and P.TIMER_OUT_MS not in m.properties


def test_past_time_is_due_now_and_other_cases() -> None:
    m = msg(TIMER_DELIVER_MS=str(NOW - 60_000))
    assert L.rewrite_for_timer(m, NOW, SETTINGS) is L.Rewrite.DUE_NOW and m.topic == "Orders"
    assert L.rewrite_for_timer(msg(TAGS="a"), NOW, SETTINGS) is L.Rewrite.NOT_TIMER
    # already through the wheel (TIMER_OUT_MS) or a roll back into it: not timed again
    assert (
        L.rewrite_for_timer(msg(TIMER_DELIVER_MS=str(NOW + 5000), TIMER_OUT_MS="1"), NOW, SETTINGS)
        is L.Rewrite.NOT_TIMER
    )
    off = L.TimerSettings(enabled=False)
    assert L.rewrite_for_timer(msg(TIMER_DELAY_SEC="5"), NOW, off) is L.Rewrite.WHEEL_TIMER_NOT_ENABLE
    assert (
        L.rewrite_for_timer(msg(TIMER_DELAY_SEC="5"), NOW, SETTINGS, lambda _ms: True)
        is L.Rewrite.WHEEL_TIMER_FLOW_CONTROL
    )
    props = {P.TIMER_DELAY_SEC: "5", P.TIMER_DELIVER_MS: "1", "X": "y"}
    assert L.drop_timer_request(props) and props == {"X": "y"}


def test_precision_window_and_parsing() -> None:
    assert [L.snap_precision(v) for v in (1, 100, 150, 250, 999, 1000, 5000)] == [
        100,
        100,
        100,
        200,
        500,
        1000,
        1000,
    ]
    assert L.roll_window_slots(172_800, 604_800) == 172_800
    assert L.roll_window_slots(1, 604_800) == L.roll_window_slots(604_800, 604_800) == 604_740
    assert L.parse_java_long("+12") == 12 and L.parse_java_long("-3") == -3
    with pytest.raises(ValueError):
        L.parse_java_long("1_000")


def test_roll_plan() -> None:
    window, p, write = 100, 1000, 1_000_000
    assert L.plan_enqueue(write + 99_000, write, window, p) == (write + 99_000, MAGIC_DEFAULT)
    # just past the window (within a third of it): filed at half the window, to roll again soon
    assert L.plan_enqueue(write + 100_000, write, window, p) == (write + 50_000, MAGIC_DEFAULT | MAGIC_ROLL)
    assert L.plan_enqueue(write + 132_000, write, window, p) == (write + 50_000, MAGIC_DEFAULT | MAGIC_ROLL)
    # far past it: filed at the window's end
    assert L.plan_enqueue(write + 133_000, write, window, p) == (write + 100_000, MAGIC_DEFAULT | MAGIC_ROLL)
    assert L.plan_enqueue(write + 5_000, write, window, p, delete=True) == (
        write + 5_000,
        MAGIC_DEFAULT | MAGIC_DELETE,
    )


def test_flow_control_rule() -> None:
    assert not L.is_reject(10, 10, 999)
    assert L.is_reject(20, 10, 0)
    assert L.is_reject(15, 10, 600) and not L.is_reject(15, 10, 400)


def test_written_back_message() -> None:
    stored = MessageExt(
        topic=L.TIMER_TOPIC,
        body=b"b",
        flag=7,
        queue_id=0,
        sys_flag=0,
        born_timestamp=11,
        reconsume_times=2,
        properties={
            P.TIMER_OUT_MS: "5000",
            P.REAL_TOPIC: "Orders",
            P.REAL_QID: "3",
            P.TAGS: "t",
            P.WAIT: "true",
        },
    )
    out = L.written_back(stored, 4000, roll=False, now_ms=6000)
    assert (out.topic, out.queue_id, out.body, out.flag, out.reconsume_times) == ("Orders", 3, b"b", 7, 2)
    kept = P.string_to_properties(out.properties_string)
    assert kept[P.TIMER_ENQUEUE_MS] == "4000" and kept[P.TIMER_DEQUEUE_MS] == "6000"
    assert kept[P.REAL_TOPIC] == "Orders" and P.WAIT not in kept  # rendered before REAL_* leave, as Apache
    assert P.REAL_TOPIC not in out.properties and out.properties[P.WAIT] == "false"
    rolled = L.written_back(stored, 4000, roll=True, now_ms=6000)
    assert (rolled.topic, rolled.queue_id) == (L.TIMER_TOPIC, 0)
    assert P.string_to_properties(rolled.properties_string)[P.TIMER_ROLL_TIMES] == "1"
    never = L.written_back(stored, -1, roll=False, now_ms=6000)
    assert P.TIMER_ENQUEUE_MS not in P.string_to_properties(never.properties_string)


def test_redirect_renders_the_stored_properties_and_lets_a_delay_level_win() -> None:
    m = msg(TIMER_DELAY_SEC="5", WAIT="true", TAGS="t")
    m.properties_string = "unchanged"
    assert L.redirect_to_timer(m, NOW, SETTINGS) is L.Rewrite.REWRITTEN
    stored = P.string_to_properties(m.properties_string)
    assert stored[P.REAL_TOPIC] == "Orders" and P.WAIT not in stored and m.properties[P.WAIT] == "true"
    leveled = msg(TIMER_DELAY_SEC="5", DELAY="3")
    assert L.redirect_to_timer(leveled, NOW, SETTINGS) is L.Rewrite.NOT_TIMER
    assert P.string_to_properties(leveled.properties_string) == {P.DELAY: "3"} and leveled.topic == "Orders"
    plain = msg(TAGS="t")
    assert (
        L.redirect_to_timer(plain, NOW, SETTINGS) is L.Rewrite.NOT_TIMER and plain.properties_string is None
    )
