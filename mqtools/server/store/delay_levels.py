"""The delay-level table (messageDelayLevel): the one place levels become delays.

Level ``n`` (1-based) of ``"1s 5s 10s ..."`` delays a message by the n-th duration, as RocketMQ's
ScheduleMessageService.parseDelayLevel / computeDeliverTimestamp define it. The store uses the
table for the tag code of SCHEDULE_TOPIC_XXXX units (when the message becomes due), the schedule
service for delivery, and the broker for the schedule topic's queue count; all three read it here.
"""

from __future__ import annotations

from mqtools.common import properties as P

#: RocketMQ's default messageDelayLevel (18 levels).
DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
#: An unknown level (table shrunk since the message was stored) is due after 1 s, as in RocketMQ.
UNKNOWN_LEVEL_DELAY_MS = 1000
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(spec: str) -> list[int]:
    """"1s 5s 1m" -> [1000, 5000, 60000]; index i is level i+1. ValueError on a bad token."""
    levels = []
    for token in spec.split():
        unit = token[-1:].lower()
        if unit not in _UNIT_MS or not token[:-1].isdigit():
            raise ValueError(f"bad messageDelayLevel token {token!r} (want e.g. 5s, 1m, 2h, 1d)")
        levels.append(int(token[:-1]) * _UNIT_MS[unit])
    if not levels:
        raise ValueError("messageDelayLevel is empty")
    return levels


def delay_level_of(properties: dict[str, str]) -> int:
    """The DELAY property as an int (0 when absent or not a number)."""
    try:
        return int(properties.get(P.DELAY, "0"))
    except ValueError:
        return 0


class DelayLevelTable:
    def __init__(self, spec: str = DEFAULT_DELAY_LEVELS) -> None:
        self.spec = spec
        self.delays_ms = parse_delay_levels(spec)

    @property
    def max_level(self) -> int:
        return len(self.delays_ms)

    def delay_ms(self, level: int) -> int:
        if 1 <= level <= self.max_level:
            return self.delays_ms[level - 1]
        return UNKNOWN_LEVEL_DELAY_MS

    def deliver_timestamp(self, level: int, store_timestamp_ms: int) -> int:
        """The tag code of a schedule-queue unit: when the message becomes due."""
        return store_timestamp_ms + self.delay_ms(min(level, self.max_level))


#: Levels of the default table: the schedule topic's queue count when nothing else is configured.
DEFAULT_MAX_LEVEL = DelayLevelTable().max_level
