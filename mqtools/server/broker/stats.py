"""Broker statistics: put/get totals and TPS over 10 s, 60 s and 600 s windows.

Counters are per-second buckets in a ring, indexed by the explicit clock, so TPS figures
are real rates of what this process served (RocketMQ's BrokerStatsManager keeps the same
in-memory figures: they restart at zero with the broker). Per-topic and per-group
counters feed GET_TOPIC_STATS_INFO / GET_CONSUME_STATS, the day totals feed clusterList -m.
"""

from __future__ import annotations

import time
from collections.abc import Callable

WINDOWS = (10, 60, 600)
SECONDS_KEPT = 600
MINUTES_KEPT = 1440


class RateCounter:
    """Sums and event counts per second (last 10 min) and per minute (last day), sparse:
    an idle counter costs nothing, a busy one at most ~2,000 small buckets. `add` only
    touches the current second; a finished second is folded into its minute when the
    next one starts (the hot path is one comparison and two increments)."""

    __slots__ = ("_cur", "_sec", "mins", "secs", "total")

    def __init__(self) -> None:
        self.secs: dict[int, list[int]] = {}
        self.mins: dict[int, list[int]] = {}
        self.total = 0
        self._sec = -1
        self._cur = [0, 0]

    def add(self, now: float, n: int = 1) -> None:
        sec = int(now)
        if sec != self._sec:
            self._roll(sec)
        cur = self._cur
        cur[0] += n
        cur[1] += 1
        self.total += n

    def _roll(self, sec: int) -> None:
        """Start second `sec`: file the current second and its minute share."""
        done, old = self._cur, self._sec
        if old >= 0 and done[1]:
            self.secs[old] = done
            minute = self.mins.get(old // 60)
            if minute is None:
                self.mins[old // 60] = [done[0], done[1]]
                if len(self.mins) > MINUTES_KEPT + 60:
                    self.mins = {k: v for k, v in self.mins.items() if k > old // 60 - MINUTES_KEPT - 1}
            else:
                minute[0] += done[0]
                minute[1] += done[1]
            if len(self.secs) > SECONDS_KEPT + 60:
                self.secs = {k: v for k, v in self.secs.items() if k > old - SECONDS_KEPT - 1}
        self._sec = sec
        self._cur = [0, 0]

    def _second(self, s: int) -> list[int] | None:
        return self._cur if s == self._sec else self.secs.get(s)

    def _minute(self, m: int) -> tuple[int, int]:
        bucket = self.mins.get(m)
        total, times = (bucket[0], bucket[1]) if bucket else (0, 0)
        if self._sec >= 0 and self._sec // 60 == m:
            total, times = total + self._cur[0], times + self._cur[1]
        return total, times

    def rate(self, now: float, window: int) -> float:
        """Average per second over the `window` whole seconds before the current one."""
        sec = int(now)
        count = 0
        for s in range(sec - window, sec):
            bucket = self._second(s)
            if bucket is not None:
                count += bucket[0]
        return count / window

    def window(self, now: float, seconds: int) -> tuple[int, int]:
        """(sum, number of adds) over the last `seconds`, the current second/minute included."""
        sec = int(now)
        total = times = 0
        if seconds <= SECONDS_KEPT:
            for s in range(sec - seconds + 1, sec + 1):
                bucket = self._second(s)
                if bucket is not None:
                    total += bucket[0]
                    times += bucket[1]
        else:
            minute = sec // 60
            for m in range(minute - seconds // 60 + 1, minute + 1):
                t, n = self._minute(m)
                total += t
                times += n
        return total, times

    def stats_item(self, now: float, seconds: int) -> dict[str, float | int]:
        """RocketMQ's BrokerStatsItem: sum, tps and average per add over the window."""
        total, times = self.window(now, seconds)
        return {"sum": total, "tps": total / seconds, "avgpt": total / times if times else 0.0}


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
        self.topic_put_bytes: dict[str, int] = {}
        self.group_get: dict[tuple[str, str], RateCounter] = {}
        self.group_get_bytes: dict[tuple[str, str], int] = {}
        """Bytes per topic, and per (topic, group): RocketMQ 5's throughput counters (mqtools/server/broker/metrics.py)."""
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
        if now >= self._day_end:
            self._roll_day(now)
        self.put_msgs.add(now, msgs)
        self.put_bytes_total += size
        self.put_times_total += 1
        counter = self.topic_put.get(topic)
        if counter is None:
            counter = self.topic_put[topic] = RateCounter()
        counter.add(now, msgs)
        self.topic_put_bytes[topic] = self.topic_put_bytes.get(topic, 0) + size

    def on_get(self, group: str, topic: str, msgs: int, size: int) -> None:
        now = self.clock()
        if now >= self._day_end:
            self._roll_day(now)
        if msgs:
            self.get_msgs.add(now, msgs)
            self.get_bytes.add(now, size)
            self.get_found.add(now, 1)
            key = (topic, group)
            counter = self.group_get.get(key)
            if counter is None:  # not setdefault: a drain's every pull would build a counter to throw away
                counter = self.group_get[key] = RateCounter()
            counter.add(now, msgs)
            self.group_get_bytes[key] = self.group_get_bytes.get(key, 0) + size
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

    def counter(self, stats_name: str, stats_key: str, cluster_name: str) -> RateCounter | None:
        """The counter VIEW_BROKER_STATS_DATA names (TOPIC_PUT_NUMS topic, GROUP_GET_NUMS
        topic@group, BROKER_PUT_NUMS / BROKER_GET_NUMS cluster name)."""
        if stats_name == "TOPIC_PUT_NUMS":
            return self.topic_put.get(stats_key)
        if stats_name == "GROUP_GET_NUMS":
            topic, _, group = stats_key.partition("@")
            return self.group_get.get((topic, group))
        if stats_name in ("BROKER_PUT_NUMS", "BROKER_GET_NUMS") and stats_key == cluster_name:
            return self.put_msgs if stats_name == "BROKER_PUT_NUMS" else self.get_msgs
        return None

    def stats_data(self, counter: RateCounter) -> dict[str, dict[str, float | int]]:
        """BrokerStatsData: the last minute, hour and day."""
        now = self.clock()
        return {"statsMinute": counter.stats_item(now, 60), "statsHour": counter.stats_item(now, 3600),
                "statsDay": counter.stats_item(now, 86400)}

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
            "putMessageAverageSize": str(self.put_bytes_total / (self.put_times_total or 1)),  # 0.0 before any, as there
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
