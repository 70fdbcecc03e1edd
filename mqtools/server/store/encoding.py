"""Put-path encoding: the size rules a message must pass and the packing of a batch straight into
the commitlog mapping (RocketMQ's MessageExtEncoder and DefaultAppendMessageCallback roles).

A single message is written by ``codec.write_stored``, a batch by ``codec.pack_batch`` with a header
built here once for the whole batch.
"""

from __future__ import annotations

from collections.abc import Callable

from mqtools.common.codec import (
    BATCH_HEAD,
    HEADERS,
    MAX_PROPERTIES_LEN,
    SHORT,
    magic_for,
    pack_batch,
    stored_size,
    topic_props_tail,
)
from mqtools.common.hashing import tags_code
from mqtools.common.ids import host_address_bytes
from mqtools.common.message import Host, MessageExtBatch
from mqtools.common.sysflag import HOST_V6_FLAGS
from mqtools.server.store.results import PutMessageStatus

#: What dispatch needs of one message of a batch: (phys, size, tag code, KEYS, UNIQ_KEY).
BatchUnit = tuple[int, int, int, str | None, str | None]
#: (tag code, KEYS, UNIQ_KEY) of one message.
UnitValues = tuple[int, str | None, str | None]

#: (status, remark) of a refused put.
Refusal = tuple[PutMessageStatus, str]


#: The longest topic the store takes, in UTF-8 bytes (RocketMQ's CommitLog checks the same).
MAX_TOPIC_BYTES = 255


def _check_topic(topic_b: bytes) -> Refusal | None:
    if len(topic_b) > MAX_TOPIC_BYTES or len(topic_b) == 0:
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


def batch_stored_size(body_len: int, count: int, sys_flag: int, topic_len: int, props_growth: int = 0) -> int:
    """Bytes a well-formed batch body of ``count`` messages takes in the commitlog: each stored entry
    is its batch entry (head, body, properties length and properties) with the stored fixed part
    and topic instead of the batch head, and the batch's own properties appended to the message's
    (``props_growth``: codec.batch_props_growth)."""
    return body_len + count * (stored_size(sys_flag, 0, topic_len, 0) - BATCH_HEAD.size - SHORT.size) + props_growth


def encode_batch(mm: memoryview, pos: int, phys: int, batch: MessageExtBatch, topic_b: bytes, sys_flag: int,
                 store_host: Host, entries: list[tuple[int, int, int, int]], store_ts: int, qoff: int,
                 batch_props: bytes,
                 schedule_values: Callable[[bool, bytes, int], UnitValues] | None) -> list[BatchUnit]:
    """Pack every message of a batch at ``mm[pos:]`` (physical offset ``phys``, first queue offset
    ``qoff``) in one pass (codec.pack_batch: per message one header, slice copies straight from the
    request body, then ``batch_props``, the batch's own properties encoded once, appended as Apache's
    CommitLog does; its dispatch values read from the same properties bytes). ``schedule_values`` is
    given for SCHEDULE_TOPIC_XXXX, whose tag code is a due time. Returns each message's dispatch unit."""
    header = HEADERS[sys_flag & HOST_V6_FLAGS]
    fixed_head = header.pack(0, magic_for(len(topic_b)), 0, 0, 0, 0, 0, sys_flag, batch.born_timestamp,
                             host_address_bytes(batch.born_host[0]), batch.born_host[1], store_ts,
                             host_address_bytes(store_host[0]), store_host[1], batch.reconsume_times, 0, 0)
    topic_part = topic_props_tail(topic_b, b"")[:-SHORT.size]
    units = pack_batch(mm, pos, phys, batch.body, entries, fixed_head, topic_part, batch_props, batch.queue_id,
                       qoff, {}, tags_code)
    if schedule_values is None:
        return units
    # The stored properties of each entry, read back as recovery would: they end the entry.
    props_at = pos - phys + len(fixed_head) + len(topic_part) + SHORT.size
    return [(u[0], u[1], *schedule_values(True, bytes(mm[props_at + u[0] + p - b:pos - phys + u[0] + u[1]]),
                                          store_ts))
            for u, (_, b, p, _) in zip(units, entries)]
