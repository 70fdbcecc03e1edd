"""What the server-role commands (`mq namesrv start`, `mq broker start`) share.

Each turns its flags into properties that override the config file, runs its server on the
one event loop until SIGINT/SIGTERM, and reports a failed start as one `mq: error:` line.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any


def option_overrides(options: dict[str, object | None]) -> dict[str, str]:
    """The flags that were given, as properties (RocketMQ key -> string); unset (None) ones left out."""
    return {key: str(value) for key, value in options.items() if value is not None}


def run_server(main: Coroutine[Any, Any, Any]) -> None:
    """Run the server coroutine until it stops (a StartError reaches the frame: one line, exit 1)."""
    from mqtools.common.loop import run  # asyncio loads when a server starts, not for `mq --help`

    run(main)
