"""Points in time as operators type them, to epoch milliseconds.

Accepted: epoch ms (`1700000000000`), ISO 8601 (`2026-11-23T10:00:00Z`, `2026-11-23 10:00`; local
time without an offset), mqadmin's `yyyy-MM-dd#HH:mm:ss:SSS` (local time), `now`, and a relative
`-15m` (units ms, s, m, h, d). `now_ms` is passed in so callers and tests agree on "now".
"""

from __future__ import annotations

import re
from datetime import datetime

from mqtools.common.errors import ToolkitError
from mqtools.common.exitcodes import EXIT_USAGE

_RELATIVE = re.compile(r"^-(\d+)(ms|s|m|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_MQADMIN = re.compile(r"^(\d{4})-(\d{2})-(\d{2})#(\d{2}):(\d{2}):(\d{2}):(\d{3})$")
FORMATS_HELP = "epoch ms, ISO 8601, yyyy-MM-dd#HH:mm:ss:SSS, now or -15m (ms/s/m/h/d)"


class TimeSpecError(ToolkitError, ValueError):
    """A time in none of the accepted forms: a usage error (exit 2) the CLI's frame prints as it is, and a
    ValueError still for callers that parse values."""

    exit_code = EXIT_USAGE


def parse_time_ms(text: str, now_ms: int) -> int:
    """Epoch ms for `text`; TimeSpecError with a message naming the accepted forms."""
    value = text.strip()
    if value.lower() == "now":
        return now_ms
    relative = _RELATIVE.match(value)
    if relative:
        return now_ms - int(relative.group(1)) * _UNIT_MS[relative.group(2)]
    mqadmin = _MQADMIN.match(value)
    try:
        if value.isdigit():
            return int(value)
        if "#" in value and not mqadmin:
            raise ValueError(value)
        if mqadmin:
            y, mo, d, h, mi, s, ms = (int(g) for g in mqadmin.groups())
            return int(datetime(y, mo, d, h, mi, s, ms * 1000).timestamp() * 1000)
        return int(datetime.fromisoformat(value).timestamp() * 1000)
    except ValueError:
        raise TimeSpecError(f"bad time {text!r}: use {FORMATS_HELP}") from None
