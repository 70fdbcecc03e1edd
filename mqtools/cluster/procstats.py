"""CPU, memory and open files of a local cluster's processes, for views that refresh every few seconds.

`supervisor.usage` samples CPU over a blocking 0.1 s; a live view instead keeps one psutil.Process
per process, so each call reads CPU used since the previous call and never sleeps. As there, a process's
figures include its descendants' (`supervisor.family`: a broker's front workers).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import psutil

from mqtools.cluster.supervisor import ClusterState, ClusterStateError, alive, family, load_state


@dataclass(frozen=True, slots=True)
class ProcSample:
    """One process of a local cluster; figures None while not running or not yet measured."""

    name: str
    pid: int
    alive: bool
    cpu_percent: float | None
    """Since the previous sample; None on the first one."""
    rss_bytes: int | None
    open_files: int | None
    """File descriptors held (sockets and mapped files included)."""


class ProcSampler:
    """Samples the processes of the cluster started in `state_dir`, keyed by listen address."""

    def __init__(self, state_dir: str | Path) -> None:
        self.state_dir = Path(state_dir)
        self._procs: dict[int, psutil.Process] = {}

    def state(self) -> ClusterState | None:
        """The state file, read each time: `mq cluster start/stop` change pids under a running view; None while it
        cannot be read (a view goes on without process figures)."""
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError, ClusterStateError):
            return load_state(self.state_dir)
        return None

    def sample(self) -> dict[str, ProcSample]:
        """listen address -> sample, for every process of the state file."""
        state = self.state()
        if state is None:
            return {}
        out: dict[str, ProcSample] = {}
        seen: dict[int, psutil.Process] = {}
        for info in state.procs:
            out[info.addr] = self._one(info.name, info.pid, alive(info), seen)
        self._procs = seen
        return out

    def _one(self, name: str, pid: int, ps: psutil.Process | None, seen: dict[int, psutil.Process]) -> ProcSample:
        """The process and its descendants together; CPU unknown (None) while any of them is new to this sampler,
        whose first reading measures nothing."""
        if ps is None:
            return ProcSample(name, pid, False, None, None, None)
        cpu, rss, fds, first = 0.0, 0, 0, False
        for i, found in enumerate(family(ps)):
            known = self._procs.get(found.pid)
            current = known if known is not None and known == found else found
            try:
                with current.oneshot():
                    used = current.cpu_percent(None)
                    size = current.memory_info().rss
                    files = current.num_fds() if hasattr(current, "num_fds") else len(current.open_files())
            except psutil.Error:
                if i == 0:
                    return ProcSample(name, pid, False, None, None, None)
                continue  # a descendant that ended meanwhile
            seen[found.pid] = current
            first = first or current is found
            cpu, rss, fds = cpu + used, rss + size, fds + files
        return ProcSample(name, pid, True, None if first else cpu, rss, fds)
