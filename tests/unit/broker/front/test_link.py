"""The front link's messages (mqtools/server/broker/front/link.py): what one end adds the other reads back, however
the bytes are cut, and nothing else."""

from __future__ import annotations

import asyncio
import socket

import pytest

from mqtools.remoting.errors import ProtocolError
from mqtools.server.broker.front import link as L
from mqtools.server.broker.front.endpoint import LinkEnd


def _wire() -> bytes:
    out = L.Outbox()
    out.add(L.HELLO, 0)
    out.add(L.OPEN, 7, L.Opened(("10.0.0.9", 53211), True, "Mar 17 17:46:40 2030 GMT").encode())
    out.add(L.DATA, 7, b"x" * 1000)
    out.add_data(7, [b"head", memoryview(b"-mapped-"), b"", bytearray(b"tail")], 16)
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


@pytest.mark.parametrize("bad", [L.header(99, 1, 0), L.header(L.DATA, 1, L.MAX_PAYLOAD + 1)])
def test_an_unknown_kind_or_an_absurd_length_is_refused(bad: bytes) -> None:
    with pytest.raises(ProtocolError, match="front link"):
        L.LinkDecoder().feed(bad)


@pytest.mark.parametrize("payload", [b"not json", b"{}", b'{"peer": "h", "tls": false}'])
def test_a_bad_open_is_refused(payload: bytes) -> None:
    with pytest.raises(ProtocolError, match="bad OPEN"):
        L.Opened.decode(payload)


def test_data_over_the_largest_payload_goes_as_several_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream's bytes, cut anywhere: a large answer's parts (a mapped file's slices) are sliced, not joined."""
    monkeypatch.setattr(L, "MAX_PAYLOAD", 1000)
    parts = [b"a" * 700, memoryview(b"b" * 1500), bytearray(b"c" * 300), b"d" * 500]
    out = L.Outbox()
    out.add_data(7, parts, 3000)
    out.add_data(8, [b"e" * 1001], 1001)
    events = L.LinkDecoder().feed(b"".join(out.take()))
    assert [(kind, conn, len(p)) for kind, conn, p in events] == [(L.DATA, 7, 1000)] * 3 + [(L.DATA, 8, 1000),
                                                                                          (L.DATA, 8, 1)]
    assert b"".join(p for _, conn, p in events if conn == 7) == b"".join(parts)


class Recorder(LinkEnd):
    def on_events(self, events: list[tuple[int, int, bytes]]) -> None:
        pass


async def test_a_link_closed_writes_what_was_emitted_first() -> None:
    """Found in review: close() dropped the messages of its loop turn (a CLOSE, a last answer)."""
    mine, theirs = socket.socketpair()
    _, end = await asyncio.get_running_loop().create_unix_connection(Recorder, sock=mine)
    reader, writer = await asyncio.open_unix_connection(sock=theirs)
    end.emit(L.DATA, 3, b"last")
    end.emit(L.CLOSE, 3)
    end.close()
    events = L.LinkDecoder().feed(await asyncio.wait_for(reader.read(), 5))  # to the end: the link closed
    assert events == [(L.DATA, 3, b"last"), (L.CLOSE, 3, b"")]
    writer.close()
