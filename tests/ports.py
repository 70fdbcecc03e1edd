"""Base ports for `mq cluster up --preset` (and drills) in tests.

A preset lays its processes out from a base port (name servers at the base, brokers about a thousand above
it). Bases are drawn below Linux's ephemeral range (32768 and up), where the OS hands out the client and
port-0 ports of every other test running at the same time (the suite runs on two workers), so a preset's
fixed ports do not collide with them.
"""

from __future__ import annotations

import random

#: Bases are multiples of 100 in [20000, 30000): a preset's highest port stays under 32768.
BASE_PORTS = range(20000, 30000, 100)


def random_base_port() -> int:
    return random.choice(BASE_PORTS)
