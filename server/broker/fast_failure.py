"""BrokerFastFailure: how long a send waits before the broker gets to it, and the SYSTEM_BUSY answer
RocketMQ gives when that is too long.

RocketMQ's broker queues sends for a thread pool and answers those that waited waitTimeMillsInSendQueue
or longer with SYSTEM_BUSY "[TIMEOUT_CLEAN_QUEUE]" instead of storing them (cleanExpiredRequest), and
reports the oldest one's wait as sendThreadPoolQueueHeadWaitTimeMills. mq's broker runs sends on its
event loop: a send waits while the loop finishes earlier work. A timer due every PROBE_S measures how late
it fires: the head wait the broker reports (the peak since the last read). A send handled while that timer
is overdue by waitTimeMillsInSendQueue or more arrived during a stall that long, and gets RocketMQ's
answer; once the loop catches up nothing is refused. `LoopLag` is the arithmetic (clock readings in, the
lag out); `BrokerFastFailure` runs the timer.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mqtools.server.broker.config import BrokerConfig

#: How often the loop's lag is probed.
PROBE_S = 0.05


@dataclass(slots=True)
class LoopLag:
    """The latest probe's lag, and the peak since it was last read (what runtime info reports)."""

    lag_ms: int = 0
    peak_ms: int = 0

    def observe(self, due: float, fired: float) -> int:
        """A probe due at `due` fired at `fired` (seconds): its lag, remembered."""
        self.lag_ms = max(0, round((fired - due) * 1000))
        self.peak_ms = max(self.peak_ms, self.lag_ms)
        return self.lag_ms

    def take_peak(self) -> int:
        """The highest lag since the last call: a reader polling now and then still sees a stall between."""
        peak, self.peak_ms = self.peak_ms, self.lag_ms
        return peak


class BrokerFastFailure:
    """The probe timer and the verdict for a send arriving now."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config  # brokerFastFailureEnable and waitTimeMillsInSendQueue, changeable at run time
        self.lag = LoopLag()
        self._task: asyncio.Task[None] | None = None
        self._due: float | None = None
        """When the running probe's timer is due (loop time); None before the first."""

    async def start(self) -> None:
        self._task = asyncio.create_task(self._probe(), name="fast-failure-probe")

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _probe(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self._due = due = loop.time() + PROBE_S
            await asyncio.sleep(PROBE_S)
            self.lag.observe(due, loop.time())

    def refusal(self, now: float | None = None) -> str | None:
        """The remark of RocketMQ's SYSTEM_BUSY for a send handled now (loop time), or None to take it."""
        if not self.config.broker_fast_failure_enable or self._due is None:
            return None
        waited = round(((asyncio.get_running_loop().time() if now is None else now) - self._due) * 1000)
        if waited < self.config.wait_time_mills_in_send_queue:
            return None
        return (f"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: {waited}ms, "
                "size of queue: 0")
