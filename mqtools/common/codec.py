"""The stored message layout (commitlog entries) and the SEND_BATCH_MESSAGE body encoding.

Stored entry, big-endian (RocketMQ's CommitLog layout): TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, FLAG,
QUEUEOFFSET, PHYSICALOFFSET, SYSFLAG, BORNTIMESTAMP, BORNHOST (8|20), STORETIMESTAMP,
STOREHOST (8|20), RECONSUMETIMES, PREPARED TRANSACTION OFFSET, BODY (len+bytes), TOPIC
(1-byte len for v1 magic, 2-byte for v2), PROPERTIES (2-byte len + bytes).

Topic and properties bytes are decoded like Java's ``new String(bytes, UTF_8)``: invalid sequences
become U+FFFD instead of making an otherwise intact entry unreadable.

The writer packs straight into a target buffer (the commitlog mmap) so a put is one
``pack_into`` for the fixed part plus two slice copies; every reader works on memoryviews.
"""

from __future__ import annotations

import functools
import ipaddress
import struct
import zlib
from collections.abc import Callable, Iterator
from typing import Protocol

from mqtools.common import properties as P
from mqtools.common import speedups
from mqtools.common.ids import create_offset_msg_id, host_address_bytes
from mqtools.common.message import Host, Message, MessageExt
from mqtools.common.sysflag import BORNHOST_V6_FLAG, STOREHOST_V6_FLAG

MAGIC_V1 = -626843481  # 0xDAA320A7
MAGIC_V2 = -626843477  # 0xDAA320AB
BLANK_MAGIC = -875286124  # 0xCBD43194, end-of-file filler
END_FILE_MIN_BLANK_LENGTH = 8
#: Fixed part with both hosts IPv4, excluding the topic-length field (1 or 2 bytes).
FIXED_V4 = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4 + 2
MAX_TOPIC_LEN_V1 = 127
MAX_PROPERTIES_LEN = 32767

INT = struct.Struct(">i")
INT2 = struct.Struct(">ii")
SHORT = struct.Struct(">h")
QQ = struct.Struct(">qq")
LONG = struct.Struct(">q")
BLANK = struct.Struct(">ii")


def _header(born_v6: bool, store_v6: bool) -> struct.Struct:
    born = "16s" if born_v6 else "4s"
    store = "16s" if store_v6 else "4s"
    return struct.Struct(f">iiiiiqqiq{born}iq{store}iiqi")


#: Fixed header structs up to and including the body length, keyed by sysflag & 0x30.
HEADERS = {
    0: _header(False, False),
    BORNHOST_V6_FLAG: _header(True, False),
    STOREHOST_V6_FLAG: _header(False, True),
    BORNHOST_V6_FLAG | STOREHOST_V6_FLAG: _header(True, True),
}


class CorruptMessageError(ValueError):
    """A commitlog entry that fails a structural or CRC check."""


def body_crc(body: bytes | memoryview) -> int:
    """BODYCRC as RocketMQ computes it: CRC-32 (IEEE) masked to 31 bits; 0 for an empty body."""
    return zlib.crc32(body) & 0x7FFFFFFF if body else 0


@functools.lru_cache(maxsize=4096)
def host_flags(born_host: Host, store_host: Host) -> int:
    """The sysflag bits 4/5 the hosts require (IPv6 addresses take 16 bytes); cached, as a send asks it for
    its connection's address and the broker's each time."""
    flags = 0
    if len(host_address_bytes(born_host[0])) == 16:
        flags |= BORNHOST_V6_FLAG
    if len(host_address_bytes(store_host[0])) == 16:
        flags |= STOREHOST_V6_FLAG
    return flags


def stored_size(sys_flag: int, body_len: int, topic_len: int, props_len: int) -> int:
    """TOTALSIZE of an entry; v2 (2-byte topic length) when the topic is over 127 bytes."""
    size = FIXED_V4 + body_len + topic_len + props_len + (1 if topic_len <= MAX_TOPIC_LEN_V1 else 2)
    if sys_flag & BORNHOST_V6_FLAG:
        size += 12
    if sys_flag & STOREHOST_V6_FLAG:
        size += 12
    return size


def topic_props_tail(topic: bytes, props: bytes) -> bytes:
    """TOPIC length + TOPIC + PROPERTIES length + PROPERTIES: the part after the body."""
    if len(topic) <= MAX_TOPIC_LEN_V1:
        head = bytes((len(topic),))
    else:
        head = SHORT.pack(len(topic))
    return head + topic + SHORT.pack(len(props)) + props


def magic_for(topic_len: int) -> int:
    return MAGIC_V1 if topic_len <= MAX_TOPIC_LEN_V1 else MAGIC_V2


class StoredSource(Protocol):
    """The fields of an entry that come from the message itself (MessageExt and
    MessageExtBrokerInner both carry them); the store supplies the rest when it appends."""

    body: bytes
    flag: int
    queue_id: int
    born_timestamp: int
    born_host: Host
    reconsume_times: int
    prepared_transaction_offset: int


def write_stored(buf, pos: int, msg: StoredSource, *, total: int, sys_flag: int, queue_offset: int,
                 phys_offset: int, store_timestamp: int, store_host: Host, topic: bytes,
                 properties: bytes) -> None:
    """Write one complete entry into ``buf`` at ``pos`` (``total`` bytes, from ``stored_size``).

    The message gives body, flag, queue id, born time/host, reconsume times and prepared offset;
    the keywords are what the append decides (sizes, flags with the host bits, offsets, store
    time/host) plus the encoded topic and properties. BODYCRC and the magic code are derived.
    On the append hot path: one ``pack_into`` and two slice copies.
    """
    body = msg.body
    born_host = msg.born_host
    header = HEADERS[sys_flag & 0x30]
    header.pack_into(buf, pos, total, magic_for(len(topic)), body_crc(body), msg.queue_id, msg.flag,
                     queue_offset, phys_offset, sys_flag, msg.born_timestamp,
                     host_address_bytes(born_host[0]), born_host[1], store_timestamp,
                     host_address_bytes(store_host[0]), store_host[1], msg.reconsume_times,
                     msg.prepared_transaction_offset, len(body))
    p = pos + header.size
    end = p + len(body)
    buf[p:end] = body
    tail = topic_props_tail(topic, properties)
    buf[end:end + len(tail)] = tail


def encode_stored(msg: MessageExt, properties_string: str | None = None) -> bytes:
    """One stored entry from a MessageExt (all fields as given; BODYCRC recomputed)."""
    topic = msg.topic.encode()
    props = (properties_string if properties_string is not None
             else P.properties_to_string(msg.properties)).encode()
    sys_flag = (msg.sys_flag & ~0x30) | host_flags(msg.born_host, msg.store_host)
    total = stored_size(sys_flag, len(msg.body), len(topic), len(props))
    buf = bytearray(total)
    write_stored(buf, 0, msg, total=total, sys_flag=sys_flag, queue_offset=msg.queue_offset,
                 phys_offset=msg.commit_log_offset, store_timestamp=msg.store_timestamp,
                 store_host=msg.store_host, topic=topic, properties=props)
    return bytes(buf)


def _host(raw: bytes, port: int) -> Host:
    return _ip_text(raw), port


@functools.lru_cache(maxsize=1024)
def _ip_text(raw: bytes) -> str:
    """Cached: a reader sees the same few hosts on every message, and ipaddress is a third of a decode."""
    return str(ipaddress.ip_address(raw))


def decode_entries(buf) -> list[MessageExt]:
    """Every entry of a run of whole entries (a pull answer's body), in order."""
    mv = memoryview(buf)
    out = []
    pos = 0
    while pos < len(mv):
        msg = decode_stored(mv, pos)
        pos += msg.store_size
        out.append(msg)
    return out


def decode_stored(buf, offset: int = 0, check_crc: bool = False, read_body: bool = True) -> MessageExt:
    """Decode the entry at ``offset``; CorruptMessageError on bad magic, size, lengths or CRC."""
    mv = memoryview(buf)
    avail = len(mv) - offset
    if avail < 8:
        raise CorruptMessageError("truncated entry header")
    total, magic = INT2.unpack_from(mv, offset)
    if magic not in (MAGIC_V1, MAGIC_V2):
        raise CorruptMessageError(f"bad magic code {magic:#x}")
    if total < FIXED_V4 + 1 or total > avail:
        raise CorruptMessageError(f"entry size {total} out of range (available {avail})")
    try:
        sys_flag = INT.unpack_from(mv, offset + 36)[0]
        header = HEADERS[sys_flag & 0x30]
        (_, _, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born_ip, born_port, store_ts,
         store_ip, store_port, reconsume, prepared, body_len) = header.unpack_from(mv, offset)
        p = offset + header.size
        body_end = p + body_len
        if body_len < 0 or body_end > offset + total:
            raise CorruptMessageError(f"body length {body_len} out of range")
        if magic == MAGIC_V1:
            topic_len = mv[body_end]
            if topic_len > 127:
                raise CorruptMessageError("negative v1 topic length")
            t = body_end + 1
        else:
            topic_len = SHORT.unpack_from(mv, body_end)[0]
            t = body_end + 2
        topic = bytes(mv[t:t + topic_len]).decode(errors="replace")
        props_len = SHORT.unpack_from(mv, t + topic_len)[0]
        pp = t + topic_len + 2
        if props_len < 0 or pp + props_len != offset + total:
            raise CorruptMessageError(f"entry length {total} does not match its fields")
        props = bytes(mv[pp:pp + props_len]).decode(errors="replace")
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise CorruptMessageError(f"malformed entry: {exc}") from None
    body = mv[p:body_end]
    if check_crc and body_crc(body) != crc:
        raise CorruptMessageError(f"body CRC mismatch at physical offset {phys}")
    store_host = _host(store_ip, store_port)
    return MessageExt(
        topic=topic, body=bytes(body) if read_body else b"", flag=flag,
        properties=P.string_to_properties(props), queue_id=queue_id, store_size=total,
        queue_offset=queue_offset, sys_flag=sys_flag, born_timestamp=born_ts,
        born_host=_host(born_ip, born_port), store_timestamp=store_ts, store_host=store_host,
        msg_id=create_offset_msg_id(store_host, phys), commit_log_offset=phys, body_crc=crc,
        reconsume_times=reconsume, prepared_transaction_offset=prepared)


# ---------------------------------------------------------------------------- batch body

BATCH_HEAD = struct.Struct(">iiiii")  # TOTALSIZE, MAGICCODE(0), BODYCRC(0), FLAG, BODY length
BATCH_ENTRY_FIXED = BATCH_HEAD.size + 2
"""A batch entry's bytes besides its body and properties: the head and the properties' length."""


def encode_batch(messages: list[Message]) -> bytes:
    """The SEND_BATCH_MESSAGE body: per message TOTALSIZE, MAGIC 0, CRC 0, FLAG, BODY, PROPERTIES."""
    parts = []
    for m in messages:
        props = P.properties_to_string(m.properties).encode()
        if len(props) > MAX_PROPERTIES_LEN:
            raise ValueError(f"the properties of a batch message take {len(props)} bytes, over {MAX_PROPERTIES_LEN}")
        size = BATCH_ENTRY_FIXED + len(m.body) + len(props)
        parts.append(BATCH_HEAD.pack(size, 0, 0, m.flag, len(m.body)) + bytes(m.body)
                     + SHORT.pack(len(props)) + props)
    return b"".join(parts)


def batch_entries(body) -> list[tuple[int, int, int, int]]:
    """(flag, body start, properties start, end) of each message of a batch body, as offsets into it;
    ValueError if malformed. The properties start at their 2-byte length, because a stored entry has
    the same length field before them: the store copies both with one slice."""
    mv = memoryview(body)
    pos, end = 0, len(mv)
    unpack, short, head = BATCH_HEAD.unpack_from, SHORT.unpack_from, BATCH_HEAD.size
    out = []
    while pos < end:
        if end - pos < head + 2:
            raise ValueError("truncated batch entry")
        size, _, _, flag, body_len = unpack(mv, pos)
        b = pos + head
        p = b + body_len
        if body_len < 0 or p + 2 > end:
            raise ValueError("batch body length out of range")
        pe = p + 2 + short(mv, p)[0]
        if pe < p + 2 or pe > end or size != pe - pos:
            raise ValueError("batch entry length does not match its fields")
        out.append((flag, b, p, pe))
        pos = pe
    return out


def iter_batch(body) -> Iterator[tuple[int, memoryview, memoryview]]:
    """(flag, body, properties bytes) of each message of a batch body; ValueError if malformed."""
    mv = memoryview(body)
    for flag, b, p, pe in batch_entries(body):
        yield flag, mv[b:p], mv[p + 2:pe]


#: Per-message fields of a stored header in a batch: BODYCRC, QUEUEID, FLAG; QUEUEOFFSET, PHYSICALOFFSET.
_CRC_QID_FLAG = struct.Struct(">iii")
_OFFSETS = struct.Struct(">qq")
#: Dispatch unit of one stored message: (phys, size, tag code, KEYS, UNIQ_KEY).
BatchUnit = tuple[int, int, int, str | None, str | None]


def batch_props_growth(body, entries: list[tuple[int, int, int, int]], extra_len: int) -> int:
    """Bytes that ``extra_len`` bytes of batch properties add to the stored batch (``entries`` from
    batch_entries): Apache's CommitLog appends the batch's own properties (the request header's,
    with CLUSTER) to every message's, with a property separator between them when the message's do
    not end with one (pack_batch writes them so). ValueError when a message's properties would then
    pass MAX_PROPERTIES_LEN, whose 2-byte length field cannot hold them."""
    if extra_len <= 0:
        return 0
    growth, n = 0, len(body)
    for _, _, p, pe in entries:
        own = pe - p - 2
        if own < 0 or p < 0 or pe > n:
            raise ValueError(f"batch entry properties ({p}, {pe}) do not fit the body")
        sep = 1 if own > 0 and body[pe - 1] != 2 else 0
        if own + sep + extra_len > MAX_PROPERTIES_LEN:
            raise ValueError(f"the properties of a batch message with the batch's take {own + sep + extra_len} "
                             f"bytes, over {MAX_PROPERTIES_LEN}")
        growth += sep + extra_len
    return growth


def pack_batch(mm, pos: int, phys: int, body, entries: list[tuple[int, int, int, int]], fixed_head: bytes,
               topic_part: bytes, extra: bytes, qid: int, qoff: int, codes: dict[str | None, int],
               tag_code: Callable[[str | None], int]) -> list[BatchUnit]:
    """Pack the messages of a batch body (``entries`` from batch_entries) as stored entries at
    ``mm[pos:]``, physical offset ``phys`` and queue offsets from ``qoff`` on, in one pass.

    ``fixed_head`` is the stored header up to the body length with what every message of the batch
    shares already in it (magic, sys flag, born/store time and hosts, reconsume times); per message
    its size, CRC, queue id, flag, offsets and body length go in, then three slice copies (body,
    topic with its length, properties with theirs). ``extra`` is the batch's own properties, encoded
    once for the batch, which Apache's CommitLog appends to every message's: then the properties
    are the message's, a property separator when they are not empty and do not end with one, and
    ``extra`` (see batch_props_growth for the sizes). Returns each message's dispatch unit, its tag
    code through ``codes`` (tag value -> code, filled by ``tag_code``); TAGS, KEYS and UNIQ_KEY are
    read as from the stored properties, where a value in ``extra`` comes last and wins."""
    mv = memoryview(body)
    hsize, tlen, xlen = len(fixed_head), len(topic_part), len(extra)
    fixed = hsize + tlen
    xtags, xkeys, xuniq = P.dispatch_values(extra) if xlen else (None, None, None)
    xwins = xtags is not None or xkeys is not None or xuniq is not None
    units: list[BatchUnit] = []
    append = units.append
    for flag, b, p, pe in entries:
        blen = p - b
        if xlen:
            sep = 1 if pe - p > 2 and mv[pe - 1] != 2 else 0
            plen = pe - p - 2 + sep + xlen
            if plen > MAX_PROPERTIES_LEN:
                raise ValueError(f"the properties of a batch message with the batch's take {plen} bytes, "
                                 f"over {MAX_PROPERTIES_LEN}")
            size = fixed + blen + 2 + plen
        else:
            size = fixed + blen + pe - p
        piece = mv[b:p]
        mm[pos:pos + hsize] = fixed_head
        INT.pack_into(mm, pos, size)
        _CRC_QID_FLAG.pack_into(mm, pos + 8, body_crc(piece), qid, flag)
        _OFFSETS.pack_into(mm, pos + 20, qoff, phys)
        INT.pack_into(mm, pos + hsize - 4, blen)
        e = pos + hsize + blen
        mm[pos + hsize:e] = piece
        mm[e:e + tlen] = topic_part
        tags, keys, uniq = P.dispatch_values(mv[p + 2:pe])
        if xlen:
            mm[e + tlen:pos + size] = b"".join((SHORT.pack(plen), mv[p + 2:pe], b"\x02" if sep else b"", extra))
            if xwins:
                tags = tags if xtags is None else xtags
                keys = keys if xkeys is None else xkeys
                uniq = uniq if xuniq is None else xuniq
        else:
            mm[e + tlen:pos + size] = mv[p:pe]
        code = codes.get(tags)
        if code is None:
            code = codes[tags] = tag_code(tags)
        append((phys, size, code, keys, uniq))
        pos += size
        phys += size
        qoff += 1
    return units


def decode_batch(body) -> list[Message]:
    return [Message(topic="", body=bytes(b), flag=flag,
                    properties=P.string_to_properties(bytes(p).decode()))
            for flag, b, p in iter_batch(body)]


_compiled = speedups.compiled()
if _compiled is not None:
    decode_stored = _compiled.decode_stored
    decode_entries = _compiled.decode_entries
    pack_batch = _compiled.pack_batch
    batch_props_growth = _compiled.batch_props_growth
    encode_batch = _compiled.encode_batch
    batch_entries = _compiled.batch_entries
    write_stored = _compiled.write_stored

