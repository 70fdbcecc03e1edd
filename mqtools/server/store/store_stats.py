"""Store counters, put/get TPS and the store half of GET_BROKER_RUNTIME_INFO (RocketMQ's
StoreStatsService).

Counters are plain attributes bumped on the put/get paths. TPS comes from one sample per second
kept for ten minutes, so the 10 s / 60 s / 600 s windows RocketMQ reports are differences of two
samples rather than counters that need resetting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from mqtools.server.store.commitlog import CommitLog

WINDOWS_S = (10, 60, 600)


class StoreStatsService:
    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.put_times = 0
        self.put_size = 0
        self.put_failures = 0
        self.get_times = 0
        self.get_found = 0
        self._samples: list[tuple[float, int, int]] = []

    async def sample_loop(self) -> None:
        while True:
            self._samples.append((self.clock(), self.put_times, self.get_found))
            del self._samples[:-(WINDOWS_S[-1] + 1)]
            await asyncio.sleep(1.0)

    def _tps(self, window_s: float, index: int) -> float:
        samples = self._samples
        if len(samples) < 2:
            return 0.0
        last = samples[-1]
        first = next((s for s in samples if last[0] - s[0] <= window_s), samples[0])
        span = last[0] - first[0]
        return (last[index] - first[index]) / span if span > 0 else 0.0

    def runtime_info(self, cl: CommitLog, reput_offset: int, disk_ratio: float) -> dict[str, str]:
        put = " ".join(f"{self._tps(w, 1):.2f}" for w in WINDOWS_S)
        get = " ".join(f"{self._tps(w, 2):.2f}" for w in WINDOWS_S)
        return {
            "commitLogMinOffset": str(cl.min_offset),
            "commitLogMaxOffset": str(cl.max_offset),
            "commitLogDiskRatio": f"{max(disk_ratio, 0.0):.2f}",
            "consumeQueueDiskRatio": f"{max(disk_ratio, 0.0):.2f}",
            "dispatchBehindBytes": str(max(cl.max_offset - reput_offset, 0)),
            "putMessageTimesTotal": str(self.put_times),
            "putMessageSizeTotal": str(self.put_size),
            "putMessageFailedTimes": str(self.put_failures),
            "getMessageTimesTotalFound": str(self.get_found),
            "putTps": put,
            "getFoundTps": get,
            "pageCacheLockTimeMills": "0",
            "remainHowManyDataToFlush": str(max(cl.max_offset - cl.flushed_where, 0)),
            "commitLogFlushedOffset": str(cl.flushed_where),
        }
