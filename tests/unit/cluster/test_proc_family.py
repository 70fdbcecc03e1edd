"""A cluster process's CPU and RSS count its descendants (a broker's front workers): `mq cluster status` and the
live view's process figures had left them out, so a broker whose workers did the network work read nearly idle."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from unit.cluster.procsupport import save

from mqtools.cluster import supervisor as sv
from mqtools.cluster.procstats import ProcSampler

#: A parent that idles while its one child spins (as a broker's store process beside a busy front worker).
PARENT = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'while 1: pass']); "
          "time.sleep(120)")


@pytest.fixture
def busy_child_parent() -> Iterator[sv.ProcInfo]:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], start_new_session=True)
    try:
        ps = psutil.Process(parent.pid)
        deadline = time.monotonic() + 10
        while not ps.children() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ps.children(), "the child never started"
        yield sv.ProcInfo("broker-a-0", "broker", "ASYNC_MASTER", 0, pid=parent.pid,
                          start_ticks=sv.start_ticks(parent.pid) or 0)
    finally:
        for child in psutil.Process(parent.pid).children(recursive=True):
            child.kill()
        parent.kill()
        parent.wait(timeout=10)


def test_usage_counts_the_children(busy_child_parent: sv.ProcInfo) -> None:
    ps = psutil.Process(busy_child_parent.pid)
    alive, cpu, rss = sv.usage(busy_child_parent)
    child = ps.children()[0]
    assert alive and cpu is not None and rss is not None
    assert cpu > 20  # the child spins; the parent alone sleeps (a loaded 2-core machine still gives it a fifth)
    assert rss >= ps.memory_info().rss + child.memory_info().rss // 2


def test_the_live_sampler_counts_the_children_and_says_unknown_on_first_sight(
        busy_child_parent: sv.ProcInfo, tmp_path: Path) -> None:
    save(tmp_path, busy_child_parent)
    sampler = ProcSampler(tmp_path)
    first = sampler.sample()[busy_child_parent.addr]
    assert first.alive and first.cpu_percent is None and first.open_files is not None
    time.sleep(0.3)
    second = sampler.sample()[busy_child_parent.addr]
    assert second.cpu_percent is not None and second.cpu_percent > 20
    assert second.open_files is not None and second.open_files > first.open_files // 2
