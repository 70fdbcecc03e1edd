"""What a killed cluster leaves in the network (its namespaces, links and bridge) and how the next cluster on
the same base port deals with it: reclaimed when nothing runs inside, refused naming the pids while something
does. Real `ip netns` (root)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from support.ports import random_base_port

from mqtools.cluster import netns

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(netns.unavailable() is not None, reason=f"namespaces: {netns.unavailable()}")]


@pytest.fixture
def layout() -> Iterator[netns.Layout]:
    made = netns.Layout(random_base_port())
    yield made
    netns.destroy(made, 2)


def test_a_killed_clusters_namespaces_are_reclaimed_or_refused_by_pid(layout: netns.Layout) -> None:
    assert netns.leftovers(layout, 2) == ([], [])
    netns.create(layout, 2)  # then "killed": nothing removed
    names, pids = netns.leftovers(layout, 2)
    assert names == sorted([layout.bridge, layout.namespace(0), layout.namespace(1), layout.veth(0), layout.veth(1)])
    assert pids == []

    netns.create(layout, 2)  # the next cluster on the tag: reclaimed, and its links work
    with socket.create_server((layout.gateway, 0)) as server:
        dial = f"import socket; socket.create_connection(({layout.gateway!r}, {server.getsockname()[1]}), 10)"
        done = subprocess.run([*layout.exec_prefix(layout.namespace(1)), sys.executable, "-c", dial],
                              capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr

    held = subprocess.Popen([*layout.exec_prefix(layout.namespace(1)), "sleep", "60"])
    try:
        deadline = time.monotonic() + 30
        while not netns.leftovers(layout, 2)[1] and time.monotonic() < deadline:
            time.sleep(0.05)  # until `ip netns exec` has moved in (milliseconds)
        with pytest.raises(netns.NetnsError, match=rf"still in use by pids {held.pid}\b"):
            netns.create(layout, 2)
        assert layout.namespace(1) in netns.leftovers(layout, 2)[0]  # refused: nothing removed
    finally:
        held.kill()
        held.wait()
