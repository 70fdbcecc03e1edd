"""What every diagnosis shares: its verdict's severity, what that means for an exit code, how its figures read."""

from __future__ import annotations

from enum import Enum

from mqtools.common.exitcodes import EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE
from mqtools.common.presentation import NA


class Severity(str, Enum):
    """How much a verdict asks of an operator, mildest first."""

    OK = "ok"
    """Nothing to do."""
    INFO = "info"
    """Something is changing on its own (a rebalance); look again if it lasts."""
    ACTION = "action"
    """Something needs a person: the verdict names the cause and the commands that act on it."""
    UNKNOWN = "unknown"
    """A figure the verdict needs could not be read; the diagnosis names it."""


def exit_code(severities: list[Severity]) -> int:
    """`mq admin diagnose`'s exit: 1 when a verdict needs action, else 3 when one could not be judged, else 0
    (ok and info)."""
    if Severity.ACTION in severities:
        return EXIT_REFUSED
    if Severity.UNKNOWN in severities:
        return EXIT_UNREACHABLE
    return EXIT_OK


def rank(severity: Severity) -> int:
    """Sort key, worst first (action, unknown, info, ok)."""
    return {Severity.ACTION: 0, Severity.UNKNOWN: 1, Severity.INFO: 2, Severity.OK: 3}[severity]


def number(value: float | None, unit: str = "") -> str:
    """A figure in a diagnosis's footer: thousands separated, no decimals, its unit; n/a when not known."""
    if value is None:
        return NA
    return f"{value:,.0f}{' ' + unit if unit else ''}"
