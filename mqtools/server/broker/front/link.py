"""The link between a front worker and the broker's store process: many client connections over one socket.

Sans-IO: `header` and `Outbox` make bytes, `LinkDecoder` turns bytes into events; the two ends
(front/worker.py, front/relay.py) do the reads and writes. Each message is a 9-byte header, its
payload's length (u32), its kind (u8) and the client connection it is about (u32), then the payload:

  HELLO  worker -> broker, connection 0: the worker serves its ports
  OPEN   worker -> broker: a client connected; the payload is JSON {"peer", "tls", "notAfter"}
  DATA   both ways: bytes read from the client / to write to it, passed on as they are
  SEND   worker -> broker: a client's plain send, parsed (send_record.py), in its place in the client's stream
  CLOSE  both ways: the client went away / close the client's connection once written
  PING   broker -> worker, connection 0: sent when the worker has said nothing for a while
  PONG   worker -> broker, connection 0: the answer (a worker that answers nothing is hung, relay.py kills it)
  PAUSE  worker -> broker: the client does not read its answers (its socket's output passed its high-water mark):
         the worker stops reading it, the store's process stops serving it (its connection's pause_writing)
  RESUME worker -> broker: that output drained: both read and serve the client again
  ACCEPT_PAUSE   broker -> worker, connection 0: stop accepting new clients for now (this worker holds more than
                 its share: accept_gate.py), leaving them in the shared listening socket's backlog for the others
  ACCEPT_RESUME  broker -> worker, connection 0: accept again

A DATA payload is a piece of the client's byte stream, so an answer larger than MAX_PAYLOAD goes as several.

A worker cuts each client's stream at its frames and parses the plain sends (the most common request, whose
framing, JSON and command the store's loop then no longer makes); every other frame it passes on as bytes, so
the store process sees each client's requests in the order the client sent them.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from mqtools.remoting.errors import ProtocolError

HELLO, OPEN, DATA, CLOSE, PING, PONG, SEND, PAUSE, RESUME = 1, 2, 3, 4, 5, 6, 7, 8, 9
ACCEPT_PAUSE, ACCEPT_RESUME = 10, 11
KINDS = frozenset({HELLO, OPEN, DATA, CLOSE, PING, PONG, SEND, PAUSE, RESUME, ACCEPT_PAUSE, ACCEPT_RESUME})
_HEADER = struct.Struct(">IBI")
HEADER_SIZE = _HEADER.size
#: The largest payload of one message: a bigger length is a bug. A client's frames are smaller (a broker's maxFrame
#: is 16 MiB); an answer may be larger (QUERY_MESSAGE's 64 bodies of 4 MiB), and goes as several DATA (add_data).
MAX_PAYLOAD = 256 * 1024 * 1024


def header(kind: int, conn_id: int, size: int) -> bytes:
    return _HEADER.pack(size, kind, conn_id)


@dataclass(frozen=True)
class Opened:
    """What a worker knows of a client connection when it opens (OPEN's payload)."""

    peer: tuple[str, int]
    tls: bool
    #: When the certificate the client served expires, as ssl's getpeercert() writes it, once verified; else None.
    not_after: str | None = None

    def encode(self) -> bytes:
        return json.dumps({"peer": list(self.peer), "tls": self.tls, "notAfter": self.not_after}).encode()

    @classmethod
    def decode(cls, payload: bytes) -> Opened:
        try:
            doc = json.loads(payload)
            host, port = doc["peer"]
            return cls((str(host), int(port)), bool(doc["tls"]), doc.get("notAfter"))
        except (ValueError, KeyError, TypeError) as exc:
            raise ProtocolError(f"bad OPEN on the front link: {exc}") from None


class LinkDecoder:
    """Bytes in, (kind, connection id, payload) out; ProtocolError on an unknown kind or an absurd length."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, int, bytes]]:
        # nothing held back: the messages are sliced straight out of `data` (one copy each), only a cut-off tail kept
        buf: bytes | bytearray = data
        if self._buf:
            self._buf += data
            buf = self._buf
        view = memoryview(buf)
        out: list[tuple[int, int, bytes]] = []
        pos, end = 0, len(buf)
        try:
            while end - pos >= HEADER_SIZE:
                size, kind, conn_id = _HEADER.unpack_from(buf, pos)
                if kind not in KINDS or size > MAX_PAYLOAD:
                    raise ProtocolError(f"bad message on the front link: kind {kind}, {size} bytes")
                start = pos + HEADER_SIZE
                if end - start < size:
                    break
                out.append((kind, conn_id, bytes(view[start:start + size])))
                pos = start + size
        finally:
            view.release()
        if buf is self._buf:
            del self._buf[:pos]
        elif pos < end:
            self._buf = bytearray(data[pos:])
        return out


class Outbox:
    """What one end writes in a loop iteration: headers and payload parts, written at once by its owner."""

    def __init__(self) -> None:
        self.parts: list[bytes | bytearray | memoryview] = []

    def add(self, kind: int, conn_id: int, payload: bytes | bytearray | memoryview = b"") -> None:
        self.parts.append(header(kind, conn_id, len(payload)))
        if payload:
            self.parts.append(payload)

    def add_data(self, conn_id: int, parts: Iterable[bytes | bytearray | memoryview], size: int) -> None:
        """DATA of `size` bytes in `parts`, not joined (a pull's body stays the mapped file's slices); over
        MAX_PAYLOAD, cut into several messages (their payloads slices of the parts, not copies)."""
        if size <= MAX_PAYLOAD:
            self.parts.append(header(DATA, conn_id, size))
            self.parts.extend(p for p in parts if p)
            return
        held: list[bytes | bytearray | memoryview] = []
        room = MAX_PAYLOAD
        for part in parts:
            view, at = memoryview(part).cast("B"), 0
            while at < len(view):
                take = min(len(view) - at, room)
                held.append(view[at:at + take])
                at += take
                room -= take
                if not room:
                    self.parts.append(header(DATA, conn_id, MAX_PAYLOAD))
                    self.parts.extend(held)
                    held, room = [], MAX_PAYLOAD
        if held:
            self.parts.append(header(DATA, conn_id, MAX_PAYLOAD - room))
            self.parts.extend(held)

    def take(self) -> list[bytes | bytearray | memoryview]:
        parts, self.parts = self.parts, []
        return parts
