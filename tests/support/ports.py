"""Ports for test processes that must be told their port before they start.

Nothing here comes from Linux's ephemeral range (32768 and up by default): there the kernel hands out the
port-0 and outgoing-connection ports of every process running at the same time (the suite runs on two
workers, and a JVM opens many connections), and one of them took a broker's HA port (listenPort + 1) in the
seconds between a probe releasing it and the broker binding it. Two disjoint ranges below it:

- preset bases (`mq cluster up --preset`, drills): multiples of 100 in [20000, 30000), a preset laying its
  processes out about a thousand above its base, so its highest port stays under 32768; split between the
  xdist workers with a preset's span kept inside each share (two workers' presets once overlapped, and
  the launcher's probe-then-bind leaves a moment for the other to take a port);
- single ports and small blocks (`free_port`): [10000, 20000), split between the xdist workers so two
  workers never draw the same one, and never handed out twice in one process.
"""

from __future__ import annotations

import os
import random
import socket

#: Bases are multiples of 100 in [20000, 30000): a preset's highest port stays under 32768.
BASE_PORTS = range(20000, 30000, 100)

#: The ports a preset lays out above its base (controllers and brokers included), rounded up.
PRESET_SPAN = 1200

#: Where free_port draws from (below BASE_PORTS).
FIXED_PORTS = range(10000, 20000)

_given: set[int] = set()
_bases_given: set[int] = set()


def random_base_port() -> int:
    """A base in this worker's share whose preset stays inside the share, not given before in this process
    (while any is left)."""
    share = worker_share(BASE_PORTS)
    bases = [b for b in range(share.start, share.stop - PRESET_SPAN + 1, BASE_PORTS.step)]
    fresh = [b for b in bases if b not in _bases_given] or bases
    base = random.choice(fresh)
    _bases_given.add(base)
    return base


def worker_share(ports: range) -> range:
    """This xdist worker's share of `ports` (all of it outside xdist)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")), 1)
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    width = len(ports) // count * ports.step
    start = ports.start + width * (index % count)
    return range(start, start + width)


def free_port(span: tuple[int, ...] = (0,)) -> int:
    """A port p with p+d free on 127.0.0.1 for every d in `span` (checked by binding, then released)."""
    ports = worker_share(FIXED_PORTS)
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
