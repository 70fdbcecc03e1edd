"""One end of a front link over asyncio (the worker's and the store process's): what it emits in a loop turn goes
out in one write, what it reads is decoded into link.py's events for the subclass."""

from __future__ import annotations

import asyncio
import logging

from mqtools.remoting.errors import ProtocolError
from mqtools.server.broker.front import link as L

log = logging.getLogger(__name__)


class LinkEnd(asyncio.Protocol):
    """Subclasses handle `on_events`; a link whose bytes are not messages (a bug on one side) is closed."""

    def __init__(self) -> None:
        self._loop = asyncio.get_event_loop()
        self.closed: asyncio.Future[None] = self._loop.create_future()
        self._decoder = L.LinkDecoder()
        self._out = L.Outbox()
        self._transport: asyncio.Transport | None = None
        self._flush_scheduled = False
        #: When the other end was last heard from (the loop's clock): any message counts.
        self.last_heard = self._loop.time()

    def emit(self, kind: int, conn_id: int, payload: bytes | bytearray | memoryview = b"") -> None:
        self._out.add(kind, conn_id, payload)
        self._schedule()

    def _schedule(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        parts = self._out.take()
        if parts and self._transport is not None and not self._transport.is_closing():
            self._transport.writelines(parts)

    def write_buffer_size(self) -> int:
        return 0 if self._transport is None else self._transport.get_write_buffer_size()

    def silent_for(self) -> float:
        """Seconds since the other end was last heard from."""
        return self._loop.time() - self.last_heard

    def close(self) -> None:
        """Close once what was emitted is written: the messages of this loop turn first (a CLOSE, a last answer)."""
        if self._transport is not None:
            self._flush()
            self._transport.close()

    def on_events(self, events: list[tuple[int, int, bytes]]) -> None:
        raise NotImplementedError

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.last_heard = self._loop.time()
        try:
            events = self._decoder.feed(data)
        except ProtocolError as exc:
            log.error("front worker link: %s; closing it", exc)
            self.close()
            return
        self.on_events(events)

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        if not self.closed.done():
            self.closed.set_result(None)
