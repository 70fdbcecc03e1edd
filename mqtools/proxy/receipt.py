"""Receipt handles: what a popped message carries to the client and the client hands back to ack it.

The handle is the broker's POP_CK extra info with the message's commit log offset appended (Apache's
ConsumerProcessor.createHandle), decoded as Apache's ReceiptHandle: ``startOffset retrieveTime invisibleTime
reviveQueueId topicType brokerName queueId offset [commitLogOffset]``. The full string goes back to the broker
as an ack's extraInfo (a broker reads the first fields and ignores the rest).
"""

from __future__ import annotations

from dataclasses import dataclass

from mqtools.proxy.errors import Code, ProxyError
from mqtools.remoting.pop import NORMAL_MARK, RETRY_MARK_V1, RETRY_MARK_V2, real_topic


@dataclass(frozen=True, slots=True)
class ReceiptHandle:
    start_offset: int
    retrieve_time: int
    invisible_time: int
    revive_queue_id: int
    topic_type: str
    broker_name: str
    queue_id: int
    offset: int
    commit_log_offset: int
    text: str

    @classmethod
    def decode(cls, text: str) -> ReceiptHandle:
        """INVALID_RECEIPT_HANDLE when the string is not a receipt handle."""
        parts = text.split(" ")
        try:
            if len(parts) < 8:
                raise ValueError(f"{len(parts)} fields, 8 or 9 expected")
            if parts[4] not in (NORMAL_MARK, RETRY_MARK_V1, RETRY_MARK_V2):
                raise ValueError(f"bad topic type {parts[4][:8]!r}")
            return cls(int(parts[0]), int(parts[1]), int(parts[2]), int(parts[3]), parts[4], parts[5], int(parts[6]),
                       int(parts[7]), int(parts[8]) if len(parts) > 8 else -1, text)
        except ValueError as exc:
            raise ProxyError(Code.INVALID_RECEIPT_HANDLE, f"receipt handle is not valid: {exc}") from None

    @property
    def next_visible_time(self) -> int:
        return self.retrieve_time + self.invisible_time

    def expired(self, now_ms: int) -> bool:
        return self.next_visible_time <= now_ms

    def real_topic(self, topic: str, group: str) -> str:
        """The topic the message really sits in (its retry topic when it was redelivered)."""
        return real_topic(topic, group, self.topic_type)


def create_handle(pop_ck: str, commit_log_offset: int) -> str:
    """ConsumerProcessor.createHandle: the broker's extra info plus the message's commit log offset."""
    return f"{pop_ck} {commit_log_offset}"
