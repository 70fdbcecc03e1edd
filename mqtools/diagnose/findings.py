"""What every diagnosis shares: its verdict's severity, what that means for an exit code, how its figures read."""

from __future__ import annotations

import time
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


#: A served TLS certificate that expires within this many days is a finding to act on, within the second one to
#: know of (the time a renewal takes through most organisations' certificate desks).
CERT_ACTION_DAYS, CERT_INFO_DAYS = 7, 30
#: What to do about one (mq's servers load renewed files as they change).
CERT_RENEWAL = "copy the renewed certificate and key over tls.server.certPath and keyPath: taken without a restart"


def certificate_days_left(not_after_s: float | None, now_s: float | None = None) -> float | None:
    """Days (to a tenth) until a certificate's expiry, negative once expired; None when the expiry is not known.
    `now_s`: the wall clock, time.time() when not given."""
    if not_after_s is None:
        return None
    return round((not_after_s - (time.time() if now_s is None else now_s)) / 86_400, 1)


def certificate_when(days_left: float) -> str:
    """"expires in N days", or "expired N days ago" once it has."""
    return f"expired {-days_left:g} days ago" if days_left < 0 else f"expires in {days_left:g} days"


def certificate_severity(days_left: float) -> Severity | None:
    """Action within CERT_ACTION_DAYS (or expired), info within CERT_INFO_DAYS, else nothing to say."""
    if days_left < CERT_ACTION_DAYS:
        return Severity.ACTION
    return Severity.INFO if days_left < CERT_INFO_DAYS else None


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
