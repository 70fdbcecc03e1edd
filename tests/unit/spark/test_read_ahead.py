"""read_ahead: the next batch is built while the caller holds this one, in order, and an early stop ends the
source and what it had started."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from mqtools.spark.reader import read_ahead


class Source:
    """Batches 0..n-1, noting what was started and whether it was closed."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.started: list[int] = []
        self.closed = False

    async def batches(self) -> AsyncGenerator[int, None]:
        try:
            for i in range(self.n):
                self.started.append(i)
                await asyncio.sleep(0)
                yield i
        finally:
            self.closed = True


def test_every_batch_in_order_with_the_next_built_meanwhile() -> None:
    async def run() -> None:
        source = Source(4)
        ahead = read_ahead(source.batches())
        assert await anext(ahead) == 0
        for _ in range(3):
            await asyncio.sleep(0)
        assert source.started == [0, 1]  # the caller holds 0; 1 is being built without being asked for
        assert [b async for b in ahead] == [1, 2, 3]
        assert source.closed

    asyncio.run(run())


def test_an_early_stop_closes_the_source_and_its_batch_in_the_making() -> None:
    async def run() -> None:
        gate = asyncio.Event()
        closed: list[str] = []

        async def slow() -> AsyncGenerator[int, None]:
            try:
                yield 0
                await gate.wait()  # the second batch's pulls, never answered
                yield 1
            finally:
                closed.append("source")

        ahead = read_ahead(slow())
        assert await anext(ahead) == 0
        await asyncio.sleep(0)
        await ahead.aclose()
        assert closed == ["source"]

    asyncio.run(asyncio.wait_for(run(), 5))
