"""A peer that sends requests and does not read its answers: a server connection stops reading it once the
answers back up (the transport's pause_writing) and handles the requests it read already once they drain, in
order; memory stays bounded (found in review: 2,500 pipelined topic lists grew a name server by 234 MB)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterable

import pytest
from support.readstate import ReadStateTransport

from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.frame import FrameDecoder
from mqtools.remoting.server import RemotingServer
from mqtools.remoting.transport import RemotingConnection

ECHO = 1
HIGH = 64 * 1024
BODY = b"a" * 10_000


class SlowPeerTransport(ReadStateTransport):
    """Keeps what is written until `drain`, and tells its protocol about its high-water mark as asyncio's do."""

    def __init__(self) -> None:
        super().__init__()
        self.protocol: RemotingConnection | None = None
        self.buffered: list[bytes] = []
        self.sent: list[bytes] = []
        self.paused = False

    def _wrote(self, data: bytes) -> None:
        self.buffered.append(data)
        if not self.paused and self.get_write_buffer_size() > HIGH:
            self.paused = True
            self.protocol.pause_writing()  # type: ignore[union-attr]

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._wrote(bytes(data))

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        self._wrote(b"".join(bytes(d) for d in list_of_data))

    def drain(self) -> None:
        """The peer read everything: below the low-water mark."""
        self.sent += self.buffered
        self.buffered = []
        if self.paused:
            self.paused = False
            self.protocol.resume_writing()  # type: ignore[union-attr]

    def get_write_buffer_size(self) -> int:
        return sum(len(b) for b in self.buffered)

    def get_extra_info(self, name: str, default: object = None) -> object:
        return default


def answering(fair_reads: bool) -> tuple[RemotingConnection, SlowPeerTransport, list[int]]:
    handled: list[int] = []

    def on_request(conn: RemotingConnection, req: RemotingCommand) -> None:
        handled.append(int(req.ext_fields["i"]))
        conn.send(req.response(body=BODY))

    conn = RemotingConnection(on_request, fair_reads=fair_reads)
    transport = SlowPeerTransport()
    transport.protocol = conn
    conn.connection_made(transport)
    return conn, transport, handled


def requests(first: int, count: int) -> bytes:
    return b"".join(RemotingCommand.request(ECHO, {"i": str(i)}).encode() for i in range(first, first + count))


async def test_a_server_connection_stops_reading_a_peer_that_does_not_read() -> None:
    conn, transport, handled = answering(fair_reads=True)
    conn.data_received(requests(0, 100))
    # answers leave 16 at a time: the write that passes 64 KB is the last until the peer reads
    assert len(handled) == 16 and not transport.reading
    assert transport.get_write_buffer_size() <= HIGH + 16 * (len(BODY) + 200)
    conn.data_received(requests(100, 5))  # read before the pause took effect: after the held ones
    assert len(handled) == 16
    rounds = 0
    while len(handled) < 105:
        transport.drain()
        await asyncio.sleep(0)
        rounds += 1
        assert transport.get_write_buffer_size() <= HIGH + 16 * (len(BODY) + 200)
    assert rounds == 6 and handled == list(range(105))
    assert not transport.reading  # the last 9 answers are over the mark too
    transport.drain()
    await asyncio.sleep(0)
    assert transport.reading
    answers = list(FrameDecoder().feed(b"".join(transport.sent)))
    assert len(answers) == 105 and all(bytes(a.body) == BODY for a in answers)  # type: ignore[arg-type]


async def test_reading_stays_paused_across_the_fair_read_turn() -> None:
    """The pause after 128 KB read ends at the next loop turn; one for unread answers does not."""
    conn, transport, handled = answering(fair_reads=True)
    big = RemotingCommand.request(ECHO, {"i": "0"}, b"m" * 140_000).encode()
    conn.data_received(big + requests(1, 40))
    assert not transport.reading and len(handled) == 16
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert not transport.reading and len(handled) == 16
    transport.drain()
    await asyncio.sleep(0)
    assert len(handled) == 32 and not transport.reading


async def test_a_client_connection_reads_on() -> None:
    """A client reads the answers it waits for: pausing it too could leave both ends waiting for ever."""
    conn, transport, handled = answering(fair_reads=False)
    conn.data_received(requests(0, 100))
    assert len(handled) == 100 and transport.reading


async def test_a_server_that_is_not_read_keeps_its_memory() -> None:
    """Real sockets: 300 answers of 64 KB to a peer that does not read stay mostly unanswered (not 19 MB buffered
    in the server), and all come, in order, once the peer reads."""
    handled: list[int] = []
    body = b"b" * 65_536

    def on_request(conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        handled.append(req.opaque)
        return req.response(body=body)

    server = RemotingServer("127.0.0.1", 0)
    server.register(ECHO, on_request)
    await server.start()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, ("127.0.0.1", server.port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=4096)
    try:
        sent = [RemotingCommand.request(ECHO, {}) for _ in range(300)]
        writer.write(b"".join(r.encode() for r in sent))
        for _ in range(2000):  # accepted
            if server.connections:
                break
            await asyncio.sleep(0.005)
        (conn,) = server.connections
        assert conn._transport is not None
        for _ in range(2000):  # until the server stops reading, or (before the fix) has answered all
            if len(handled) == len(sent) or not conn._transport.is_reading():
                break
            await asyncio.sleep(0.005)
        assert len(handled) < len(sent)
        assert conn._transport.get_write_buffer_size() < 4 * 1024 * 1024
        decoder, answers = FrameDecoder(), []
        while len(answers) < len(sent):
            chunk = await asyncio.wait_for(reader.read(1 << 20), 30)
            assert chunk
            answers += decoder.feed(chunk)
        assert [a.opaque for a in answers] == [r.opaque for r in sent] == handled
    finally:
        writer.close()
        await server.shutdown()


async def test_the_fair_read_turn_does_not_read_on_past_requests_held() -> None:
    """The output drained while requests were still held: the fair-read turn's resume must wait for them, or what
    arrives next (a front worker's relayed sends) is handled before them (found reading the change)."""
    conn, transport, handled = answering(fair_reads=True)
    big = RemotingCommand.request(ECHO, {"i": "0"}, b"m" * 140_000).encode()
    conn.data_received(big + requests(1, 40))  # paused for the 128 KB read and for the answers: 24 held
    assert len(handled) == 16 and conn._held
    conn._write_paused = False  # resume_writing's flag cleared, its _release not run yet
    conn._read_again()
    assert not transport.reading


async def test_a_request_that_raises_while_held_requests_are_handled_leaves_the_connection_read() -> None:
    def on_request(conn: RemotingConnection, req: RemotingCommand) -> None:
        if req.ext_fields["i"] == "20":
            raise RuntimeError("a processor's bug")
        conn.send(req.response(body=BODY))

    conn = RemotingConnection(on_request, fair_reads=True)
    transport = SlowPeerTransport()
    transport.protocol = conn
    conn.connection_made(transport)
    conn.data_received(requests(0, 40))
    assert not transport.reading
    transport.drain()
    with pytest.raises(RuntimeError):
        conn._release()
    assert transport.reading
