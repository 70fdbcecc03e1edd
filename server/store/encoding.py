"""Put-path encoding: the size rules a message must pass and the packing of a batch straight into
the commitlog mapping (RocketMQ's MessageExtEncoder and DefaultAppendMessageCallback roles).

A single message is written by ``codec.write_stored``; a batch is packed here message by message
with the header struct bound once, because a batch of 32 would otherwise pay 32 calls' set-up.
"""

from __future__ import annotations

from collections.abc import Callable

from mqtools.server.store.dispatch import BatchUnit, UnitValues
from mqtools.server.store.results import PutMessageStatus

from mqtools.common.codec import HEADERS, MAX_PROPERTIES_LEN, body_crc, magic_for, topic_props_tail
from mqtools.common.ids import host_address_bytes
from mqtools.common.message import Host, MessageExtBatch

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


def encode_batch(mm: memoryview, pos: int, phys: int, batch: MessageExtBatch, topic_b: bytes, sys_flag: int,
                 store_host: Host, items: list[tuple[int, memoryview, bytes]], sizes: list[int],
                 store_ts: int, qoff: int,
                 unit_values: Callable[[bool, bytes, int], UnitValues], schedule: bool) -> list[BatchUnit]:
    """Pack every message of a batch at ``mm[pos:]`` (physical offset ``phys``, first queue offset
    ``qoff``); returns each message's dispatch unit."""
    header = HEADERS[sys_flag & 0x30]
    pack, hsize = header.pack_into, header.size
    magic = magic_for(len(topic_b))
    born_ip, born_port = host_address_bytes(batch.born_host[0]), batch.born_host[1]
    store_ip, store_port = host_address_bytes(store_host[0]), store_host[1]
    born_ts, reconsume, qid = batch.born_timestamp, batch.reconsume_times, batch.queue_id
    tail_head = topic_props_tail(topic_b, b"")[:-2]
    units: list[BatchUnit] = []
    for (flag, body, props_b), size in zip(items, sizes, strict=True):
        blen = len(body)
        pack(mm, pos, size, magic, body_crc(body), qid, flag, qoff, phys, sys_flag, born_ts, born_ip,
             born_port, store_ts, store_ip, store_port, reconsume, 0, blen)
        b = pos + hsize
        mm[b:b + blen] = body
        tail = tail_head + len(props_b).to_bytes(2, "big") + props_b
        mm[b + blen:b + blen + len(tail)] = tail
        tags, keys, uniq = unit_values(schedule, props_b, store_ts)
        units.append((phys, size, tags, keys, uniq))
        pos += size
        phys += size
        qoff += 1
    return units
