"""What a gRPC method of the proxy knows of its caller, and the proxy's clock."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Call:
    """What a method knows of its caller."""

    client_id: str
    language: str
    version: str
    peer: str
    time_left: float | None
    """Seconds to the call's deadline; None without one."""


def now_ms() -> int:
    return int(time.time() * 1000)
