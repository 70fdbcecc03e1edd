"""AutoSwitch HA frames: byte layouts as RocketMQ 5 writes them, decoded from any split of the stream."""

from __future__ import annotations

import struct

import pytest

from mqtools.server.ha.autoswitch_protocol import (
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
)
from mqtools.server.ha.epoch_file import EpochEntry
from mqtools.server.ha.protocol import ProtocolError


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
    with pytest.raises(ProtocolError):
        SlaveStreamReader().feed(struct.pack(">iq", 9, 0))
    with pytest.raises(ProtocolError):
        MasterStreamReader().feed(struct.pack(">iiqi", 1, 7, 0, 0))
