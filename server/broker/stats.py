"""Broker statistics: put/get totals and TPS over 10 s, 60 s and 600 s windows.

Counters are per-second buckets in a ring, indexed by the explicit clock, so TPS figures
are real rates of what this process served (RocketMQ's BrokerStatsManager keeps the same
in-memory figures: they restart at zero with the broker). Per-topic and per-group
counters feed GET_TOPIC_STATS_INFO / GET_CONSUME_STATS, the day totals feed clusterList -m.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

WINDOWS = (10, 60, 600)
RING = 601


@dataclass(slots=True)
class RateCounter:
    """Events per second over the last N seconds, from per-second buckets."""

    buckets: list[int] = field(default_factory=lambda: [0] * RING)
    stamps: list[int] = field(default_factory=lambda: [-1] * RING)
    total: int = 0

    def add(self, now: float, n: int = 1) -> None:
        sec = int(now)
        i = sec % RING
        if self.stamps[i] != sec:
            self.stamps[i] = sec
            self.buckets[i] = 0
        self.buckets[i] += n
        self.total += n

    def rate(self, now: float, window: int) -> float:
        """Average per second over the `window` whole seconds before the current one."""
        sec = int(now)
        count = 0
        for s in range(sec - window, sec):
            i = s % RING
            if self.stamps[i] == s:
                count += self.buckets[i]
        return count / window


def _day(ts: float) -> int:
    """Local midnight starting the day of `ts`."""
    return int(time.mktime(time.localtime(ts)[:3] + (0, 0, 0, 0, 0, -1)))


def _next_day(ts: float) -> float:
    """Local midnight ending the day of `ts` (DST-safe: the day after noon)."""
    return float(_day(_day(ts) + 36 * 3600))


class BrokerStats:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.put_msgs = RateCounter()
        self.put_bytes_total = 0
        self.put_times_total = 0
        self.get_msgs = RateCounter()
        self.get_bytes = RateCounter()
        self.get_found = RateCounter()
        self.get_miss = RateCounter()
        self.topic_put: dict[str, RateCounter] = {}
        self.group_get: dict[tuple[str, str], RateCounter] = {}
        self.boot_timestamp = int(clock() * 1000)
        self._day_end = _next_day(clock())
        self.put_today_morning = 0
        self.put_yesterday_morning = 0
        self.get_today_morning = 0
        self.get_yesterday_morning = 0

    def _roll_day(self, now: float) -> None:
        if now >= self._day_end:
            self._day_end = _next_day(now)
            self.put_yesterday_morning, self.put_today_morning = self.put_today_morning, self.put_msgs.total
            self.get_yesterday_morning, self.get_today_morning = self.get_today_morning, self.get_msgs.total

    def on_put(self, topic: str, msgs: int, size: int) -> None:
        now = self.clock()
        self._roll_day(now)
        self.put_msgs.add(now, msgs)
        self.put_bytes_total += size
        self.put_times_total += 1
        counter = self.topic_put.get(topic)
        if counter is None:
            counter = self.topic_put[topic] = RateCounter()
        counter.add(now, msgs)

    def on_get(self, group: str, topic: str, msgs: int, size: int) -> None:
        now = self.clock()
        self._roll_day(now)
        if msgs:
            self.get_msgs.add(now, msgs)
            self.get_bytes.add(now, size)
            self.get_found.add(now, 1)
            self.group_get.setdefault((topic, group), RateCounter()).add(now, msgs)
        else:
            self.get_miss.add(now, 1)

    def tps_triple(self, counter: RateCounter) -> str:
        now = self.clock()
        return " ".join(f"{counter.rate(now, w):.2f}" for w in WINDOWS)

    def topic_put_tps(self, topic: str) -> float:
        counter = self.topic_put.get(topic)
        return counter.rate(self.clock(), 60) if counter else 0.0

    def consume_tps(self, topic: str, group: str) -> float:
        counter = self.group_get.get((topic, group))
        return counter.rate(self.clock(), 60) if counter else 0.0

    def runtime_info(self) -> dict[str, str]:
        """The statistics part of GET_BROKER_RUNTIME_INFO."""
        now = self.clock()
        self._roll_day(now)
        return {
            "putTps": self.tps_triple(self.put_msgs),
            "getTransferedTps": self.tps_triple(self.get_msgs),
            "getTransferredTps": self.tps_triple(self.get_msgs),
            "getFoundTps": self.tps_triple(self.get_found),
            "getMissTps": self.tps_triple(self.get_miss),
            "getTotalTps": self.tps_triple(self.get_found),
            "putMessageTimesTotal": str(self.put_times_total),
            "putMessageSizeTotal": str(self.put_bytes_total),
            "msgPutTotalTodayNow": str(self.put_msgs.total),
            "msgGetTotalTodayNow": str(self.get_msgs.total),
            "msgPutTotalTodayMorning": str(self.put_today_morning),
            "msgGetTotalTodayMorning": str(self.get_today_morning),
            "msgPutTotalYesterdayMorning": str(self.put_yesterday_morning),
            "msgGetTotalYesterdayMorning": str(self.get_yesterday_morning),
            "bootTimestamp": str(self.boot_timestamp),
            "runtime": _runtime(int(now * 1000) - self.boot_timestamp),
        }


def _runtime(ms: int) -> str:
    """RocketMQ's '[ d days, h hours, m minutes, s seconds ]' uptime text."""
    s = max(0, ms // 1000)
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    return f"[ {days} days, {hours} hours, {minutes} minutes, {s} seconds ]"
