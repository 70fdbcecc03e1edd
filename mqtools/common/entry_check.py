"""Which bytes of a commitlog are whole entries, and what dispatch needs of each (RocketMQ's
CommitLog.checkMessageAndReturnSize and its DispatchRequest): recovery's walks and a slave's dispatch.

An entry is checked for its magic code, its lengths against each other and against the bytes there, and on
request its body CRC; nothing else is decoded but the topic and the properties dispatch reads.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from mqtools.common import properties as P
from mqtools.common import speedups
from mqtools.common.codec import (
    BLANK_MAGIC,
    FIXED_V4,
    HEADERS,
    INT,
    INT2,
    MAGIC_V1,
    MAGIC_V2,
    SHORT,
    body_crc,
)
from mqtools.common.hashing import tags_code


class EntryInfo(NamedTuple):
    """What dispatch needs from one entry (consume queue unit + index keys)."""

    size: int
    topic: str
    queue_id: int
    queue_offset: int
    phys_offset: int
    sys_flag: int
    store_timestamp: int
    tags_code: int
    keys: str | None
    uniq_key: str | None
    properties: dict[str, str]


def _layout(mv: memoryview, offset: int) -> tuple[int, struct.Struct, int, int, int, int, int] | int:
    """Where the parts of the entry at ``offset`` lie, once its magic and lengths agree with each other and with
    the bytes there: (total, header, body_end, topic start, topic length, properties start, properties length);
    0 for a blank record, -1 for anything else. The one structural walk entry_size and check_entry share."""
    avail = len(mv) - offset
    if avail < 8:
        return -1
    total, magic = INT2.unpack_from(mv, offset)
    if magic == BLANK_MAGIC:
        return 0
    if magic not in (MAGIC_V1, MAGIC_V2) or total < FIXED_V4 + 1 or total > avail:
        return -1
    try:
        header = HEADERS[INT.unpack_from(mv, offset + 36)[0] & 0x30]
        body_len = INT.unpack_from(mv, offset + header.size - 4)[0]
        body_end = offset + header.size + body_len
        if body_len < 0 or body_end + 3 > offset + total:
            return -1
        if magic == MAGIC_V1:
            topic_len, t = mv[body_end], body_end + 1
            if topic_len > 127:
                return -1
        else:
            topic_len, t = SHORT.unpack_from(mv, body_end)[0], body_end + 2
            if topic_len < 0:
                return -1
        props_len = SHORT.unpack_from(mv, t + topic_len)[0]
        pp = t + topic_len + 2
        if props_len < 0 or pp + props_len != offset + total:
            return -1
    except (struct.error, IndexError):
        return -1
    return total, header, body_end, t, topic_len, pp, props_len


def entry_size(buf, offset: int, check_crc: bool) -> int:
    """Size of the valid entry at ``offset``; 0 for a blank record, -1 if invalid. What normal
    recovery needs: the structural checks and CRC of check_entry without decoding strings."""
    mv = memoryview(buf)
    layout = _layout(mv, offset)
    if isinstance(layout, int):
        return layout
    total, header, body_end = layout[:3]
    if check_crc and body_crc(mv[offset + header.size:body_end]) != INT.unpack_from(mv, offset + 8)[0]:
        return -1
    return total


def walk_sizes(buf, offset: int, check_crc: bool) -> tuple[int, int]:
    """entry_size from ``offset``, entry after entry, while they are valid: where the walk stopped and
    entry_size's answer there (0 a blank record; -1 an invalid entry, or the buffer's end). Normal
    recovery walks the last files so; the compiled twin does it without a call per entry."""
    while True:
        size = entry_size(buf, offset, check_crc)
        if size <= 0:
            return offset, size
        offset += size


def check_entry(buf, offset: int, check_crc: bool) -> EntryInfo | int:
    """Validate the entry at ``offset`` for recovery and dispatch.

    Returns its EntryInfo, ``0`` for an end-of-file blank record, ``-1`` for anything invalid
    (zeros, bad magic, torn or inconsistent entry, CRC mismatch when asked). Lighter than
    decode_stored: hosts, body and message id are not materialised.
    """
    mv = memoryview(buf)
    layout = _layout(mv, offset)
    if isinstance(layout, int):
        return layout
    total, header, body_end, t, topic_len, pp, props_len = layout
    fields = header.unpack_from(mv, offset)
    if check_crc and body_crc(mv[offset + header.size:body_end]) != fields[2]:
        return -1
    topic = bytes(mv[t:t + topic_len]).decode(errors="replace")
    props = P.string_to_properties(bytes(mv[pp:pp + props_len]).decode(errors="replace"))
    return EntryInfo(total, topic, fields[3], fields[5], fields[6], fields[7], fields[11],
                     tags_code(props.get(P.TAGS)), props.get(P.KEYS), props.get(P.UNIQ_KEY), props)


def check_entries(buf, offset: int, limit: int, check_crc: bool, max_count: int) -> tuple[list[EntryInfo], int, int]:
    """check_entry from ``offset``, entry after entry, while they are valid, end by ``limit`` (a position in
    ``buf``) and number fewer than ``max_count``: the entries, where the walk stopped and why (check_entry's 0
    or -1 there; 1 for an entry ending past ``limit``, or the count reached). A slave's dispatch walks its
    new bytes so; the compiled twin does it without a call per entry."""
    out: list[EntryInfo] = []
    while len(out) < max_count:
        info = check_entry(buf, offset, check_crc)
        if not isinstance(info, EntryInfo):
            return out, offset, info
        if offset + info.size > limit:
            break
        out.append(info)
        offset += info.size
    return out, offset, 1


_compiled = speedups.compiled()
if _compiled is not None:
    walk_sizes = _compiled.walk_sizes
    check_entry = _compiled.check_entry
    check_entries = _compiled.check_entries
