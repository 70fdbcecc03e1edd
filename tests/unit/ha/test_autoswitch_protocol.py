"""AutoSwitch HA frames: byte layouts as RocketMQ 5 writes them, decoded from any split of the stream."""

from __future__ import annotations

import struct

import pytest

from mqtools.server.ha.autoswitch_protocol import (
    EpochTransferCursor,
    MasterHandshake,
    MasterStreamReader,
    SlaveHandshake,
    SlaveReport,
    SlaveStreamReader,
    Transfer,
    encode_master_handshake,
    encode_slave_handshake,
    encode_slave_report,
    encode_transfer_header,
    first_transfer_offset,
)
from mqtools.server.ha.epoch_file import EpochEntry
from mqtools.server.ha.protocol import HAProtocolError


def test_layouts():
    assert encode_slave_handshake(SlaveHandshake(3, True, False)) == struct.pack(">ihhq", 1, 1, 0, 3)
    assert encode_slave_report(4096) == struct.pack(">iq", 2, 4096)
    hs = encode_master_handshake(900, [EpochEntry(1, 0, 500), EpochEntry(2, 500)])
    assert hs == struct.pack(">iiqi", 1, 24, 900, 2) + struct.pack(">iq", 1, 0) + struct.pack(">iq", 2, 500)
    assert encode_transfer_header(500, 10, 2, 500, 450) == struct.pack(">iiqiqq", 2, 10, 500, 2, 500, 450)


@pytest.mark.parametrize("step", [1, 5, 13, 1000])
def test_both_readers_survive_any_split(step):
    master_bytes = (encode_master_handshake(900, [EpochEntry(1, 0), EpochEntry(2, 500)])
                    + encode_transfer_header(500, 3, 2, 500, 400) + b"abc" + encode_transfer_header(503, 0, 2, 500, 503))
    reader, got = MasterStreamReader(), []
    for i in range(0, len(master_bytes), step):
        got += reader.feed(master_bytes[i:i + step])
    assert got == [MasterHandshake(900, 2, [EpochEntry(1, 0, 500), EpochEntry(2, 500, 900)]),
                   Transfer(500, 2, 500, 400, b"abc"), Transfer(503, 2, 500, 503, b"")]
    slave_bytes = encode_slave_handshake(SlaveHandshake(2)) + encode_slave_report(77)
    sreader, sgot = SlaveStreamReader(), []
    for i in range(0, len(slave_bytes), step):
        sgot += sreader.feed(slave_bytes[i:i + step])
    assert sgot == [SlaveHandshake(2), SlaveReport(77)]


def test_garbage_is_a_protocol_error():
    with pytest.raises(HAProtocolError):
        SlaveStreamReader().feed(struct.pack(">iq", 9, 0))
    with pytest.raises(HAProtocolError):
        MasterStreamReader().feed(struct.pack(">iiqi", 1, 7, 0, 0))


def _decode(parts):
    frames = MasterStreamReader().feed(b"".join(bytes(p) for p in parts))
    assert len(frames) == 1
    return frames[0]


def test_a_frame_stops_at_the_end_of_its_epoch_and_the_next_one_carries_the_new_epoch():
    epochs = [EpochEntry(1, 0, 100), EpochEntry(2, 100)]
    cursor = EpochTransferCursor(batch_size=64, heartbeat_interval=5.0)
    cursor.start(80, now=0.0)
    data = bytes(range(200))
    first = _decode(cursor.frame(data[80:], epochs, confirm_offset=70, now=1.0))
    assert (first.offset, first.epoch, first.epoch_start_offset, first.confirm_offset) == (80, 1, 0, 70)
    assert first.body == data[80:100]
    second = _decode(cursor.frame(data[100:], epochs, confirm_offset=70, now=1.0))
    assert (second.offset, second.epoch, second.epoch_start_offset, len(second.body)) == (100, 2, 100, 64)
    assert cursor.next_from == 164


def test_heartbeats_only_when_idle_for_the_interval_and_labelled_with_the_epoch_of_the_position():
    epochs = [EpochEntry(1, 0, 100), EpochEntry(2, 100)]
    cursor = EpochTransferCursor(batch_size=64, heartbeat_interval=5.0)
    cursor.start(150, now=0.0)
    assert cursor.frame(None, epochs, 150, now=4.9) is None
    beat = _decode(cursor.frame(None, epochs, 150, now=5.0))
    assert beat.is_heartbeat and (beat.offset, beat.epoch, beat.epoch_start_offset) == (150, 2, 100)
    assert cursor.frame(b"", epochs, 150, now=6.0) is None


def test_bytes_from_before_the_first_epoch_never_share_a_frame_with_it():
    epochs = [EpochEntry(3, 40)]
    cursor = EpochTransferCursor(batch_size=1024)
    cursor.start(0, now=0.0)
    head = _decode(cursor.frame(bytes(100), epochs, 0, now=0.0))
    assert (head.offset, len(head.body), head.epoch, head.epoch_start_offset) == (0, 40, 3, 40)
    rest = _decode(cursor.frame(bytes(60), epochs, 0, now=0.0))
    assert (rest.offset, len(rest.body), rest.epoch) == (40, 60, 3)


def test_nothing_is_sent_before_the_start_or_without_epochs():
    cursor = EpochTransferCursor()
    assert cursor.frame(b"abc", [EpochEntry(1, 0)], 0, now=99.0) is None
    cursor.start(0, now=0.0)
    assert cursor.frame(b"abc", [], 0, now=99.0) is None


@pytest.mark.parametrize(("request_offset", "last_file", "expected"), [
    (500, False, 500), (0, False, 100), (0, True, 1024), (-1, False, 100)])
def test_where_a_slave_is_served_from(request_offset, last_file, expected):
    assert first_transfer_offset(request_offset, 100, 1500, 1024, last_file) == expected
