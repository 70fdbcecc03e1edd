"""The POP receipt (ExtraInfoUtil's format), the answer's offset infos and the POP retry topic names."""

from __future__ import annotations

import pytest

from mqtools.remoting.codes import RequestCode, java_short
from mqtools.remoting.pop import (
    ExtraInfo,
    bitset_from_b64,
    bitset_to_b64,
    build_extra_info,
    format_msg_offset_info,
    format_order_count_info,
    format_start_offset_info,
    normal_topic,
    offset_key,
    parse_msg_offset_info,
    parse_order_count_info,
    parse_start_offset_info,
    pop_retry_topic_v1,
    pop_retry_topic_v2,
    queue_key,
    real_topic,
    retry_mark,
)


def test_the_receipt_is_space_separated_with_a_retry_mark() -> None:
    text = build_extra_info(10, 1700000000000, 30000, 3, "T", "broker-a", 2, 13)
    assert text == "10 1700000000000 30000 3 0 broker-a 2 13"
    extra = ExtraInfo.parse(text)
    assert extra == ExtraInfo(10, 1700000000000, 30000, 3, "0", "broker-a", 2, 13)
    assert extra.format() == text and not extra.is_order
    seven = ExtraInfo.parse("10 1 2 999 1 b 0")
    assert seven.queue_offset is None and seven.is_order
    assert seven.topic_of("T", "G") == "%RETRY%G_T"


@pytest.mark.parametrize("bad", [None, "", "1 2 3", "a 2 3 4 0 b 0", "1 2 3 4 7 b 0", "1 2 3 4 0 b x"])
def test_a_receipt_that_does_not_parse_is_a_value_error(bad: str | None) -> None:
    with pytest.raises(ValueError):
        ExtraInfo.parse(bad)


def test_retry_topic_names_and_marks_are_keybuilders() -> None:
    assert pop_retry_topic_v1("T", "G") == "%RETRY%G_T"
    assert pop_retry_topic_v2("T", "G") == "%RETRY%G+T"
    assert [retry_mark(t) for t in ("T", "%RETRY%G_T", "%RETRY%G+T")] == ["0", "1", "2"]
    assert [real_topic("T", "G", m) for m in "012"] == ["T", "%RETRY%G_T", "%RETRY%G+T"]
    assert normal_topic("%RETRY%G_T", "G") == normal_topic("%RETRY%G+T", "G") == normal_topic("T", "G") == "T"
    with pytest.raises(ValueError):
        real_topic("T", "G", "9")


def test_offset_infos_round_trip_in_apaches_layout() -> None:
    start = format_start_offset_info([("T", 0, 5), ("%RETRY%G_T", 0, 2)])
    assert start == "0 0 5;1 0 2"
    assert parse_start_offset_info(start) == {"0@0": 5, "1@0": 2}
    msgs = format_msg_offset_info([("T", 1, [5, 6, 8])])
    assert msgs == "0 1 5,6,8" and parse_msg_offset_info(msgs) == {"0@1": [5, 6, 8]}
    order = format_order_count_info([("T", 1, [(5, 0), (6, 2)]), ("%RETRY%G_T", 0, [(3, 1)])])
    assert order == "0 qo1%6 2;0 1 0;1 qo0%3 1;1 0 1"  # Apache's: counts above 0, then the queue's least
    assert parse_order_count_info(order) == {offset_key("T", 1, 6): 2, queue_key("T", 1): 0,
                                             offset_key("%RETRY%G_T", 0, 3): 1, queue_key("%RETRY%G_T", 0): 1}
    assert queue_key("%RETRY%G_T", 0) == "1@0"
    assert parse_start_offset_info("") == {} and parse_start_offset_info(None) == {}
    for bad in ("0 0", "0 0 1;0 0 2"):
        with pytest.raises(ValueError):
            parse_start_offset_info(bad)


def test_batch_ack_bitsets_are_javas_little_endian_bytes_in_base64() -> None:
    assert bitset_to_b64([0, 3, 9]) == "CQI="
    assert bitset_from_b64("CQI=") == [0, 3, 9]
    assert bitset_to_b64([]) == "" and bitset_from_b64("") == []
    assert bitset_from_b64(bitset_to_b64([31, 40])) == [31, 40]


def test_the_16_bit_codes_are_javas_short_casts() -> None:
    assert java_short(RequestCode.POP_MESSAGE) == 3442
    assert java_short(RequestCode.ACK_MESSAGE) == 3443
    assert java_short(RequestCode.CHANGE_MESSAGE_INVISIBLETIME) == 3445
    assert java_short(RequestCode.BATCH_ACK_MESSAGE) == 3543
    assert java_short(RequestCode.PULL_MESSAGE) == 11
