"""Ports for test processes that must be told their port before they start.

Nothing here comes from Linux's ephemeral range (32768 and up by default): there the kernel hands out the
port-0 and outgoing-connection ports of every process running at the same time (the suite runs on two
workers, and a JVM opens many connections), and one of them took a broker's HA port (listenPort + 1) in the
seconds between a probe releasing it and the broker binding it. Two disjoint ranges below it:

- preset bases (`mq cluster up --preset`, drills): multiples of 100 in [20000, 30000), a preset laying its
  processes out about a thousand above its base, so its highest port stays under 32768;
- single ports and small blocks (`free_port`): [10000, 20000), split between the xdist workers so two
  workers never draw the same one, and never handed out twice in one process.
"""

from __future__ import annotations

import os
import random
import socket

#: Bases are multiples of 100 in [20000, 30000): a preset's highest port stays under 32768.
BASE_PORTS = range(20000, 30000, 100)

#: Where free_port draws from (below BASE_PORTS).
FIXED_PORTS = range(10000, 20000)

_given: set[int] = set()


def random_base_port() -> int:
    return random.choice(BASE_PORTS)


def _worker_slice() -> range:
    """This xdist worker's share of FIXED_PORTS (all of it outside xdist)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    width = len(FIXED_PORTS) // max(count, 1)
    start = FIXED_PORTS.start + width * (index % max(count, 1))
    return range(start, start + width)


def free_port(span: tuple[int, ...] = (0,)) -> int:
    """A port p with p+d free on 127.0.0.1 for every d in `span` (checked by binding, then released)."""
    ports = _worker_slice()
    low, high = ports.start - min(span), ports.stop - max(span)
    for _ in range(500):
        port = random.randrange(low, high)
        block = [port + d for d in span]
        if _given.intersection(block):
            continue
        socks: list[socket.socket] = []
        try:
            for p in block:
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
        _given.update(block)
        return port
    raise RuntimeError(f"no free port block {span} on 127.0.0.1")


def free_ports(n: int) -> list[int]:
    """n distinct free ports."""
    return [free_port() for _ in range(n)]
