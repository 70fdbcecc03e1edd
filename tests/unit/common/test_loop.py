"""wait_event: a loop that waits on an event with a timeout still ends when its task is cancelled in the
very step its event is set (asyncio.wait_for on 3.11 loses that cancel, and the awaiting shutdown hangs)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable

import pytest

from mqtools.common.loop import wait_event


async def _loop_ends_on_a_racing_cancel(wait: Callable[[asyncio.Event, float], Awaitable[object]]) -> bool:
    wake = asyncio.Event()

    async def flusher() -> None:
        while True:
            await wait(wake, 10.0)
            wake.clear()

    task = asyncio.get_running_loop().create_task(flusher())
    await asyncio.sleep(0.01)  # the task now waits on the event
    wake.set()  # a record arrives...
    task.cancel()  # ...in the same step the owner shuts down
    await asyncio.wait({task}, timeout=1.0)
    ended = task.done()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return ended


async def test_a_cancel_in_the_step_the_event_is_set_ends_the_loop() -> None:
    assert await _loop_ends_on_a_racing_cancel(wait_event)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12's wait_for no longer loses that cancel")
async def test_the_race_is_real_with_wait_for() -> None:
    async def with_wait_for(event: asyncio.Event, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout)

    assert not await _loop_ends_on_a_racing_cancel(with_wait_for)  # why wait_event exists (Python 3.11)


@pytest.mark.parametrize("set_first", [True, False])
async def test_returns_whether_the_event_is_set(set_first: bool) -> None:
    event = asyncio.Event()
    if set_first:
        event.set()
    assert await wait_event(event, 0.01) is set_first
