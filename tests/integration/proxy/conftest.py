"""Fixtures every proxy test shares: the 5.1.2 Python client needs an event loop on the main thread."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def main_thread_loop() -> Iterator[None]:
    """The 5.1.2 client calls asyncio.get_event_loop() from the caller's thread while it opens its telemetry
    stream; after an asyncio.run (a module's fixtures, or any earlier test of the worker) the main thread has
    none, the call raises, the stream never opens and startup waits 10 s for settings that never come (CI at
    f5ea4e7, seen in the client's own log). A real program has its loop; so does each test here."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    asyncio.set_event_loop(None)
    loop.close()
