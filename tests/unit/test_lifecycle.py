"""What the server components share about running: serve (the heap settled before ready), cancel_and_wait."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal

import pytest

from mqtools.common.heap import GC_THRESHOLDS
from mqtools.server.lifecycle import cancel_and_wait, serve


async def test_cancel_and_wait_ends_every_task_and_reports_a_failed_one(caplog: pytest.LogCaptureFixture) -> None:
    async def failed() -> None:
        raise OSError("connection reset")

    looping = asyncio.create_task(asyncio.sleep(3600))
    broken = asyncio.create_task(failed(), name="broken")
    await asyncio.sleep(0)
    with caplog.at_level(logging.INFO, logger="mqtools.server.lifecycle"):
        await cancel_and_wait(looping, None, broken)
    assert looping.cancelled() and broken.done()
    assert "broken" in caplog.text and "connection reset" in caplog.text


async def test_a_server_is_ready_with_what_it_loaded_frozen_and_rarer_collections() -> None:
    """What a server holds once started is out of the collector's way, and the young generation is collected
    every GC_THRESHOLDS[0] new containers, not 700 (a broker under load spent ~5% of its CPU collecting)."""
    seen: list[tuple[tuple[int, ...], int]] = []

    class Loaded:
        async def start(self) -> None:
            self.state = [{"topic": i} for i in range(1000)]

        async def shutdown(self) -> None:
            pass

    def ready() -> None:
        seen.append((gc.get_threshold(), gc.get_freeze_count()))
        os.kill(os.getpid(), signal.SIGTERM)  # serve stops on it, as on a real one

    before = gc.get_threshold()
    try:
        await asyncio.wait_for(serve(Loaded(), ready), 10)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
    [(thresholds, frozen)] = seen
    assert thresholds == GC_THRESHOLDS and frozen >= 1000
