"""BrokerFastFailure: how long a send waits before the broker gets to it, and the SYSTEM_BUSY answer
RocketMQ gives when that is too long.

RocketMQ's broker queues sends for a thread pool and answers those that waited waitTimeMillsInSendQueue
or longer with SYSTEM_BUSY "[TIMEOUT_CLEAN_QUEUE]" instead of storing them (cleanExpiredRequest), and
reports the oldest one's wait as sendThreadPoolQueueHeadWaitTimeMills (0 while no send waits). mq's
broker runs sends on its event loop: a send waits while the loop finishes earlier work. A timer is due
every PROBE_S; a send handled while it is overdue arrived during a stall at most that long. That wait is
the head wait the broker reports (the peak since the last read, over sends only: a stall with no send
waiting, such as a slave's or an idle broker's on a busy machine, is no busy send queue), and a send that
waited waitTimeMillsInSendQueue or more gets RocketMQ's answer; once the loop catches up nothing is
refused. `SendWait` is the arithmetic (clock readings in, the wait out); `BrokerFastFailure` runs the
timer.
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
class SendWait:
    """The longest a send waited since the last read (what runtime info reports)."""

    peak_ms: int = 0

    def observe(self, due: float | None, handled: float) -> int:
        """A send handled at `handled` while the probe was due at `due` (seconds; None before the first
        probe): how long it waited, remembered."""
        if due is None or handled <= due:  # comparisons, not max(): this runs for every send
            return 0
        waited = round((handled - due) * 1000)
        self.peak_ms = max(self.peak_ms, waited)
        return waited

    def take_peak(self) -> int:
        """The longest wait since the last call: a reader polling now and then still sees a stall between."""
        peak, self.peak_ms = self.peak_ms, 0
        return peak


class BrokerFastFailure:
    """The probe timer and the verdict for a send arriving now."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config  # brokerFastFailureEnable and waitTimeMillsInSendQueue, changeable at run time
        self.wait = SendWait()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._due: float | None = None
        """When the running probe's timer is due (loop time); None before the first."""

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.create_task(self._probe(), name="fast-failure-probe")

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _probe(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self._due = loop.time() + PROBE_S
            await asyncio.sleep(PROBE_S)

    def refusal(self, now: float | None = None) -> str | None:
        """The remark of RocketMQ's SYSTEM_BUSY for a send handled now (loop time), or None to take it; the
        send's wait is remembered either way."""
        if now is None:  # the loop kept from start(): asking asyncio for it cost every send
            now = (self._loop or asyncio.get_running_loop()).time()
        waited = self.wait.observe(self._due, now)
        cfg = self.config
        if waited < cfg.wait_time_mills_in_send_queue or not cfg.broker_fast_failure_enable:
            return None
        return (f"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: {waited}ms, "
                "size of queue: 0")
