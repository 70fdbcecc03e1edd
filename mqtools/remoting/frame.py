"""Sans-IO frame decoder: bytes in (any split), RemotingCommands out."""

from __future__ import annotations

import struct

from mqtools.remoting.command import RemotingCommand, decode_header
from mqtools.remoting.errors import ProtocolError

DEFAULT_MAX_FRAME = 16 * 1024 * 1024
_PREFIX = struct.Struct(">ii")


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
        self._buf += data
        out: list[RemotingCommand] = []
        buf = self._buf
        pos = 0
        try:
            while len(buf) - pos >= 4:
                (length,) = struct.unpack_from(">i", buf, pos)
                self._check_length(length)
                if len(buf) - pos - 4 < length:
                    break
                out.append(self._decode(memoryview(buf)[pos + 4 : pos + 4 + length]))
                pos += 4 + length
        except ProtocolError:
            self._broken = True
            raise
        finally:
            if pos:
                del buf[:pos]
        return out

    def _check_length(self, length: int) -> None:
        if length < 4:
            raise ProtocolError(f"frame length {length} is too small")
        if length > self.max_frame:
            raise ProtocolError(f"frame length {length} exceeds the {self.max_frame} byte limit")

    @staticmethod
    def _decode(frame: memoryview) -> RemotingCommand:
        try:
            (ori,) = struct.unpack_from(">i", frame, 0)
            serialize_type = (ori >> 24) & 0xFF
            header_len = ori & 0xFFFFFF
            if header_len > len(frame) - 4:
                raise ProtocolError(f"header length {header_len} exceeds the frame")
            cmd = decode_header(serialize_type, frame[4 : 4 + header_len])
            body = frame[4 + header_len :]
            cmd.body = bytes(body) if len(body) else None
            return cmd
        finally:
            frame.release()

    @property
    def buffered(self) -> int:
        return len(self._buf)
