"""What a put or a get returns: RocketMQ's PutMessageStatus, AppendMessageResult, PutMessageResult,
GetMessageStatus and GetMessageResult.

``PutMessageResult.remark`` explains refusals (e.g. the disk-full text); ``AppendMessageResult``
adds ``phys_offsets`` / ``store_host`` so a batch answer can list every offset message id.
``GetMessageResult.buffers`` are memoryviews into the commitlog mapping: they stay valid after
the file is deleted (the mapping lives until they are released).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from mqtools.common.ids import create_offset_msg_ids

DISK_FULL_REMARK = ("service not available now, maybe disk full [CL: {cl:.2f}], messages are put to the slave, "
                    "or the message store has been shut down")


class PutMessageStatus(enum.Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPPED_FILE_FAILED = "CREATE_MAPPED_FILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGE_CACHE_BUSY = "OS_PAGE_CACHE_BUSY"
    IN_SYNC_REPLICAS_NOT_ENOUGH = "IN_SYNC_REPLICAS_NOT_ENOUGH"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


@dataclass(slots=True)
class AppendMessageResult:
    wrote_offset: int
    wrote_bytes: int
    msg_id: str
    store_timestamp: int
    logics_offset: int
    msg_num: int = 1
    #: Physical offset of every message of a batch (empty for a single put).
    phys_offsets: list[int] = field(default_factory=list)
    store_host: tuple[str, int] | None = None

    @property
    def end_offset(self) -> int:
        return self.wrote_offset + self.wrote_bytes

    @property
    def msg_ids(self) -> list[str]:
        """Offset message id of every message (built on demand: a batch response needs them joined)."""
        if not self.phys_offsets or self.store_host is None:
            return [self.msg_id]
        return create_offset_msg_ids(self.store_host, self.phys_offsets)


#: Put statuses with which the message is stored (a send is answered with its ids; a commit counts as done).
STORED = frozenset({"PUT_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"})


@dataclass(slots=True)
class PutMessageResult:
    status: PutMessageStatus
    append: AppendMessageResult | None = None
    remark: str = ""

    @property
    def ok(self) -> bool:
        return self.status is PutMessageStatus.PUT_OK


class GetMessageStatus(enum.Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


@dataclass(slots=True)
class GetMessageResult:
    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    #: One slice per message; empty when the caller asked for the spans alone (``per_message=False``).
    buffers: list[memoryview] = field(default_factory=list)
    message_count: int = 0
    buffer_total_size: int = 0
    suggest_pulling_from_slave: bool = False
    #: The same bytes as ``buffers``, messages that lie next to each other in one commitlog file as one slice:
    #: what a pull writes to its socket (a batch of 32 stored together is one slice, not 32).
    spans: list[memoryview] = field(default_factory=list)
