"""A plain send parsed by a front worker: what SEND carries on the link, so that the store's process stores it
without framing it, reading its JSON or making a command of it, and without the parts of its put that need
no store (its stored properties, its body's CRC, the dispatch's values from the properties).

Layout (big-endian): the request's opaque (i32) and flag (i32); the send's queueId, sysFlag and flag (i32
each), bornTimestamp (i64) and reconsumeTimes (i32); the lengths of the request's JSON header as the client
sent it (u32), the topic (u16) and the properties as stored (u32: the client's without WAIT, then the
broker's CLUSTER); the body's CRC as stored (i32), the tags code (i64), the lengths of KEYS and UNIQ_KEY
(i32 each, -1 for none) and whether WAIT was false (u8); then the header, the topic, the properties, KEYS,
UNIQ_KEY (all UTF-8) and the body. The header is kept so that a send the store's compiled path does not take
(anything but a plain put, fast failure's probe overdue, ACL) is served as the very frame the client sent
(`frame`).

A worker makes a record (`SendSplitter`, with the compiled splitter's `split_sends`) only of a SEND_MESSAGE_V2
request with a JSON header whose fields the compiled send (processors/_csend.pyx) reads without its general
path: every number parses and fits its Java type, no maxReconsumeTimes, properties without a transaction,
delay, timer or CLUSTER of their own; every other frame goes as bytes (DATA), in the connection's order.
"""

from __future__ import annotations

import struct
from types import ModuleType

from mqtools.common import speedups
from mqtools.remoting.codes import RequestCode, SerializeType
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import ProtocolError
from mqtools.remoting.frame import FrameDecoder

FIXED = struct.Struct(">iiiiiqiIHIiqiiB")
FIXED_SIZE = FIXED.size
_PREFIX = struct.Struct(">II")
_SEND_V2 = int(RequestCode.SEND_MESSAGE_V2)
#: How a SEND_MESSAGE_V2 header starts, as every client writes it: the splitter decodes only these.
SEND_V2_PREFIX = b'{"code":%d,' % _SEND_V2


def _compiled() -> ModuleType | None:
    """The compiled splitter (which imports this module: asked for when used), where the compiled send that stores
    its records is built too."""
    if speedups.compiled("mqtools.server.broker.processors._csend") is None:
        return None
    return speedups.compiled("mqtools.server.broker.front._csplit")


class BadRecord(ProtocolError):
    """A record whose lengths do not fit it."""


def frame(record: bytes) -> bytes:
    """The frame the client sent, out of its record."""
    if len(record) < FIXED_SIZE:
        raise BadRecord(f"a send record of {len(record)} bytes")
    fields = FIXED.unpack_from(record)
    header_len, topic_len, props_len = fields[7:10]
    keys_len, uniq_len = fields[12:14]
    header_at = FIXED_SIZE
    body_at = header_at + header_len + topic_len + props_len + max(keys_len, 0) + max(uniq_len, 0)
    if body_at > len(record):
        raise BadRecord(f"a send record of {len(record)} bytes whose parts take {body_at}")
    header = record[header_at:header_at + header_len]
    body = record[body_at:]
    return b"".join((_PREFIX.pack(4 + header_len + len(body), (int(SerializeType.JSON) << 24) | header_len), header,
                     body))


def command_of(record: bytes) -> RemotingCommand:
    """The request a record was, decoded from its frame as a connection decodes it."""
    data = frame(record)
    return FrameDecoder(len(data)).feed(data)[0]


class SendSplitter:
    """One client's stream cut at its frames (sans-IO): `feed` returns, in the stream's order, runs of frames
    to relay as they are (DATA, bytes) and records of plain sends (SEND). A frame whose length is out of range
    ends the cutting: it and everything after go as bytes, for the store's decoder to refuse. The loop is the
    compiled splitter's (_csplit.split_sends): a worker cuts streams only where the store's process can take the
    records (`available`), and otherwise relays them as they come."""

    DATA, SEND = "data", "send"

    def __init__(self, max_frame: int, cluster: str) -> None:
        self.max_frame = max_frame
        self.cluster = cluster
        #: A cut-off tail too short to know its frame's length (under 8 bytes), joined with the next read.
        self._buf = b""
        #: The reads of a frame known incomplete, kept apart and joined once it is whole: a large frame trickled
        #: in small reads is copied once, not once a read (quadratic); `_held` bytes of the `_need` it takes.
        self._parts: list[bytes] | None = None
        self._held = 0
        self._need = 0
        self._broken = False
        self._split = _compiled().split_sends

    @staticmethod
    def available() -> bool:
        return _compiled() is not None

    def feed(self, data: bytes) -> list[tuple[str, bytes]]:
        if self._broken:
            return [(self.DATA, data)]
        if self._parts is not None:
            self._parts.append(data)
            self._held += len(data)
            if self._held < self._need:
                return []
            buf = b"".join(self._parts)
            self._parts = None
        elif self._buf:
            buf = self._buf + data
        else:
            buf = data
        out, pos, self._broken = self._split(buf, self.max_frame, self.cluster)
        if pos == len(buf):
            self._buf = b""
        else:
            self._hold(buf[pos:])
        return out

    def _hold(self, tail: bytes) -> None:
        """What the split left: a frame begun, its length read (the split stops before a frame it cannot take
        whole, and past one whose length is out of range), or fewer bytes than a frame's length and header's."""
        if len(tail) < 8:
            self._buf = tail
            return
        self._buf = b""
        self._parts, self._held, self._need = [tail], len(tail), 4 + int.from_bytes(tail[:4], "big")

