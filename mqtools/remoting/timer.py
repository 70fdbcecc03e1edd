"""Timer messages (RIP-43) on the wire: the bodies of GET_TIMER_CHECK_POINT (60) and GET_TIMER_METRICS (61).

The checkpoint is Apache's TimerCheckpoint.encode: seven big-endian longs (lastReadTimeMs,
lastTimerLogFlushPos, lastTimerQueueOffset, masterTimerQueueOffset, then the DataVersion's stateVersion,
timestamp and counter), or the first four from a broker older than the DataVersion. The metrics are
TimerMetricsSerializeWrapper's JSON: the pending timer messages per real topic. A broker whose timer store
is off answers either request with SYSTEM_ERROR.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from mqtools.remoting.bodies import Body
from mqtools.remoting.errors import BodyError

_FULL = struct.Struct(">7q")
_LEGACY = struct.Struct(">4q")


@dataclass(frozen=True, slots=True)
class TimerCheckpointBody:
    last_read_time_ms: int
    last_timer_log_flush_pos: int
    last_timer_queue_offset: int
    master_timer_queue_offset: int
    state_version: int | None = None
    timestamp: int | None = None
    counter: int | None = None

    @classmethod
    def decode(cls, data: bytes | memoryview) -> TimerCheckpointBody:
        """56 bytes, or 32 without the DataVersion; anything shorter is a BodyError."""
        if len(data) >= _FULL.size:
            return cls(*_FULL.unpack_from(data))
        if len(data) >= _LEGACY.size:
            return cls(*_LEGACY.unpack_from(data))
        raise BodyError(f"a timer checkpoint is 56 or 32 bytes, got {len(data)}")

    def encode(self) -> bytes:
        head = (self.last_read_time_ms, self.last_timer_log_flush_pos, self.last_timer_queue_offset,
                self.master_timer_queue_offset)
        if self.state_version is None:
            return _LEGACY.pack(*head)
        return _FULL.pack(*head, self.state_version, self.timestamp or 0, self.counter or 0)


@dataclass(slots=True)
class TimerMetric(Body):
    count: int = 0
    time_stamp: int = 0


@dataclass(slots=True)
class TimerMetricsBody(Body):
    data_version: dict[str, int] = field(default_factory=dict)
    timing_count: dict[str, TimerMetric] = field(default_factory=dict)
