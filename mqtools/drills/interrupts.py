"""SIGTERM and SIGHUP end a drill as Ctrl-C does, and its cleanup is not cut short by another signal.

A drill under a supervisor (systemd, CI's timeout, a closed terminal) gets SIGTERM or SIGHUP, not SIGINT, and died
of it at once: a SIGSTOPped broker stayed stopped, the drill's topic stayed, a --preset cluster kept running in a
temporary dir nobody knew. `as_interrupts` sends both down SIGINT's path: asyncio.Runner's handler cancels the drill's
task and its finally blocks restore the cluster; outside the loop, KeyboardInterrupt. Where SIGINT itself is ignored
(a script's background job), the drill's task is cancelled the same way (`run`). `Deferred` holds these signals while
a cleanup runs, so a second Ctrl-C or SIGTERM does not leave the cleanup half done.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import Any, Self, TypeVar

from mqtools.common.loop import run as run_loop

T = TypeVar("T")
FORWARDED = (signal.SIGTERM, signal.SIGHUP)
HELD = (signal.SIGINT, *FORWARDED)
NOTE = b"mq: cleaning up (the cluster is being restored); this ends by itself\n"

_tasks: list[asyncio.Task[Any]] = []
"""The task `run` runs, while it runs: what a signal cancels when SIGINT has no handler to do it."""
_cancelled: set[asyncio.Task[Any]] = set()


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def interrupt(frame: FrameType | None = None) -> None:
    """SIGINT's path, now: SIGINT's handler (asyncio.Runner's cancels its task; Python's raises KeyboardInterrupt);
    with SIGINT ignored, `run`'s task cancelled, else KeyboardInterrupt."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler) and handler is not _forward:
        handler(signal.SIGINT, frame)
        return
    task = _tasks[-1] if _tasks else None
    if task is not None and not task.done():
        _cancelled.add(task)
        task.cancel()
        return
    raise KeyboardInterrupt


def _forward(signum: int, frame: FrameType | None) -> None:
    interrupt(frame)


@contextmanager
def as_interrupts() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP do what SIGINT does (one the caller ignores, as nohup's SIGHUP,
    stays ignored)."""
    saved: dict[int, Any] = {}
    if _main_thread():
        for sig in FORWARDED:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                saved[sig] = signal.signal(sig, _forward)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def run(main: Coroutine[Any, Any, T]) -> T:
    """run_loop(main), its task cancellable by `interrupt` when SIGINT is ignored; KeyboardInterrupt then, as
    asyncio.Runner raises after a Ctrl-C."""

    async def tracked() -> T:
        task = asyncio.current_task()
        assert task is not None
        _tasks.append(task)
        try:
            return await main
        finally:
            _tasks.remove(task)

    try:
        return run_loop(tracked())
    except asyncio.CancelledError:
        if not _cancelled:
            raise
        _cancelled.clear()
        raise KeyboardInterrupt from None


class Deferred:
    """`with Deferred(): cleanup`: SIGINT, SIGTERM and SIGHUP are held until the cleanup ends (one note on stderr
    says it goes on), then one interrupt is delivered, unless a cancel is already under way (the held signal would
    only repeat it). The SIGKILL stays for whoever must stop it now."""

    def __init__(self) -> None:
        self.arrived: list[int] = []
        self._saved: dict[int, Any] = {}

    def __enter__(self) -> Self:
        if _main_thread():
            for sig in HELD:
                if signal.getsignal(sig) not in (signal.SIG_IGN, None):
                    self._saved[sig] = signal.signal(sig, self._hold)
        return self

    def _hold(self, signum: int, frame: FrameType | None) -> None:
        if not self.arrived:
            with contextlib.suppress(OSError):  # a hung-up terminal: the cleanup goes on all the same
                os.write(2, NOTE)
        self.arrived.append(signum)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)
        self._saved.clear()
        if self.arrived and exc_type is None and not _cancelling():
            interrupt()


def _cancelling() -> bool:
    """Inside a task that is being cancelled (a Ctrl-C's cancel on its way out)."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return False
    return task is not None and task.cancelling() > 0
