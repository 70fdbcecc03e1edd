"""One remoting connection over asyncio: requests matched to responses by opaque.

The same class serves both ends: a client connection may receive requests from the
server (NOTIFY_CONSUMER_IDS_CHANGED, RESET_CONSUMER_CLIENT_OFFSET ...) and a server
connection can invoke the client; incoming requests go to the `on_request` callback.
"""

from __future__ import annotations

import asyncio
import logging
import math
import ssl
from collections.abc import Callable, Iterator
from typing import Any

from mqtools.common import speedups
from mqtools.remoting.command import FLAG_ONEWAY, FLAG_RESPONSE, GatheredBody, RemotingCommand
from mqtools.remoting.errors import ProtocolError, RemotingConnectionClosed, RemotingTimeoutError
from mqtools.remoting.frame import DEFAULT_MAX_FRAME, FrameDecoder

log = logging.getLogger(__name__)

#: Pending output up to this size is joined and written at once; bigger parts are not copied, nor a gathered
#: body's (see GatheredBody): those go out by one vectored write.
_JOIN_LIMIT = 64 * 1024
#: Pending output of this many parts (a command is a header and maybe a body) is written at once
#: instead of at the end of the iteration: with 64 requests in one read, answering all 64 in one
#: write made the client wait for the last one before it could start on the first, so client and
#: broker took turns on the CPU instead of working at once (sync sends, 64 in flight, one client
#: process: 28,500-29,100 -> 42,000-42,700 msgs/s with this; 8-64 parts all measured within 10%).
_EARLY_FLUSH_PARTS = 32
#: A server connection that has read this much since it last let the loop turn stops reading until the next
#: turn. libuv (uvloop) goes on reading a socket that fills its 256 KB buffer, up to 32 reads in one turn: a
#: producer with 256 async sends in flight kept one connection's reads going for 100-200 ms at a time, every
#: other connection and every timer waiting meanwhile (and the send-queue wait fast failure judges by, with
#: them). Pausing costs two cheap epoll updates per 128 KB, about a hundred 1 KB sends.
_FAIR_READ_BYTES = 128 * 1024

#: RemotingCommand.encode_parts, compiled (_cframe.pyx) when it was built and the pure path is not asked for.
_encode_parts = getattr(speedups.compiled("mqtools.remoting._cframe"), "encode_parts", RemotingCommand.encode_parts)

RequestCallback = Callable[["RemotingConnection", RemotingCommand], None]
CloseCallback = Callable[["RemotingConnection"], None]
BadFrameCallback = Callable[["RemotingConnection", ProtocolError], None]
ReadDoneCallback = Callable[[], None]


class RemotingConnection(asyncio.BufferedProtocol):
    def __init__(
        self,
        on_request: RequestCallback | None = None,
        on_close: CloseCallback | None = None,
        max_frame: int = DEFAULT_MAX_FRAME,
        *,
        on_bad_frame: BadFrameCallback | None = None,
        fair_reads: bool = False,
        after_read: ReadDoneCallback | None = None,
        large_in_place: bool = False,
    ) -> None:
        self._decoder = FrameDecoder(max_frame, large_in_place=large_in_place)
        #: Bytes read since the loop last turned (see _FAIR_READ_BYTES); None when this connection reads on
        #: as long as there is data (clients: their peer is one server).
        self._burst: int | None = 0 if fair_reads else None
        #: Told once (the connection closes) when the peer's bytes are not frames; a server
        #: rate-limits what it logs, since every new connection can do it again.
        self._on_bad_frame = on_bad_frame
        self._on_request = on_request
        self._on_close = on_close
        #: Called once the answers to a read are written (see last_of_read).
        self._after_read = after_read
        #: True only while the last request of a read is handled: nothing else runs between it and the write of
        #: the read's answers, then `after_read`, so work that may follow the answer (a put's dispatch) can wait.
        self.last_of_read = False
        #: opaque -> (future, deadline on the loop's clock, request code, timeout) of each request in flight.
        self._pending: dict[int, tuple[asyncio.Future[RemotingCommand], float, int, float]] = {}
        #: One timer per connection, at the earliest deadline in flight (see invoke).
        self._sweep: asyncio.TimerHandle | None = None
        self._sweep_at = math.inf
        self._transport: asyncio.Transport | None = None
        self.peer = "?"
        self._loop = asyncio.get_event_loop()
        self.closed = self._loop.create_future()
        #: Output of this loop iteration: every response to one read goes out in one write.
        self._out: list[bytes | memoryview] = []
        self._out_size = 0
        #: The pending output holds a gathered body's parts: written as they are, not joined.
        self._gathered = False
        self._flush_scheduled = False
        self._reading = False
        #: The requests of the read being handled, while they are (see pause_writing).
        self._batch: Iterator[RemotingCommand] | None = None
        #: The transport's output passed its high-water mark (a server connection only): reading stays paused
        #: and requests read already wait in `_held`, in order, until the output drains (resume_writing).
        self._write_paused = False
        self._held: list[RemotingCommand] = []
        #: Free slot for the owner (a server's per-client state, for instance).
        self.attachment: Any = None
        #: A response has arrived on this connection (a peer that never answers may want TLS).
        self.answered = False
        self.is_tls = False
        #: When the certificate the peer served expires (epoch seconds): None without TLS, or when it was not
        #: verified (nothing checked, nothing known).
        self.peer_not_after: float | None = None

    # asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        self.is_tls = transport.get_extra_info("sslcontext") is not None
        if self.is_tls and (served := transport.get_extra_info("peercert")) and "notAfter" in served:
            self.peer_not_after = float(ssl.cert_time_to_seconds(served["notAfter"]))
        peer = transport.get_extra_info("peername")
        if peer:
            self.peer = f"{peer[0]}:{peer[1]}"

    def get_buffer(self, sizehint: int) -> memoryview:
        """The loop reads into the decoder (asyncio.BufferedProtocol), not into bytes of its own that the decoder
        copies; with `large_in_place` (a client's connection) a large answer's body straight into the bytes it will
        be, instead of a copy of each read, a copy into the decoder's buffer and one out of it."""
        return self._decoder.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self._received(nbytes, self._decoder.buffer_updated, nbytes)

    def data_received(self, data: bytes) -> None:
        """Bytes handed over (a front worker's relay, tests): the same as a read into get_buffer."""
        self._received(len(data), self._decoder.feed, data)

    def _received(self, size: int, decode: Callable[[Any], list[RemotingCommand]], arg: Any) -> None:
        if self._burst is not None:
            self.count_read(size)
        try:
            commands = decode(arg)
        except ProtocolError as exc:
            if self._on_bad_frame is not None:
                self._on_bad_frame(self, exc)
            else:
                log.warning("closing %s: %s", self.peer, exc)
            self.close()
            return
        if self._write_paused or self._held:  # the peer does not read its answers: these wait their turn
            self._held.extend(commands)
            return
        self._handle(commands)

    def _handle(self, commands: list[RemotingCommand]) -> None:
        """Handle one read's commands; pause_writing may end the loop early, holding the rest."""
        self._reading = True
        last = commands[-1] if commands and self._after_read is not None else None  # deferred work needs the hook
        self._batch = batch = iter(commands)
        try:
            for cmd in batch:
                if cmd.flag & FLAG_RESPONSE:  # not the is_response property: this runs for every command
                    self.answered = True
                    waiting = self._pending.pop(cmd.opaque, None)
                    if waiting is not None and not waiting[0].done():
                        waiting[0].set_result(cmd)
                elif self._on_request is not None:
                    self.last_of_read = cmd is last
                    self._on_request(self, cmd)
        finally:
            self._batch = None
            self._reading = False
            self.last_of_read = False
            self._flush()
            if self._after_read is not None:
                self._after_read()

    def count_read(self, size: int) -> None:
        """`size` bytes of requests read (by data_received, or handed over parsed by a broker's front worker): past
        _FAIR_READ_BYTES in one loop turn, reading pauses until the loop has turned."""
        if self._burst is None:
            return
        self._burst += size
        if self._burst >= _FAIR_READ_BYTES and self._transport is not None:
            self._transport.pause_reading()
            self._loop.call_soon(self._read_again)

    def _read_again(self) -> None:
        """The loop has turned since reading was paused: read on (unless the peer is not reading its answers)."""
        self._burst = 0
        transport = self._transport
        if transport is not None and not transport.is_closing() and not self._write_paused and not self._held:
            transport.resume_reading()  # with requests held, _release reads on once they are handled

    def pause_writing(self) -> None:
        """asyncio: output not yet sent passed the transport's high-water mark, so the peer does not read its
        answers as fast as it sends requests. A server connection stops reading it and holds the requests of
        this read not handled yet, so its answers cannot pile up in memory (Apache's server turns autoRead off
        in channelWritabilityChanged). A client reads on: it reads the answers it waits for, and a server that
        stopped reading while its client did too would leave both waiting for ever."""
        if self._burst is None:
            return
        self._write_paused = True
        if self._batch is not None:
            self._held.extend(self._batch)  # takes the rest of the read: _handle's loop ends after this request
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.pause_reading()

    def resume_writing(self) -> None:
        """asyncio: the output drained below the low-water mark: the held requests, then reading, from the next
        loop turn (not from within whatever write this came from)."""
        if self._write_paused:
            self._write_paused = False
            self._loop.call_soon(self._release)

    def _release(self) -> None:
        """Handle the held requests unless the output backed up again meanwhile, then read on if it did not."""
        transport = self._transport
        if self._write_paused or transport is None or transport.is_closing():
            return
        held, self._held = self._held, []
        try:
            if held:
                self._handle(held)  # may pause again, holding what is left
        finally:  # a request that raised must not leave the connection unread for ever
            if not self._write_paused and not transport.is_closing():
                transport.resume_reading()

    def _silent_plain_close(self) -> bool:
        """Closed by the peer before answering anything, over a plain socket: what a server in TLS
        enforcing mode does to a plain client, worth saying so in the error."""
        return not self.answered and not self.is_tls

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        self._held = []
        pending, self._pending = self._pending, {}
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep, self._sweep_at = None, math.inf
        for fut, *_ in pending.values():
            if not fut.done():
                fut.set_exception(RemotingConnectionClosed(self.peer, self._silent_plain_close()))
        if not self.closed.done():
            self.closed.set_result(None)
        if self._on_close is not None:
            self._on_close(self)

    # API ------------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    def send(self, cmd: RemotingCommand) -> None:
        """Write a command without waiting for anything (responses, oneway requests)."""
        transport = self._transport
        if transport is None or transport.is_closing():
            raise RemotingConnectionClosed(self.peer)
        self.send_frame(*_encode_parts(cmd))

    def send_frame(self, frame: bytes, body: bytes | bytearray | memoryview | GatheredBody | None = None) -> None:
        """Write a frame encoded already (with its body apart, so that a large one is not copied): send()'s
        command, or a compiled processor's answer; dropped once the peer has gone, as RemotingServer drops an
        answer nobody waits for."""
        if self._transport is None:
            return
        out = self._out
        out.append(frame)
        self._out_size += len(frame)
        if body is not None:
            if type(body) is GatheredBody:
                out.extend(body.parts)
                self._gathered = True
            else:
                out.append(body)
            self._out_size += len(body)
        if len(out) >= _EARLY_FLUSH_PARTS:
            self._flush()
        elif not self._reading and not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Write what this iteration produced: one syscall for many small responses."""
        self._flush_scheduled = False
        out = self._out
        if not out:
            return
        self._out = []
        size, self._out_size = self._out_size, 0
        gathered, self._gathered = self._gathered, False
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        if len(out) == 1:
            transport.write(out[0])
        elif size <= _JOIN_LIMIT and not gathered:
            transport.write(b"".join(out))
        else:
            transport.writelines(out)

    async def invoke(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send a request and wait for its response; RemotingTimeoutError after `timeout` seconds.

        Deadlines live in the pending table and one timer per connection fires at the earliest
        (RocketMQ scans its response table the same way): with 64 requests in flight a timer of
        their own, armed and cancelled each, was an eighth of the producer's profile.
        """
        fut: asyncio.Future[RemotingCommand] = self._loop.create_future()
        deadline = self._loop.time() + timeout
        self._pending[cmd.opaque] = (fut, deadline, cmd.code, timeout)
        try:
            self.send(cmd)
            if deadline < self._sweep_at:
                self._arm(deadline)
            return await fut
        finally:
            self._pending.pop(cmd.opaque, None)

    def _arm(self, when: float) -> None:
        if self._sweep is not None:
            self._sweep.cancel()
        self._sweep_at = when
        self._sweep = self._loop.call_at(when, self._expire_due)

    def _expire_due(self) -> None:
        """Fail the requests whose deadline has passed; the timer moves to the next deadline."""
        self._sweep, self._sweep_at = None, math.inf
        now = self._loop.time()
        earliest = math.inf
        for fut, deadline, code, timeout in list(self._pending.values()):
            if deadline <= now:
                if not fut.done():
                    fut.set_exception(RemotingTimeoutError(self.peer, timeout, code))
            elif deadline < earliest:
                earliest = deadline
        if earliest < math.inf:
            self._arm(earliest)

    def invoke_oneway(self, cmd: RemotingCommand) -> None:
        cmd.flag |= FLAG_ONEWAY
        self.send(cmd)

    def close(self) -> None:
        """Close after what was already sent is written."""
        self._flush()
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()
