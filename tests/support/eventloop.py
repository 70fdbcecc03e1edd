"""An event loop for the calling thread, which the official RocketMQ 5 Python client (5.1.2) needs.

The 5.1.2 client calls asyncio.get_event_loop() from the caller's thread while it opens its telemetry
stream; after an asyncio.run (a module's fixtures, or any earlier test of the worker) the main thread has
none, the call raises, the stream never opens and startup waits 10 s for settings that never come (CI at
f5ea4e7, seen in the client's own log). A real program has its loop; so does each test that uses the client
(`main_thread_loop`, imported into a conftest or test module), and each worker thread that drives one
(`own_event_loop`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def own_event_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A new event loop set as this thread's for the block, closed after it."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield loop
    finally:
        asyncio.set_event_loop(None)
        loop.close()


@pytest.fixture(autouse=True)
def main_thread_loop() -> Iterator[None]:
    """Each test runs with an event loop set on the main thread (see the module docstring)."""
    with own_event_loop():
        yield
