"""The permissive gRPC port's relay (mqtools.proxy.negotiator) over plain sockets: the first byte picks the target,
bytes cross unchanged both ways, the client's address is known for the relay's end while the connection lasts, and
a connection that never speaks, or whose target is gone, ends alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from mqtools.proxy import negotiator
from mqtools.proxy.negotiator import ProtocolNegotiator


async def _tagged_echo(tag: bytes, seen: list[str]) -> asyncio.Server:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, port = writer.get_extra_info("peername")[:2]
        seen.append(f"{host}:{port}")
        while data := await reader.read(65536):
            writer.write(tag + data)
            await writer.drain()
        writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


@pytest.fixture
async def relay() -> AsyncIterator[tuple[ProtocolNegotiator, list[str]]]:
    seen: list[str] = []
    tls, plain = await _tagged_echo(b"T:", seen), await _tagged_echo(b"P:", seen)
    front = ProtocolNegotiator("127.0.0.1", 0, tls_port=tls.sockets[0].getsockname()[1],
                               plain_port=plain.sockets[0].getsockname()[1])
    await front.start()
    try:
        yield front, seen
    finally:
        await front.close()
        for server in (tls, plain):
            server.close()


async def _read_untagged(reader: asyncio.StreamReader, tag: bytes, size: int) -> bytes:
    """`size` bytes of what the echo sent back, its tags taken out (each read it answers starts with one)."""
    got = b""
    while len(got.replace(tag, b"")) < size:
        chunk = await asyncio.wait_for(reader.read(1 << 20), 5)
        assert chunk, "the relay closed early"
        got += chunk
    assert got.startswith(tag)
    return got.replace(tag, b"")


@pytest.mark.parametrize(("first", "tag"), [(b"\x16\x03\x01", b"T:"), (b"PRI * HTTP/2.0", b"P:")])
async def test_the_first_byte_picks_the_target_and_the_client_address_is_kept(relay, first: bytes,
                                                                                tag: bytes) -> None:
    front, seen = relay
    reader, writer = await asyncio.open_connection("127.0.0.1", front.port)
    writer.write(first)
    assert await _read_untagged(reader, tag, len(first)) == first
    client = "{}:{}".format(*writer.get_extra_info("sockname")[:2])
    assert front.peers == {seen[-1]: client}
    big = bytes(range(256)) * 4096  # 1 MiB more, across many reads of both pumps (no tag inside it)
    writer.write(big)
    assert await _read_untagged(reader, tag, len(big)) == big
    writer.close()
    await writer.wait_closed()
    for _ in range(100):
        if not front.peers:
            break
        await asyncio.sleep(0.01)
    assert front.peers == {}


async def test_a_silent_connection_is_closed_after_the_first_byte_timeout(relay, monkeypatch) -> None:
    front, seen = relay
    monkeypatch.setattr(negotiator, "FIRST_BYTE_TIMEOUT", 0.2)
    reader, writer = await asyncio.open_connection("127.0.0.1", front.port)
    assert await asyncio.wait_for(reader.read(), 5) == b""
    assert seen == [] and front.peers == {}
    writer.close()


async def test_a_target_that_is_gone_ends_that_connection_only(relay) -> None:
    front, _ = relay
    gone = ProtocolNegotiator("127.0.0.1", 0, tls_port=1, plain_port=1)
    await gone.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", gone.port)
        writer.write(b"x")
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
    finally:
        await gone.close()
    reader, writer = await asyncio.open_connection("127.0.0.1", front.port)
    writer.write(b"still")
    assert await reader.readexactly(7) == b"P:still"
    writer.close()


async def test_closing_with_a_relay_in_flight_ends_it_without_an_error_logged(relay) -> None:
    """The proxy's shutdown cancels the relays; a cancelled connection handler made Python 3.11's streams log
    'Exception in callback ... CancelledError' with a traceback (CI saw it in the proxy's output)."""
    front, _ = relay
    loop = asyncio.get_running_loop()
    errors: list[dict] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    reader, writer = await asyncio.open_connection("127.0.0.1", front.port)
    writer.write(b"live")
    assert await reader.readexactly(6) == b"P:live"
    await front.close()
    assert await asyncio.wait_for(reader.read(), 5) == b""
    for _ in range(5):  # the streams' done-callback runs on a later turn of the loop
        await asyncio.sleep(0)
    writer.close()
    assert errors == []
