"""What the server components share about stopping: cancel_and_wait."""

from __future__ import annotations

import asyncio
import logging

import pytest

from mqtools.server.lifecycle import cancel_and_wait


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
