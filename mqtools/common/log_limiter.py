"""Rate-limited log lines for what peers do wrong, and for duties that fail again and again.

A server must say that clients send it garbage, but a client that sends garbage in a loop must
not be able to fill the disk with the server's log. `LogLimiter` is the sans-IO core: per kind
of line, at most `limit` lines in each `interval` seconds, the rest counted; the first line let
through after a suppression says how many similar lines were left out. `LimitedLog` puts it in
front of a logger and a clock, and keeps every line one line of bounded length.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

#: Longest message a limited line carries (the rest of a megabyte-long value is cut).
MAX_LINE = 300
#: Lines of one kind let through per interval, and the interval in seconds.
LIMIT, INTERVAL = 10, 60.0


@dataclass(slots=True)
class _Window:
    start: float
    emitted: int = 0
    suppressed: int = 0


class LogLimiter:
    """Decides which lines of each kind get logged; the caller passes the time and picks the kinds
    from a fixed set of its own (never from peer input, so the table stays small)."""

    def __init__(self, limit: int = LIMIT, interval: float = INTERVAL) -> None:
        self.limit = limit
        self.interval = interval
        self._windows: dict[str, _Window] = {}

    def admit(self, kind: str, now: float) -> int | None:
        """None: leave this line out. A number: log the line, and say that this many similar
        lines were left out before it (0: none)."""
        window = self._windows.get(kind)
        if window is None or now - window.start >= self.interval:
            left_out = window.suppressed if window is not None else 0
            self._windows[kind] = _Window(now, 1)
            return left_out
        if window.emitted < self.limit:
            window.emitted += 1
            return 0
        window.suppressed += 1
        return None


class LimitedLog:
    """A logger behind a LogLimiter: `warning(kind, msg, *args)` (or `error`, `info`) logs one line or none."""

    def __init__(self, logger: logging.Logger, clock: Callable[[], float] = time.monotonic, *,
                 limit: int = LIMIT, interval: float = INTERVAL) -> None:
        self.logger = logger
        self.clock = clock
        self.limiter = LogLimiter(limit, interval)

    def error(self, kind: str, msg: str, *args: object) -> None:
        self._emit(logging.ERROR, kind, msg, args)

    def warning(self, kind: str, msg: str, *args: object) -> None:
        self._emit(logging.WARNING, kind, msg, args)

    def info(self, kind: str, msg: str, *args: object) -> None:
        self._emit(logging.INFO, kind, msg, args)

    def failure(self, kind: str, msg: str, *args: object, exc: BaseException | None = None) -> None:
        """A periodic duty's failure `exc` (by default the one its except block handles): an OSError (the
        machine's: no file descriptor left, no space, an I/O error) as one line that names it, anything else with
        its traceback (a bug). Both limited: a duty that runs every second fails the same way every second until
        the machine is mended."""
        exc = exc if exc is not None else sys.exc_info()[1]
        if isinstance(exc, OSError):
            self._emit(logging.ERROR, kind, f"{msg}: %s", (*args, exc))
        else:
            self._emit(logging.ERROR, kind, msg, args, traceback=exc or False)

    def _emit(self, level: int, kind: str, msg: str, args: tuple[object, ...], *,
              traceback: BaseException | bool = False) -> None:
        if not self.logger.isEnabledFor(level):
            return
        left_out = self.limiter.admit(kind, self.clock())
        if left_out is None:
            return
        text = one_line(msg % args if args else msg)
        if left_out:
            text += f" (suppressed {left_out} similar)"
        self.logger.log(level, "%s", text, exc_info=traceback)


#: Control characters (newlines, NUL, escapes) written as \xNN.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(32), 127)}


def one_line(text: str) -> str:
    """Control characters escaped and the length capped, so a peer's value cannot forge or flood
    log lines."""
    clipped = text[:MAX_LINE].translate(_CONTROLS)
    if len(clipped) <= MAX_LINE and len(text) <= MAX_LINE:
        return clipped
    return f"{clipped[:MAX_LINE]}... ({len(text)} chars)"
