"""What the server-role commands (`mq namesrv start`, `mq broker start`, `mq proxy start`) share.

Each turns its flags into properties that override the config file, logs in one format, runs its server
on the one event loop until SIGINT/SIGTERM, and reports a failed start as one `mq: error:` line.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import Any


def option_overrides(options: dict[str, object | None]) -> dict[str, str]:
    """The flags that were given, as properties (RocketMQ key -> string); unset (None) ones left out."""
    return {key: str(value) for key, value in options.items() if value is not None}


def server_logging() -> None:
    """Warnings and errors of every logger, with time, level and logger name; a logger that sets INFO for
    itself (HA, TLS certificates) shows its INFO lines too."""
    from mqtools.server.lifecycle import SERVER_LOG_FORMAT

    logging.basicConfig(level=logging.WARNING, format=SERVER_LOG_FORMAT)


def run_server(main: Coroutine[Any, Any, Any]) -> None:
    """Run the server coroutine until it stops (a StartError reaches the frame: one line, exit 1)."""
    from mqtools.common.loop import run  # asyncio loads when a server starts, not for `mq --help`

    run(main)
