"""Put-path encoding: the size rules a message must pass and the packing of a batch straight into
the commitlog mapping (RocketMQ's MessageExtEncoder and DefaultAppendMessageCallback roles).

A single message is written by ``codec.write_stored``; a batch is packed here message by message
with the header struct bound once, because a batch of 32 would otherwise pay 32 calls' set-up.
"""

from __future__ import annotations

from collections.abc import Callable

from mqtools.common.codec import (
    BATCH_HEAD,
    HEADERS,
    MAX_PROPERTIES_LEN,
    SHORT,
    body_crc,
    magic_for,
    stored_size,
    topic_props_tail,
)
from mqtools.common.hashing import tags_code
from mqtools.common.ids import host_address_bytes
from mqtools.common.message import Host, MessageExtBatch
from mqtools.common.properties import dispatch_values
from mqtools.server.store.dispatch import BatchUnit, UnitValues
from mqtools.server.store.results import PutMessageStatus

#: (status, remark) of a refused put.
Refusal = tuple[PutMessageStatus, str]


def _check_topic(topic_b: bytes) -> Refusal | None:
    if len(topic_b) > 255 or len(topic_b) == 0:
        return PutMessageStatus.MESSAGE_ILLEGAL, f"topic length {len(topic_b)} is illegal"
    return None


def check_message(topic_b: bytes, props_b: bytes, body_len: int, max_message_size: int) -> Refusal | None:
    """Why a single message cannot be stored, or None."""
    bad = _check_topic(topic_b)
    if bad is not None:
        return bad
    if len(props_b) > MAX_PROPERTIES_LEN:
        return (PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
                f"properties length {len(props_b)} exceeds {MAX_PROPERTIES_LEN}")
    if body_len > max_message_size:
        return PutMessageStatus.MESSAGE_ILLEGAL, f"message body size {body_len} exceeds {max_message_size}"
    return None


def check_batch(topic_b: bytes, body_len: int, max_message_size: int) -> Refusal | None:
    """Why a batch cannot be stored (before its body is parsed), or None."""
    if body_len > max_message_size:
        return PutMessageStatus.MESSAGE_ILLEGAL, f"batch body size {body_len} exceeds {max_message_size}"
    return _check_topic(topic_b)


def batch_stored_size(body_len: int, count: int, sys_flag: int, topic_len: int) -> int:
    """Bytes a well-formed batch body of ``count`` messages takes in the commitlog: each stored entry
    is its batch entry (head, body, properties length and properties) with the stored fixed part
    and topic instead of the batch head."""
    return body_len + count * (stored_size(sys_flag, 0, topic_len, 0) - BATCH_HEAD.size - SHORT.size)


def encode_batch(mm: memoryview, pos: int, phys: int, batch: MessageExtBatch, topic_b: bytes, sys_flag: int,
                 store_host: Host, entries: list[tuple[int, memoryview, memoryview]], store_ts: int, qoff: int,
                 schedule_values: Callable[[bool, bytes, int], UnitValues] | None) -> list[BatchUnit]:
    """Pack every message of a batch at ``mm[pos:]`` (physical offset ``phys``, first queue offset
    ``qoff``) in one pass: per message one header pack and three slice copies (body, topic, properties
    with their length, straight from the request body), and its dispatch values read from the same
    properties bytes. ``schedule_values`` is given for SCHEDULE_TOPIC_XXXX, whose tag code is a due
    time. Returns each message's dispatch unit."""
    header = HEADERS[sys_flag & 0x30]
    pack, hsize = header.pack_into, header.size
    fixed = stored_size(sys_flag, 0, len(topic_b), 0) - SHORT.size
    magic = magic_for(len(topic_b))
    born_ip, born_port = host_address_bytes(batch.born_host[0]), batch.born_host[1]
    store_ip, store_port = host_address_bytes(store_host[0]), store_host[1]
    born_ts, reconsume, qid = batch.born_timestamp, batch.reconsume_times, batch.queue_id
    topic_part = topic_props_tail(topic_b, b"")[:-SHORT.size]
    tlen = len(topic_part)
    plen_size = SHORT.size
    units: list[BatchUnit] = []
    append = units.append
    codes: dict[str | None, int] = {}
    for flag, body, lprops in entries:
        blen = len(body)
        size = fixed + blen + len(lprops)
        pack(mm, pos, size, magic, body_crc(body), qid, flag, qoff, phys, sys_flag,
             born_ts, born_ip, born_port, store_ts, store_ip, store_port, reconsume, 0, blen)
        b = pos + hsize
        e = b + blen
        mm[b:e] = body
        mm[e:e + tlen] = topic_part
        mm[e + tlen:pos + size] = lprops
        if schedule_values is None:
            tag_value, keys, uniq = dispatch_values(lprops[plen_size:])
            code = codes.get(tag_value)
            if code is None:
                code = codes[tag_value] = tags_code(tag_value)
            append((phys, size, code, keys, uniq))
        else:
            append((phys, size, *schedule_values(True, bytes(lprops[plen_size:]), store_ts)))
        pos += size
        phys += size
        qoff += 1
    return units
