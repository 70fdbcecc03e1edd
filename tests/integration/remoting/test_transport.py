"""Remoting server dispatch and client transport over real loopback sockets (in-process)."""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import AsyncIterator, Iterable

import pytest
from support.clientsupport import until
from support.ports import free_port

from mqtools.common.addresses import parse_addr, parse_namesrv_list
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import ResponseCode, SerializeType
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingConnectError, RemotingConnectionClosed, RemotingTimeoutError
from mqtools.remoting.frame import FrameDecoder
from mqtools.remoting.server import RemotingServer
from mqtools.remoting.transport import RemotingConnection

ECHO, BOOM, SLOW, NEVER, ONEWAY_SEEN, ASYNC_BOOM = 1, 2, 3, 4, 5, 6


@pytest.fixture
async def server() -> AsyncIterator[RemotingServer]:
    srv = RemotingServer("127.0.0.1", 0)
    seen: list[RemotingCommand] = []
    srv.seen = seen  # type: ignore[attr-defined]
    waiting: list[RemotingCommand] = []
    srv.waiting = waiting  # type: ignore[attr-defined]

    def echo(conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        seen.append(req)
        return req.response(body=req.body, ext_fields=dict(req.ext_fields))

    def boom(conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        raise ValueError("broken processor")

    async def slow(conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(0.05)
        return req.response(remark="slow")

    async def never(conn: RemotingConnection, req: RemotingCommand) -> None:
        waiting.append(req)
        await asyncio.sleep(3600)

    async def async_boom(conn: RemotingConnection, req: RemotingCommand) -> None:
        await asyncio.sleep(0)
        raise RuntimeError("late failure")

    for code, fn in ((ECHO, echo), (BOOM, boom), (SLOW, slow), (NEVER, never), (ONEWAY_SEEN, echo),
                     (ASYNC_BOOM, async_boom)):
        srv.register(code, fn)
    await srv.start()
    yield srv
    await srv.shutdown()


def addr(srv: RemotingServer) -> str:
    return f"127.0.0.1:{srv.port}"


async def test_invoke_matches_responses_by_opaque(server: RemotingServer) -> None:
    client = RemotingClient()
    reqs = [RemotingCommand.request(SLOW if i % 2 else ECHO, {"i": str(i)}) for i in range(20)]
    resps = await asyncio.gather(*(client.invoke(addr(server), r, 5) for r in reqs))
    for req, resp in zip(reqs, resps, strict=True):
        assert resp.opaque == req.opaque
        assert resp.remark == "slow" if req.code == SLOW else resp.ext_fields == req.ext_fields
    assert len(client._conns) == 1  # one pooled connection per address
    await client.close()


async def test_large_and_small_bodies_both_ways_arrive_whole(server: RemotingServer) -> None:
    """Bodies from a few bytes to 3 MiB, many in flight on one connection, read by both ends straight into their
    bodies (FrameDecoder.get_buffer): every echo is its request's body, as bytes."""
    client = RemotingClient()
    sizes = [10, 70_000, 3 * 1024 * 1024, 0, 40_000, 200_000, 5, 1_000_000] * 3
    bodies = [bytes([i % 251]) * size + str(i).encode() for i, size in enumerate(sizes)]
    resps = await asyncio.gather(*(client.invoke(addr(server), RemotingCommand.request(ECHO, body=b), 10)
                                   for b in bodies))
    assert [r.body for r in resps] == bodies
    assert all(type(r.body) is bytes for r in resps)
    assert [r.body for r in server.seen] == bodies  # type: ignore[attr-defined]
    await client.close()


async def test_unknown_code_and_processor_errors_keep_the_connection(server: RemotingServer) -> None:
    client = RemotingClient()
    resp = await client.invoke(addr(server), RemotingCommand.request(999), 5)
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED and "999" in (resp.remark or "")
    resp = await client.invoke(addr(server), RemotingCommand.request(BOOM), 5)
    assert resp.code == ResponseCode.SYSTEM_ERROR and "broken processor" in (resp.remark or "")
    resp = await client.invoke(addr(server), RemotingCommand.request(ASYNC_BOOM), 5)
    assert resp.code == ResponseCode.SYSTEM_ERROR and "late failure" in (resp.remark or "")
    conn = await client.connection(addr(server))
    resp = await client.invoke(addr(server), RemotingCommand.request(ECHO, body=b"still here"), 5)
    assert resp.body == b"still here" and conn.is_open
    await client.close()


async def test_response_keeps_the_binary_serialization(server: RemotingServer) -> None:
    client = RemotingClient()
    req = RemotingCommand.request(ECHO, {"k": "v"}, serialize_type=SerializeType.ROCKETMQ)
    resp = await client.invoke(addr(server), req, 5)
    assert resp.serialize_type == SerializeType.ROCKETMQ and resp.ext_fields == {"k": "v"}
    req = RemotingCommand.request(999, serialize_type=SerializeType.ROCKETMQ)
    assert (await client.invoke(addr(server), req, 5)).serialize_type == SerializeType.ROCKETMQ
    await client.close()


async def test_oneway_requests_get_no_response(server: RemotingServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(RemotingCommand.request(ONEWAY_SEEN, {"x": "1"}, oneway=True).encode())
    writer.write(RemotingCommand.request(BOOM, oneway=True).encode())
    writer.write(RemotingCommand.request(999, oneway=True).encode())
    marker = RemotingCommand.request(ECHO, {"marker": "1"})
    writer.write(marker.encode())
    await writer.drain()
    (length,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 5))
    await reader.readexactly(length)
    # The first and only answer on the wire is the marker's: none of the oneway requests answered.
    assert [c.ext_fields for c in server.seen] == [{"x": "1"}, {"marker": "1"}]  # type: ignore[attr-defined]
    writer.close()


async def test_timeout_cleans_up_the_pending_request(server: RemotingServer) -> None:
    client = RemotingClient()
    conn = await client.connection(addr(server))
    with pytest.raises(RemotingTimeoutError):
        await client.invoke(addr(server), RemotingCommand.request(NEVER), 0.1)
    assert conn._pending == {}
    assert (await client.invoke(addr(server), RemotingCommand.request(ECHO), 5)).code == 0
    await client.close()


async def test_each_request_times_out_at_its_own_deadline(server: RemotingServer) -> None:
    """One timer per connection: a long deadline armed first does not hold back a shorter one after it,
    and an answered request never times out."""
    client = RemotingClient()
    conn = await client.connection(addr(server))
    loop = asyncio.get_running_loop()
    started = loop.time()
    long = asyncio.ensure_future(conn.invoke(RemotingCommand.request(NEVER), 5.0))
    answered = asyncio.ensure_future(conn.invoke(RemotingCommand.request(SLOW), 2.0))
    short = asyncio.ensure_future(conn.invoke(RemotingCommand.request(NEVER), 0.2))
    with pytest.raises(RemotingTimeoutError):
        await short
    assert 0.2 <= loop.time() - started < 5.0  # not held back to the long deadline armed before it
    assert (await answered).remark == "slow" and not long.done()
    later = asyncio.ensure_future(conn.invoke(RemotingCommand.request(NEVER), 0.1))
    with pytest.raises(RemotingTimeoutError):
        await later
    assert not long.done() and len(conn._pending) == 1
    long.cancel()
    await client.close()


async def test_pending_requests_fail_at_once_when_the_connection_drops(server: RemotingServer) -> None:
    client = RemotingClient()
    calls = [asyncio.ensure_future(client.invoke(addr(server), RemotingCommand.request(NEVER), 60))
             for _ in range(3)]
    await until(lambda: len(server.waiting) == 3, 5, "the three requests at the server")  # type: ignore[attr-defined]
    for conn in list(server.connections):
        conn.abort()
    results = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 5)
    assert all(isinstance(r, RemotingConnectionClosed) for r in results)
    # The pool reconnects on the next call.
    assert (await client.invoke(addr(server), RemotingCommand.request(ECHO), 5)).code == 0
    await client.close()


async def test_a_close_before_any_answer_hints_at_tls(server: RemotingServer) -> None:
    """A plain client whose connection is closed before any answer (what a TLS-enforcing server does)
    is told TLS may be needed; once the connection has answered, a drop is just a drop."""
    client = RemotingClient()
    silent = asyncio.ensure_future(client.invoke(addr(server), RemotingCommand.request(NEVER), 60))
    await asyncio.sleep(0.1)
    for conn in list(server.connections):
        conn.abort()
    with pytest.raises(RemotingConnectionClosed, match="TLS enforcing mode"):
        await asyncio.wait_for(silent, 5)
    assert (await client.invoke(addr(server), RemotingCommand.request(ECHO), 5)).code == 0
    answered = asyncio.ensure_future(client.invoke(addr(server), RemotingCommand.request(NEVER), 60))
    await asyncio.sleep(0.1)
    for conn in list(server.connections):
        conn.abort()
    with pytest.raises(RemotingConnectionClosed) as dropped:
        await asyncio.wait_for(answered, 5)
    assert str(dropped.value) == f"connection to {addr(server)} closed"
    await client.close()


async def test_garbage_closes_only_that_connection(server: RemotingServer) -> None:
    client = RemotingClient()
    good = await client.connection(addr(server))
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(struct.pack(">i", -1) + b"garbage")
    await writer.drain()
    assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the server
    resp = await client.invoke(addr(server), RemotingCommand.request(ECHO, body=b"ok"), 5)
    assert resp.body == b"ok" and good.is_open
    await client.close()


def connects_of(client: RemotingClient) -> list[str]:
    """The addresses `client` opens a connection to from now on, in order."""
    attempts: list[str] = []
    real_connect = client._connect

    async def counting(a: str) -> RemotingConnection:
        attempts.append(a)
        return await real_connect(a)

    client._connect = counting  # type: ignore[method-assign]
    return attempts


async def test_namesrv_selection_sticks_and_rotates(server: RemotingServer) -> None:
    dead = f"127.0.0.1:{free_port()}"
    client = RemotingClient([dead, addr(server)])
    client._namesrv_index = 0  # the search starts at a random name server; this test starts it at the dead one
    attempts = connects_of(client)
    for _ in range(5):
        resp = await client.invoke_namesrv(RemotingCommand.request(ECHO), 5)
        assert resp.code == 0
    # The dead server cost one connect attempt; then the live one is sticky.
    assert attempts == [dead, addr(server)]
    await client.close()


async def test_a_hung_name_server_costs_its_share_of_one_timeout(server: RemotingServer) -> None:
    """A name server that accepts and never answers (SIGSTOPped: the kernel still accepts) is left after its share
    of the request's timeout (half, with two), its connection closed, and the request goes to the next one within
    the same timeout; later requests go there at once."""
    hung = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    hung_addr = f"127.0.0.1:{hung.sockets[0].getsockname()[1]}"
    client = RemotingClient([hung_addr, addr(server)])
    client._namesrv_index = 0
    try:
        began = time.monotonic()
        assert (await client.invoke_namesrv(RemotingCommand.request(ECHO, body=b"1"), 4.0)).body == b"1"
        assert 2.0 <= time.monotonic() - began < 4.0
        hung_conn = client._conns.get(hung_addr)
        assert hung_conn is None or not hung_conn.is_open
        attempts = connects_of(client)
        for _ in range(3):
            assert (await client.invoke_namesrv(RemotingCommand.request(ECHO), 4.0)).code == 0
        assert attempts == []  # the live name server's connection, kept: the hung one is not tried again
    finally:
        await client.close()
        hung.close()
        await hung.wait_closed()


async def test_every_name_server_hung_raises_the_timeout() -> None:
    hung = [await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0) for _ in range(2)]
    client = RemotingClient([f"127.0.0.1:{h.sockets[0].getsockname()[1]}" for h in hung])
    try:
        with pytest.raises(RemotingTimeoutError):
            await client.invoke_namesrv(RemotingCommand.request(ECHO), 0.2)
    finally:
        await client.close()
        for h in hung:
            h.close()
            await h.wait_closed()


async def test_namesrv_all_dead_raises_connect_error() -> None:
    client = RemotingClient([f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"])
    with pytest.raises(RemotingConnectError):
        await client.invoke_namesrv(RemotingCommand.request(ECHO), 1)
    await client.close()


async def test_invoke_each_namesrv_reports_per_address(server: RemotingServer) -> None:
    dead = f"127.0.0.1:{free_port()}"
    client = RemotingClient([addr(server), dead])
    results = await client.invoke_each_namesrv(lambda: RemotingCommand.request(ECHO), 5)
    assert isinstance(results[addr(server)], RemotingCommand)
    assert isinstance(results[dead], RemotingConnectError)
    await client.close()


def test_address_parsing() -> None:
    assert parse_addr("127.0.0.1:9876") == ("127.0.0.1", 9876)
    assert parse_namesrv_list("a:1; b:2;") == ["a:1", "b:2"]
    for bad in ("nohost", "a:0", "a:x", ":1"):
        with pytest.raises(ValueError):
            parse_addr(bad)
    with pytest.raises(ValueError):
        parse_namesrv_list("a:1;b")


class RecordingTransport(asyncio.Transport):
    """Counts writes: coalescing is about how many syscalls the answers cost."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closing = False
        self.reading = True
        self.pauses = 0

    def pause_reading(self) -> None:
        self.reading = False
        self.pauses += 1

    def resume_reading(self) -> None:
        self.reading = True

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        self.writes.append(b"".join(bytes(d) for d in list_of_data))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def get_extra_info(self, name: str, default: object = None) -> object:
        return default


def frames_in(data: bytes) -> int:
    count = pos = 0
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos)
        pos += 4 + length
        count += 1
    return count


async def test_answers_to_one_read_leave_in_one_write() -> None:
    conn = RemotingConnection(lambda c, req: c.send(req.response(body=b"x" * 10)))
    transport = RecordingTransport()
    conn.connection_made(transport)
    requests = b"".join(RemotingCommand.request(ECHO, {"i": str(i)}).encode() for i in range(5))
    conn.data_received(requests)
    assert len(transport.writes) == 1 and frames_in(transport.writes[0]) == 5


async def test_many_answers_to_one_read_leave_in_early_writes_in_order() -> None:
    """Answers go out every 16 commands (32 parts), so the peer works on the first while we answer the
    rest; the order of the answers is the order of the requests."""
    conn = RemotingConnection(lambda c, req: c.send(req.response(body=req.ext_fields["i"].encode())))
    transport = RecordingTransport()
    conn.connection_made(transport)
    requests = [RemotingCommand.request(ECHO, {"i": str(i)}) for i in range(100)]
    conn.data_received(b"".join(r.encode() for r in requests))
    assert [frames_in(w) for w in transport.writes] == [16] * 6 + [4]
    answers = list(FrameDecoder().feed(b"".join(transport.writes)))
    assert [a.opaque for a in answers] == [r.opaque for r in requests]
    assert [bytes(a.body) for a in answers] == [str(i).encode() for i in range(100)]


async def test_sends_outside_a_read_go_out_together_on_the_next_iteration() -> None:
    conn = RemotingConnection()
    transport = RecordingTransport()
    conn.connection_made(transport)
    for i in range(3):
        conn.send(RemotingCommand.request(ECHO, {"i": str(i)}, b"body"))
    assert transport.writes == []
    await asyncio.sleep(0)
    assert len(transport.writes) == 1 and frames_in(transport.writes[0]) == 3


async def test_close_writes_what_was_sent_first() -> None:
    conn = RemotingConnection()
    transport = RecordingTransport()
    conn.connection_made(transport)
    conn.send(RemotingCommand.request(ECHO, {}))
    conn.close()
    assert len(transport.writes) == 1 and transport.closing


async def test_a_server_connection_lets_the_loop_turn_after_128_kb_read() -> None:
    """libuv reads on while a socket fills its buffer: a producer keeping the socket full held the loop for
    100-200 ms. A server connection pauses reading once it has read 128 KB since the loop last turned, and
    reads on at the next turn; a client connection (one peer, the server) reads on."""
    request = RemotingCommand.request(ECHO, {}, b"m" * 1000).encode()
    chunk = request * (64 * 1024 // len(request) + 1)  # a little over 64 KB, whole frames
    server_side, client_side = RecordingTransport(), RecordingTransport()
    handled: list[int] = []
    conn = RemotingConnection(lambda c, req: handled.append(1), fair_reads=True)
    conn.connection_made(server_side)
    client = RemotingConnection(lambda c, req: None)
    client.connection_made(client_side)
    conn.data_received(chunk)
    assert server_side.reading
    conn.data_received(chunk)
    assert not server_side.reading and server_side.pauses == 1
    assert len(handled) == 2 * (len(chunk) // len(request))  # what was read is handled, nothing is dropped
    await asyncio.sleep(0)
    assert server_side.reading
    conn.data_received(chunk)
    assert server_side.reading and server_side.pauses == 1  # the count starts again after the turn
    for _ in range(4):
        client.data_received(chunk)
    assert client_side.reading and client_side.pauses == 0
