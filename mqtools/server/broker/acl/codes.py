"""The request code both ACLs judge a request by.

The binary ROCKETMQ header carries a code in 16 bits, so RocketMQ 5's POP codes (200050 and on) arrive
as 3442 and on, and the broker serves both forms (processors/pop.py, `register_both`). ACL 1.0 and
ACL 2.0 look a request's code up here before anything else, so the 16-bit form is judged exactly as
its full code is, and no rule table has to name both.
"""

from __future__ import annotations

from mqtools.remoting.codes import RequestCode, java_short

#: the 16-bit form of every code that does not fit in 16 bits -> that code
_FULL = {java_short(code): int(code) for code in RequestCode if java_short(code) != code}


def served_code(code: int) -> int:
    """The full code a request stands for: its own, or the one whose 16-bit form it is."""
    return _FULL.get(code, code)
