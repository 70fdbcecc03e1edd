"""Polling off the UI's thread: MQAdmin and its rounds run on an event loop in a thread of their own.

Network I/O and the parsing of large answers (a thousand topic configs) never run on Textual's loop,
so keys answer while a round is under way. Each job's outcome is handed to the UI's loop as soon as
it is known (`loop.call_soon_threadsafe`), so a slow broker only delays its own rows.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

from mqtools.client.admin import MQAdmin
from mqtools.client.sync import LoopThread
from mqtools.cluster.procstats import ProcSampler
from mqtools.common.heap import GC_THRESHOLDS
from mqtools.common.security import ClientSecurity
from mqtools.live.collect import Collector, Wanted
from mqtools.live.state import Outcome

log = logging.getLogger(__name__)
SWITCH_INTERVAL = 0.001


def tune_process() -> None:
    """Settings for a process that answers keys while another thread parses large answers.

    A shorter GIL switch interval (default 5 ms) lets a key in without waiting out the poller's slice
    of CPU work; collecting the young generation every 50,000 allocations instead of 700 keeps the
    collector from stopping both threads many times per refresh of a thousand rows (measured by
    bench/top_refresh.py: key-to-screen p99 during a refresh falls from ~100-150 ms to ~35-50 ms).
    """
    sys.setswitchinterval(SWITCH_INTERVAL)
    gc.set_threshold(*GC_THRESHOLDS)
T = TypeVar("T")
Sink = Callable[[Outcome], None]


class Poller:
    """One MQAdmin session in a daemon thread; `round` and `call` are awaited from the UI's loop."""

    def __init__(self, namesrv: str, *, timeout: float = 5.0, state_dir: str | None = None,
                 security: ClientSecurity | None = None) -> None:
        tune_process()
        self._thread = LoopThread("mq-top-poller")

        async def make() -> MQAdmin:
            return MQAdmin(namesrv, timeout=timeout, security=security)

        self.admin = self._thread.run(make())
        self.namesrv_addrs = list(self.admin.namesrv_addrs)
        sampler = ProcSampler(state_dir) if state_dir else None
        self._collector = Collector(self.admin, self._publish, sampler.sample if sampler else None)
        self._sink: Sink | None = None
        self._ui_loop: asyncio.AbstractEventLoop | None = None

    def attach(self, sink: Sink) -> None:
        """Deliver outcomes to `sink` on the calling (UI) loop from now on."""
        self._ui_loop = asyncio.get_running_loop()
        self._sink = sink

    def _publish(self, outcome: Outcome) -> None:
        loop, sink = self._ui_loop, self._sink
        if loop is not None and sink is not None and not loop.is_closed():
            loop.call_soon_threadsafe(sink, outcome)

    async def round(self, wanted: Wanted) -> float:
        """One refresh round on the poller's loop; its wall time in seconds."""
        return await self._on_thread(self._collector.round(wanted))

    async def call(self, job: Callable[[MQAdmin], Awaitable[T]]) -> T:
        """Any admin call (the write actions), on the poller's loop."""
        return await self._on_thread(job(self.admin))

    async def _on_thread(self, coro: Awaitable[T]) -> T:
        async def wrapped() -> T:
            return await coro

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(wrapped(), self._thread.loop))

    def close(self) -> None:
        try:
            self._thread.run(self._close(), timeout=5)
        except Exception as exc:  # noqa: BLE001 - closing is best effort; the thread goes either way
            log.debug("closing the poller's admin session: %s", exc)
        finally:
            self._thread.close()

    async def _close(self) -> None:
        for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
            task.cancel()
        await self.admin.close()

