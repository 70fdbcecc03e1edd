"""Bits of a message's SYSFLAG field (stored at byte 36 of every commitlog entry)."""

from __future__ import annotations

COMPRESSED_FLAG = 0x1
MULTI_TAGS_FLAG = 0x2
TRANSACTION_NOT_TYPE = 0x0
TRANSACTION_PREPARED_TYPE = 0x4
TRANSACTION_COMMIT_TYPE = 0x8
TRANSACTION_ROLLBACK_TYPE = 0xC
TRANSACTION_MASK = 0xC
BORNHOST_V6_FLAG = 0x10
STOREHOST_V6_FLAG = 0x20
#: Both host-address width bits: the store sets them from the actual addresses, whatever a client sent.
HOST_V6_FLAGS = BORNHOST_V6_FLAG | STOREHOST_V6_FLAG
NEED_UNWRAP_FLAG = 0x40
INNER_BATCH_FLAG = 0x80
COMPRESSION_TYPE_MASK = 0x700


def is_consumable(sys_flag: int) -> bool:
    """Prepared and rollback transaction messages never reach a consume queue."""
    return sys_flag & TRANSACTION_MASK in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE)
