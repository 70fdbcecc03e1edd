"""Sans-IO frame decoder: bytes in (any split), RemotingCommands out."""

from __future__ import annotations

import struct
import threading

from mqtools.common import speedups
from mqtools.remoting.command import RemotingCommand, decode_header
from mqtools.remoting.errors import ProtocolError

DEFAULT_MAX_FRAME = 16 * 1024 * 1024
_I32 = struct.Struct(">i")
_TWO_I32 = struct.Struct(">ii")
#: An incomplete frame with at least this much of its body still to come is read into a body of its own.
LARGE_BODY = 32 * 1024
#: What one read into the scratch buffer may take (libuv's own read size).
SCRATCH_SIZE = 256 * 1024
#: What a read into the scratch takes after a large body: a header and the start of the next body.
PEEK_SIZE = 4096


class _Scratch(threading.local):
    """The scratch buffer reads go into: one per thread (made when a thread first uses it; the importing thread's at
    import), not per connection (a broker's 10,000 idle connections must not hold 256 KiB each, as libuv's own read
    buffer is one per loop). Sharing it is safe: a loop asks get_buffer, reads and calls buffer_updated for one
    connection before anything else runs, and `feed` copies out everything it keeps."""

    def __init__(self) -> None:
        self.view = memoryview(bytearray(SCRATCH_SIZE))


_scratch = _Scratch()


#: The loop over complete frames compiled (_cframe.pyx), when it was built and the pure path is not asked for.
_compiled = speedups.compiled("mqtools.remoting._cframe")


class FrameDecoder:
    """Accumulates bytes and yields complete commands.

    After a ProtocolError the stream has lost its framing, so the decoder refuses
    further input; the owner closes that one connection.
    """

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME, *, large_in_place: bool = False) -> None:
        self.max_frame = max_frame
        #: Read a large body into its own bytes (see _start_large): for a client, whose large frames are answers
        #: (pulls) it keeps; a server's are requests (batches) it copies into the store anyway, and there the two
        #: reads a frame takes cost more than the copies they spare (auto-batched sends: about 1 us a message).
        self.large_in_place = large_in_place
        self._buf = bytearray()
        self._broken = False
        #: A frame whose large body is still arriving: its command, the body, a writable view of it, bytes in.
        self._large: tuple[RemotingCommand, bytes | bytearray, memoryview] | None = None
        self._filled = 0
        #: The last read ended a large body: the next read into the scratch is PEEK_SIZE (see get_buffer).
        self._peek = False

    # Reads straight into the decoder (asyncio.BufferedProtocol) ------------------------------------------------

    def get_buffer(self) -> memoryview:
        """Where the next read from the socket goes: the rest of a large body being read (no copy of it at all
        after the kernel's), else a scratch buffer that `buffer_updated` decodes frames out of."""
        if self._large is not None:
            return self._large[2][self._filled:]
        # after a large body, the next frame is likely another (a consumer's pipelined pulls): read only its header
        # and a little, so that its body too is read where it will stay rather than copied out of the scratch
        return _scratch.view[:PEEK_SIZE] if self._peek else _scratch.view

    def buffer_updated(self, nbytes: int) -> list[RemotingCommand]:
        """`nbytes` were read into the buffer get_buffer gave: the commands that completes."""
        if self._large is not None:
            self._filled += nbytes
            return self._finish_large() if self._filled == len(self._large[1]) else []
        out = self.feed(_scratch.view[:nbytes])
        self._peek = self._large is not None
        return out

    def _finish_large(self) -> list[RemotingCommand]:
        assert self._large is not None
        cmd, body, view = self._large
        view.release()
        self._large, self._filled, self._peek = None, 0, True
        cmd.body = body if type(body) is bytes else bytes(body)
        return [cmd]

    def _start_large(self, buf: bytes | bytearray | memoryview, pos: int) -> bool:
        """At `pos` an incomplete frame (its length checked by the frame loop already): when its header is all
        here and at least LARGE_BODY of its body is still to come, decode the header now and read the rest of
        the body straight into a body of its own (a pull's answer: one copy instead of three). Needs the
        compiled module for a body that is bytes from the start; without it the body is a bytearray made bytes
        at the end (one copy more, as many as before)."""
        if len(buf) - pos < 8:
            return False
        with memoryview(buf) as view:
            length, ori = _TWO_I32.unpack_from(view, pos)
            hstart = pos + 8
            hend = hstart + (ori & 0xFFFFFF)
            body_len = length - 4 - (ori & 0xFFFFFF)
            if hend > len(buf) or body_len < 0 or body_len - (len(buf) - hend) < LARGE_BODY:
                return False
            cmd = decode_header((ori >> 24) & 0xFF, bytes(view[hstart:hend]))
            if _compiled is not None:
                body, target = _compiled.empty_bytes(body_len)
            else:
                body = bytearray(body_len)
                target = memoryview(body)
            got = len(buf) - hend
            target[:got] = view[hend:]
        self._large, self._filled = (cmd, body, target), got
        return True

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        if self._broken:
            raise ProtocolError("decoder already failed")
        if self._large is not None:  # bytes fed (not read into get_buffer) while a large body is being read
            _, body, target = self._large
            take = min(len(data), len(body) - self._filled)
            target[self._filled:self._filled + take] = memoryview(data)[:take]
            self._filled += take
            if self._filled < len(body):
                return []
            done = self._finish_large()
            return done + self.feed(memoryview(data)[take:]) if take < len(data) else done
        # Fast path: nothing buffered, so frames are decoded straight out of `data`
        # and only an incomplete tail is copied into the buffer.
        if self._buf:
            self._buf += data
            buf: bytes | bytearray | memoryview = self._buf
        else:
            buf = data
        size = len(buf)
        pos = 0
        try:
            out, pos = self._frames(buf) if _compiled is None else _compiled.frames(buf, self.max_frame)
            if pos < size and self.large_in_place and self._start_large(buf, pos):
                pos = size
        except ProtocolError:
            self._broken = True
            raise
        finally:
            self._discard(buf, pos, size)
        return out

    def _discard(self, buf: bytes | bytearray | memoryview, pos: int, size: int) -> None:
        """Drop the `pos` bytes decoded; keep an incomplete tail (a copy of it, unless it is in the buffer)."""
        if buf is self._buf:
            if pos:
                del self._buf[:pos]
        elif pos < size:
            self._buf = bytearray(buf[pos:])

    def _frames(self, buf: bytes | bytearray | memoryview) -> tuple[list[RemotingCommand], int]:
        """The commands of the complete frames at the start of `buf`, and the bytes they took."""
        out: list[RemotingCommand] = []
        size = len(buf)
        pos = 0
        while size - pos >= 4:
            (length,) = _I32.unpack_from(buf, pos)
            if length < 4 or length > self.max_frame:
                self._check_length(length)
            end = pos + 4 + length
            if end > size:
                break
            out.append(self._decode(buf, pos + 4, end))
            pos = end
        return out, pos

    def _check_length(self, length: int) -> None:
        if length < 4:
            raise ProtocolError(f"frame length {length} is too small")
        if length > self.max_frame:
            raise ProtocolError(f"frame length {length} exceeds the {self.max_frame} byte limit")

    @staticmethod
    def _decode(buf: bytes | bytearray | memoryview, start: int, end: int) -> RemotingCommand:
        """One frame: buf[start:end] holds the serialize/header-length word, header and body."""
        (ori,) = _I32.unpack_from(buf, start)
        header_len = ori & 0xFFFFFF
        hstart = start + 4
        hend = hstart + header_len
        if hend > end:
            raise ProtocolError(f"header length {header_len} exceeds the frame")
        cmd = decode_header((ori >> 24) & 0xFF, buf[hstart:hend])
        if end > hend:
            if type(buf) is bytes:
                cmd.body = buf[hend:end]
            else:
                with memoryview(buf) as view:
                    cmd.body = bytes(view[hend:end])
        return cmd

    @property
    def buffered(self) -> int:
        return len(self._buf) + self._filled
