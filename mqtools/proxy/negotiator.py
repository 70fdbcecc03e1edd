"""TLS and plaintext on one gRPC port (tls.server.mode permissive), as Apache's proxy serves its gRPC port.

Apache's ProxyAndTlsProtocolNegotiator looks at a connection's first bytes and puts TLS or plaintext in front of
the same HTTP/2 handler. grpcio's server cannot be given a connection or a per-connection negotiator, so here the
public port is ours: each connection's first byte (0x16 starts a TLS handshake, RocketMQ's HANDSHAKE_MAGIC_CODE)
chooses one of two loopback ports of the same grpc server, the secure one or the plaintext one, and the bytes are
relayed both ways unchanged (TLS is still ended by grpc). grpc then sees every client as 127.0.0.1 and the relay's
own port: `peers` maps that address back to the client's, which the proxy reports and ACL 2.0's source-IP rules
judge. Only this mode relays; enforcing and disabled bind grpc's own port on the public address.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from mqtools.common.tls import FirstByte, TlsMode, classify_first_byte

log = logging.getLogger(__name__)

#: How long a new connection may stay silent before its first byte decides its protocol.
FIRST_BYTE_TIMEOUT = 10.0
#: One read of the relay: large enough that a 4 MiB message crosses in a few hundred steps.
CHUNK = 256 * 1024


def _address(sockname: tuple) -> str:
    host, port = sockname[0], sockname[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class ProtocolNegotiator:
    """The public gRPC port in permissive mode: a relay to grpc's TLS or plaintext loopback port per connection."""

    def __init__(self, host: str, port: int, *, tls_port: int, plain_port: int) -> None:
        self.host, self.port = host, port
        self._targets = {FirstByte.TLS: tls_port, FirstByte.PLAIN: plain_port}
        #: the relay's loopback address as grpc sees it ("127.0.0.1:PORT") -> the client's "host:port"
        self.peers: dict[str, str] = {}
        self._server: asyncio.Server | None = None
        self._relays: set[asyncio.Task] = set()

    async def bind(self) -> int:
        """Bind and listen without accepting yet; the bound port (the one asked for, or the one chosen for 0)."""
        self._server = await asyncio.start_server(self._accept, self.host, self.port, start_serving=False)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def start(self) -> int:
        """Accept connections (once grpc's loopback ports serve: a relay made earlier would be refused)."""
        if self._server is None:
            await self.bind()
        assert self._server is not None
        await self._server.start_serving()
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._relays):
            task.cancel()
        for task in list(self._relays):
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._relays.add(task)
        try:
            await self._relay(reader, writer)
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            pass  # the client went away or never spoke: that connection alone ends
        except asyncio.CancelledError:
            # close() ends the relays: the handler ends as done, not cancelled, because Python 3.11's streams
            # ask a finished handler for its exception, which for a cancelled one raises and is logged
            pass
        finally:
            self._relays.discard(task)
            writer.close()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first = await asyncio.wait_for(reader.readexactly(1), FIRST_BYTE_TIMEOUT)
        target = self._targets[classify_first_byte(first[0], TlsMode.PERMISSIVE)]
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
        relay_end = _address(up_writer.get_extra_info("sockname"))
        self.peers[relay_end] = _address(writer.get_extra_info("peername"))
        try:
            up_writer.write(first)
            pumps = [asyncio.create_task(_pump(reader, up_writer)), asyncio.create_task(_pump(up_reader, writer))]
            try:
                # either side's end ends both: grpc closed the connection, or the client did
                await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pump in pumps:
                    pump.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
        finally:
            self.peers.pop(relay_end, None)
            up_writer.close()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
