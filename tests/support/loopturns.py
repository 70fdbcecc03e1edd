"""How often the event loop turned while a step ran: a step that never lets it turn holds every request."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class Turns:
    count = 0


@asynccontextmanager
async def loop_turns() -> AsyncIterator[Turns]:
    """`turns.count` is how many times a task that only yields ran while the block ran."""
    turns = Turns()
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            await asyncio.sleep(0)
            turns.count += 1

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    turns.count = 0
    try:
        yield turns
    finally:
        counted = turns.count
        stop.set()
        await tick
        turns.count = counted
