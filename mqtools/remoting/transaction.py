"""Headers of RocketMQ's transactional message requests (END_TRANSACTION, CHECK_TRANSACTION_STATE).

A producer ends a half message with END_TRANSACTION (oneway) to the broker that stored it; a broker
asks a producer about a half message left open with CHECK_TRANSACTION_STATE (oneway, the message's
stored encoding as body), and the producer answers with END_TRANSACTION, fromTransactionCheck=true.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from mqtools.common import properties as P
from mqtools.common.message import MessageExt
from mqtools.common.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE, TRANSACTION_ROLLBACK_TYPE
from mqtools.remoting.headers import Header

#: The tag of an op message that ends half messages (TransactionalMessageUtil.REMOVETAG).
OP_REMOVE_TAG = "d"

#: commitOrRollback values, as the sys flag's transaction bits name them.
COMMIT = TRANSACTION_COMMIT_TYPE
ROLLBACK = TRANSACTION_ROLLBACK_TYPE
UNKNOWN = TRANSACTION_NOT_TYPE


@dataclass(slots=True)
class EndTransactionRequestHeader(Header):
    producer_group: str
    tran_state_table_offset: int
    """The half message's offset in RMQ_SYS_TRANS_HALF_TOPIC's queue (the send result's queueOffset)."""
    commit_log_offset: int
    commit_or_rollback: int
    msg_id: str
    """The client's unique key of the message (UNIQ_KEY)."""
    from_transaction_check: bool = False
    transaction_id: str | None = None


@dataclass(slots=True)
class CheckTransactionStateRequestHeader(Header):
    tran_state_table_offset: int
    commit_log_offset: int
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None


def transaction_origin(half: MessageExt) -> int:
    """A transaction's identity across the copies a check makes of its half message: its original's half queue
    offset (the client's UNIQ_KEY is none: a client sets it only on a message that has none, so a message sent
    again brings its old one)."""
    prepared = half.properties.get(P.TRANSACTION_PREPARED_QUEUE_OFFSET, "")
    return int(prepared) if prepared.isdigit() else half.queue_offset


def op_half_offsets(body: bytes) -> list[int]:
    """The half queue offsets an op message's body names (4.x writes one; 5.x several, comma-separated);
    what is not a number is left out."""
    offsets = []
    for part in body.decode("utf-8", errors="replace").split(","):
        with contextlib.suppress(ValueError):
            offsets.append(int(part.strip()))
    return offsets
