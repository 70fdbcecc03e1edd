"""Sans-IO frame decoder: bytes in (any split), RemotingCommands out."""

from __future__ import annotations

import struct

from mqtools.common import speedups
from mqtools.remoting.command import RemotingCommand, decode_header
from mqtools.remoting.errors import ProtocolError

DEFAULT_MAX_FRAME = 16 * 1024 * 1024
_I32 = struct.Struct(">i")
#: The loop over complete frames compiled (_cframe.pyx), when it was built and the pure path is not asked for.
_compiled = speedups.compiled("mqtools.remoting._cframe")


class FrameDecoder:
    """Accumulates bytes and yields complete commands.

    After a ProtocolError the stream has lost its framing, so the decoder refuses
    further input; the owner closes that one connection.
    """

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buf = bytearray()
        self._broken = False

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        if self._broken:
            raise ProtocolError("decoder already failed")
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
        except ProtocolError:
            self._broken = True
            raise
        finally:
            if buf is self._buf:
                if pos:
                    del self._buf[:pos]
            elif pos < size:
                self._buf = bytearray(buf[pos:])
        return out

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
        return len(self._buf)
