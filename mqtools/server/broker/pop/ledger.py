"""The revive decisions for one revive queue, without I/O or a clock of its own (PopReviveService's core).

Records are fed in revive-queue order (`add`): a checkpoint becomes pending, acks set its bits, and a
checkpoint whose every message is acknowledged is dropped at once. `due(now_ms)` lists the pending
checkpoints whose invisible time is over; their unacknowledged messages go back to the POP retry topic
(`destination` says where: retry, or the group's DLQ past its retry limit) and `done` drops them.

`commit_offset` is the revive progress stored like a consumer offset (group CID_RMQ_SYS_REVIVE_GROUP),
with Apache's meaning: the last revive-queue offset fully dealt with, reading resumes one past it. It
never passes a pending checkpoint (one that holds it far back is carried: written again at the end, its record
read there replacing the first, its bits merged), so after a restart (or a SIGKILL) every checkpoint not yet revived is
read again, and with it every ack that came after it: nothing acknowledged comes back, nothing
unacknowledged is lost. A checkpoint revived but not yet committed when the broker died is revived a
second time (a duplicate, never a loss).
"""

from __future__ import annotations

from dataclasses import dataclass

from mqtools.common.topics import dlq_topic, is_retry_topic
from mqtools.remoting.pop import pop_retry_topic_v1
from mqtools.server.broker.pop.records import CK_MAX_NUM, AckMsg, PopCheckPoint

#: Acks read without their checkpoint pending are kept, the newest this many, in case it comes after them.
MAX_ORPHAN_ACKS = 100_000
#: A pending checkpoint this many records behind the end of its revive queue, and not due for CARRY_HORIZON_MS,
#: is carried: written again at the end (to_carry).
CARRY_BEHIND = 10_000
CARRY_HORIZON_MS = 60_000


def _all_bits(num: int) -> int:
    return (1 << num) - 1 if num > 0 else 0


class ReviveLedger:
    """Pending checkpoints of one revive queue, keyed by Apache's merge key, in revive-queue order."""

    def __init__(self, own_broker: str, read_offset: int = -1) -> None:
        self.own_broker = own_broker
        #: The last revive-queue offset read (-1: none yet).
        self.read_offset = read_offset
        self.pending: dict[str, PopCheckPoint] = {}
        self._orphans: dict[str, set[int]] = {}

    def __len__(self) -> int:
        return len(self.pending)

    def add(self, record: PopCheckPoint | AckMsg, revive_offset: int) -> None:
        """One record read at `revive_offset`; records must come in queue order."""
        self.read_offset = max(self.read_offset, revive_offset)
        if isinstance(record, PopCheckPoint):
            record.revive_offset = revive_offset
            key = record.key(self.own_broker)
            for offset in self._orphans.pop(key, ()):
                self._ack_bit(record, offset)
            carried = self.pending.pop(key, None)  # the same checkpoint written again further on (carry)
            if carried is not None:
                record.bit_map |= carried.bit_map
            if record.num > 0 and record.bit_map & _all_bits(record.num) != _all_bits(record.num):
                self.pending[key] = record
            return
        key = record.key(self.own_broker)
        ck = self.pending.get(key)
        if ck is None:  # before its checkpoint (another broker's store), or after it was revived (late)
            self._orphans.setdefault(key, set()).update(record.offsets)
            if len(self._orphans) > MAX_ORPHAN_ACKS:
                del self._orphans[next(iter(self._orphans))]  # the oldest: late acks must not pile up
            return
        for offset in record.offsets:
            self._ack_bit(ck, offset)
        if ck.bit_map & _all_bits(ck.num) == _all_bits(ck.num):
            del self.pending[key]

    @staticmethod
    def _ack_bit(ck: PopCheckPoint, offset: int) -> None:
        index = ck.index_of(offset)
        if 0 <= index < CK_MAX_NUM:
            ck.bit_map |= 1 << index

    def skip_to(self, offset: int) -> None:
        """The queue's records before `offset` are gone (cleaned): reading resumes there."""
        self.read_offset = max(self.read_offset, offset - 1)

    def due(self, now_ms: int, slack_ms: int = 0) -> list[PopCheckPoint]:
        """Pending checkpoints whose revive time (+ slack) has come, oldest record first."""
        return [ck for ck in self.pending.values() if ck.revive_time + slack_ms <= now_ms]

    def next_revive_time(self) -> int | None:
        return min((ck.revive_time for ck in self.pending.values()), default=None)

    @staticmethod
    def unacked(ck: PopCheckPoint) -> list[int]:
        """The queue offsets of the checkpoint's messages nobody acknowledged."""
        return [ck.offset_at(i) for i in range(ck.num) if not ck.bit_map >> i & 1]

    def done(self, ck: PopCheckPoint) -> None:
        """The checkpoint was revived (or cannot be): it no longer holds the progress back."""
        self.pending.pop(ck.key(self.own_broker), None)

    def to_carry(self, now_ms: int) -> list[PopCheckPoint]:
        """Pending checkpoints that hold the progress far back and are not due soon: written again at the end of
        the queue (their acks so far in their bits), they let it move on. Else one POP with a long invisible
        time kept every record after it to be read again at each start (Apache's far checkpoints go through
        its timer and never sit at the read position)."""
        return [ck for ck in self.pending.values()
                if self.read_offset - ck.revive_offset > CARRY_BEHIND and ck.revive_time > now_ms + CARRY_HORIZON_MS]

    def commit_offset(self) -> int:
        """The revive progress to store: just before the oldest pending checkpoint, else the last read."""
        if self.pending:
            return min(ck.revive_offset for ck in self.pending.values()) - 1
        return self.read_offset


@dataclass(frozen=True, slots=True)
class Destination:
    topic: str
    dead: bool


def destination(ck: PopCheckPoint, reconsume_times: int, max_reconsume_times: int) -> Destination:
    """Where an unacknowledged message goes: the POP retry topic of the group (v1 name, or the retry topic
    it was popped from), or the group's DLQ once it was delivered max_reconsume_times times again.
    Apache's broker leaves the DLQ to the consumer (its client or proxy moves a message whose
    reconsumeTimes reached the limit); the count of deliveries before the DLQ is the same."""
    if reconsume_times >= max_reconsume_times:
        return Destination(dlq_topic(ck.cid), True)
    if is_retry_topic(ck.topic):
        return Destination(ck.topic, False)
    return Destination(pop_retry_topic_v1(ck.topic, ck.cid), False)
