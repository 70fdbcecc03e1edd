"""mq's event loops: uvloop when it is installed (a dependency on Linux), asyncio's own otherwise.

Servers, `mq` commands and the client's loop threads all take their loop from here, so a process
never mixes the two and the faster loop is used wherever it exists.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from types import ModuleType
from typing import Any, TypeVar

T = TypeVar("T")


def _uvloop() -> ModuleType | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop


def loop_name() -> str:
    """Which loop new_event_loop makes here: "uvloop" or "asyncio"."""
    return "asyncio" if _uvloop() is None else "uvloop"


def new_event_loop() -> asyncio.AbstractEventLoop:
    uvloop = _uvloop()
    return asyncio.new_event_loop() if uvloop is None else uvloop.new_event_loop()


def run(main: Coroutine[Any, Any, Any]) -> Any:
    """Run `main` to completion on a fresh loop, as asyncio.run does."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(main)


PUTS_PER_TURN = 32
"""Messages a server's own duty (a timer tick's delivery, the POP revive) puts back before it lets the loop turn:
a put under ASYNC_FLUSH never suspends, so 100,000 of them due at once held every request for seconds."""


async def wait_event(event: asyncio.Event, timeout: float) -> bool:
    """Until `event` is set or `timeout` seconds pass; whether it is set. asyncio.wait_for on Python 3.11
    loses a cancellation that arrives in the step its inner wait ends (bpo-42130), so a loop built on it
    could run on after its task was cancelled and a shutdown awaiting that task hang (a traced Producer's
    close did, 2 runs in 3 of bench/trace_cost.py); asyncio.timeout never swallows a cancel that is not its own."""
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return event.is_set()
    return True


def settle(future: asyncio.Future[T], result: T) -> None:
    """Set ``future``'s result unless it is done already (its awaiter cancelled): what a callback that ends
    a wait calls, so a late answer to a wait nobody awaits any more is not an InvalidStateError."""
    if not future.done():
        future.set_result(result)
