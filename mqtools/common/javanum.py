"""Java's int and long as RocketMQ's headers, bodies and store fields hold them: one place for the bounds."""

from __future__ import annotations

INT_RANGE = range(-(2**31), 2**31)
LONG_RANGE = range(-(2**63), 2**63)
INT_MIN, INT_MAX = INT_RANGE.start, INT_RANGE.stop - 1
"""Integer.MIN_VALUE, Integer.MAX_VALUE."""
LONG_MIN, LONG_MAX = LONG_RANGE.start, LONG_RANGE.stop - 1
"""Long.MIN_VALUE, Long.MAX_VALUE."""
