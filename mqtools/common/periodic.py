"""Duties a server runs every so often (a flush, the store's cleaning, a watch of files it reloads): one loop,
and one rule for its failures."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from mqtools.common.log_limiter import LimitedLog


async def every(interval_s: float, step: Callable[[], Awaitable[object]], name: str, failures: LimitedLog) -> None:
    """Await `step` every `interval_s` until cancelled. A failed step is logged through `failures`
    (LimitedLog.failure: an OSError as one line, a bug with its traceback, both rate-limited, since a duty that
    fails once a second fails the same way until mended) and the next interval tries again."""
    while True:
        await asyncio.sleep(interval_s)
        try:
            await step()
        except Exception:  # noqa: BLE001 - the next interval retries
            failures.failure(name, "%s failed", name)


async def every_in_thread(interval_s: float, action: Callable[[], object], name: str, failures: LimitedLog) -> None:
    """`every` for a blocking `action`, run in a worker thread (a flush; a stat, which can hang on a network file
    system)."""
    await every(interval_s, lambda: asyncio.to_thread(action), name, failures)
