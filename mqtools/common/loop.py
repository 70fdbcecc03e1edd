"""mq's event loops: uvloop when it is installed (a dependency on Linux), asyncio's own otherwise.

Servers, `mq` commands and the client's loop threads all take their loop from here, so a process
never mixes the two and the faster loop is used wherever it exists.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from types import ModuleType
from typing import Any


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
