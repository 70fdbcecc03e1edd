"""The front link's messages (mqtools/server/broker/front/link.py): what one end adds the other reads back, however
the bytes are cut, and nothing else."""

from __future__ import annotations

import pytest

from mqtools.remoting.errors import ProtocolError
from mqtools.server.broker.front import link as L


def _wire() -> bytes:
    out = L.Outbox()
    out.add(L.HELLO, 0)
    out.add(L.OPEN, 7, L.Opened(("10.0.0.9", 53211), True, "Mar 17 17:46:40 2030 GMT").encode())
    out.add(L.DATA, 7, b"x" * 1000)
    out.add_parts(L.DATA, 7, [b"head", memoryview(b"-mapped-"), b"", bytearray(b"tail")])
    out.add(L.CLOSE, 7)
    out.add(L.PING, 0)
    out.add(L.PONG, 0)
    return b"".join(out.take())


@pytest.mark.parametrize("cut", [1, 2, 9, 10, 333, 100_000])
def test_what_is_added_is_read_back_however_the_bytes_arrive(cut: int) -> None:
    wire, decoder, events = _wire(), L.LinkDecoder(), []
    for at in range(0, len(wire), cut):
        events += decoder.feed(wire[at:at + cut])
    assert [(kind, conn) for kind, conn, _ in events] == [(L.HELLO, 0), (L.OPEN, 7), (L.DATA, 7), (L.DATA, 7),
                                                          (L.CLOSE, 7), (L.PING, 0), (L.PONG, 0)]
    assert L.Opened.decode(events[1][2]) == L.Opened(("10.0.0.9", 53211), True, "Mar 17 17:46:40 2030 GMT")
    assert events[2][2] == b"x" * 1000
    assert events[3][2] == b"head-mapped-tail"
    assert events[4][2] == b""


def test_the_outbox_is_empty_once_taken() -> None:
    out = L.Outbox()
    out.add(L.DATA, 1, b"a")
    assert len(out.take()) == 2
    assert out.take() == []


@pytest.mark.parametrize("bad", [L.header(9, 1, 0), L.header(L.DATA, 1, L.MAX_PAYLOAD + 1)])
def test_an_unknown_kind_or_an_absurd_length_is_refused(bad: bytes) -> None:
    with pytest.raises(ProtocolError, match="front link"):
        L.LinkDecoder().feed(bad)


@pytest.mark.parametrize("payload", [b"not json", b"{}", b'{"peer": "h", "tls": false}'])
def test_a_bad_open_is_refused(payload: bytes) -> None:
    with pytest.raises(ProtocolError, match="bad OPEN"):
        L.Opened.decode(payload)
