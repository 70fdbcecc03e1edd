"""What the server roles share about running: start/shutdown, the one start failure, serving until a signal.

Every long-lived server component starts with `start()` and stops with `shutdown()`; a role that
cannot start raises `StartError`, whose message the command line prints as one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import signal
import time
from collections.abc import Callable
from typing import Any, Protocol

from mqtools.common.errors import ToolkitError
from mqtools.common.heap import settle_heap
from mqtools.common.open_files import raise_open_files_limit
from mqtools.server.loop_watch import LoopWatch

SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: Every server process's log line: time, level, logger, message (a broker's front workers log as it does).
SERVER_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

log = logging.getLogger(__name__)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class StartError(ToolkitError, RuntimeError):
    """A server cannot start (port taken, store locked, unreadable kvConfig.json, ...); the message
    is one line for the user (exit 1 through the CLI's frame)."""


class Service(Protocol):
    async def start(self) -> None: ...

    async def shutdown(self) -> None: ...


async def listen(server: Service, addr: str) -> None:
    """Start a remoting server; a port that cannot be bound is a StartError naming `addr`."""
    try:
        await server.start()
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise StartError(f"cannot listen on {addr}: address already in use") from None
        raise StartError(f"cannot listen on {addr}: {exc.strerror or exc}") from None


async def cancel_and_wait(*tasks: asyncio.Task[Any] | None) -> None:
    """Cancel the tasks (None: never started) and wait until each has ended, so a shutdown never
    returns while one of its loops still runs. What a task ended with instead is logged, not
    raised: the rest of the shutdown must still happen."""
    started = [task for task in tasks if task is not None]
    for task in started:
        task.cancel()
    for task in started:
        try:
            await task
        except asyncio.CancelledError:
            continue
        except Exception as exc:  # noqa: BLE001 - reported here, the shutdown goes on
            log.info("task %s had ended with %r", task.get_name(), exc)


async def serve(service: Service, on_ready: Callable[[], None]) -> None:
    """Raise the open-file limit (common/open_files.py), start `service`, settle the heap (common/heap.py), call
    `on_ready`, run until SIGINT/SIGTERM, shut down. A failed start shuts down what did start, then raises
    (StartError for the failures a user can fix). From start to end a LoopWatch names what holds the loop up."""
    raise_open_files_limit()
    watch = LoopWatch()
    watch.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        try:
            await service.start()
        except BaseException:
            await service.shutdown()
            raise
        settle_heap()  # what it loaded lives as long as it does: not scanned at every collection
        on_ready()
        try:
            await stop.wait()
        finally:
            await service.shutdown()
    finally:
        watch.stop()
        for sig in SIGNALS:
            loop.remove_signal_handler(sig)


class Together:
    """Several services as one: started in order, shut down in reverse (a name server with its
    controller inside, as `enableControllerInNamesrv=true` asks)."""

    def __init__(self, *services: Service) -> None:
        self.services = services
        self._started: list[Service] = []

    async def start(self) -> None:
        for service in self.services:
            self._started.append(service)
            await service.start()

    async def shutdown(self) -> None:
        while self._started:
            await self._started.pop().shutdown()
