"""HA wire protocol: offset reports (partial, coalesced), transfer frames, start offsets, checks."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtools.server.ha.protocol import (
    Frame,
    FrameReader,
    HAProtocolError,
    OffsetMismatch,
    ReportReader,
    ReportSchedule,
    TransferCursor,
    check_frame,
    encode_header,
    encode_report,
    first_transfer_offset,
)


def test_report_is_8_bytes_big_endian() -> None:
    assert encode_report(0x0102030405060708) == bytes(range(1, 9))


def test_header_is_offset_then_size_big_endian() -> None:
    assert encode_header(1, 2) == struct.pack(">qi", 1, 2)
    assert len(encode_header(5, 0)) == 12


def test_partial_report_waits_for_the_rest() -> None:
    reader = ReportReader()
    data = encode_report(123456789)
    assert reader.feed(data[:3]) is None
    assert reader.feed(data[3:7]) is None
    assert reader.feed(data[7:]) == 123456789
    assert reader.buffered == 0


def test_coalesced_reports_keep_only_the_last_complete_one() -> None:
    reader = ReportReader()
    data = encode_report(10) + encode_report(20) + encode_report(30) + encode_report(40)[:5]
    assert reader.feed(data) == 30
    assert reader.buffered == 5
    assert reader.feed(encode_report(40)[5:]) == 40


def test_negative_report_is_a_protocol_error() -> None:
    with pytest.raises(HAProtocolError):
        ReportReader().feed(encode_report(-1))


@given(st.lists(st.integers(0, 2**62), min_size=1, max_size=20, unique=True).map(sorted), st.data())
def test_any_split_yields_the_last_report(offsets: list[int], data: st.DataObject) -> None:
    stream = b"".join(encode_report(o) for o in offsets)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    reader = ReportReader()
    seen: list[int] = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        got = reader.feed(stream[prev:cut])
        prev = cut
        if got is not None:
            seen.append(got)
    assert seen[-1] == offsets[-1]
    assert all(s in offsets for s in seen)
    assert seen == sorted(seen)  # acks only grow; skipping stale ones keeps the order


def test_empty_slave_starts_at_last_file_of_the_master() -> None:
    assert first_transfer_offset(0, 2500, 1000) == 2000
    assert first_transfer_offset(0, 3000, 1000) == 3000
    assert first_transfer_offset(0, 0, 1000) == 0


def test_non_empty_slave_starts_at_its_own_offset() -> None:
    assert first_transfer_offset(1234, 5000, 1000) == 1234


def test_cursor_sends_nothing_before_the_first_report() -> None:
    cursor = TransferCursor(file_size=1000)
    assert cursor.frame(b"abc", now=100.0) is None


def test_cursor_caps_frames_at_batch_size_and_advances() -> None:
    cursor = TransferCursor(file_size=1000, batch_size=4, heartbeat_interval=5.0)
    cursor.start(0, 2500, now=0.0)
    parts = cursor.frame(b"abcdefghij", now=1.0)
    assert parts is not None
    assert bytes(parts[0]) == encode_header(2000, 4) and bytes(parts[1]) == b"abcd"
    assert cursor.next_from == 2004


def test_cursor_heartbeats_only_when_idle_for_the_interval() -> None:
    cursor = TransferCursor(file_size=1000, heartbeat_interval=5.0)
    cursor.start(700, 900, now=10.0)
    assert cursor.frame(None, now=14.9) is None
    parts = cursor.frame(b"", now=15.0)
    assert parts == [encode_header(700, 0)]
    assert cursor.frame(None, now=19.0) is None
    cursor.frame(b"x", now=19.5)
    assert cursor.frame(None, now=24.0) is None


def test_frames_decode_across_arbitrary_splits() -> None:
    stream = encode_header(100, 3) + b"abc" + encode_header(103, 0) + encode_header(103, 2) + b"de"
    reader = FrameReader()
    frames: list[Frame] = []
    for i in range(len(stream)):
        frames += reader.feed(stream[i:i + 1])
    assert frames == [Frame(100, b"abc"), Frame(103, b""), Frame(103, b"de")]
    assert frames[1].is_heartbeat and frames[2].end_offset == 105
    assert reader.buffered == 0


def test_frames_coalesced_in_one_read() -> None:
    stream = encode_header(0, 1) + b"a" + encode_header(1, 1) + b"b" + encode_header(2, 5) + b"cd"
    reader = FrameReader()
    assert reader.feed(stream) == [Frame(0, b"a"), Frame(1, b"b")]
    assert reader.feed(b"efg") == [Frame(2, b"cdefg")]


def test_bad_header_is_rejected() -> None:
    with pytest.raises(HAProtocolError):
        FrameReader(max_body=10).feed(encode_header(0, 11))
    with pytest.raises(HAProtocolError):
        FrameReader().feed(encode_header(0, -1))


def test_mismatching_frame_is_detected_including_heartbeats() -> None:
    check_frame(500, Frame(500, b"x"))
    check_frame(0, Frame(2000, b"x"))  # an empty slave accepts the master's chosen start
    with pytest.raises(OffsetMismatch):
        check_frame(500, Frame(400, b"x"))
    with pytest.raises(OffsetMismatch):
        check_frame(500, Frame(600, b""))


def test_report_schedule_on_growth_and_interval() -> None:
    sched = ReportSchedule(interval=5.0)
    assert sched.due(0, now=0.0)  # first report right after connecting
    sched.reported(0, now=0.0)
    assert not sched.due(0, now=4.0)
    assert sched.due(10, now=4.0)
    sched.reported(10, now=4.0)
    assert sched.due(10, now=9.0)
