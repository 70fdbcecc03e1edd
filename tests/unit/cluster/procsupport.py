"""Stand-ins for a local cluster's processes: a sleeping Python whose command line reads like `mq` run for a node of
a state dir (as supervisor.spawn starts one: its own session), and a cluster.json that records them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from mqtools.cluster import supervisor as sv

SLEEP = "import time; time.sleep(120)"


def _await_exec(pid: int, arg: str, timeout: float = 10.0) -> None:
    """Until the child runs as its command line says and leads its session, as `down`'s pid-file check reads it
    (a CI run once found no process of the dir there; the cause is not known, a child seen early is one guess)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if arg in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace") and os.getsid(pid) == pid:
                return
        time.sleep(0.01)
    raise AssertionError(f"pid {pid} never ran with {arg} in its command line")


class Procs:
    """The processes a test started; every one is killed and reaped at the end."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[bytes]] = []

    def mq_node(self, root: Path, name: str, kind: str = "broker", role: str = "ASYNC_MASTER") -> sv.ProcInfo:
        """A process whose command line is `python -c SLEEP -m mqtools.cli.main <kind> start -c <root>/<name>/...`."""
        (root / name).mkdir(parents=True, exist_ok=True)
        config = root / name / ("broker.properties" if kind == "broker" else "namesrv.properties")
        child = subprocess.Popen([sys.executable, "-c", SLEEP, "-m", "mqtools.cli.main", kind, "start", "-c",
                                  str(config)], start_new_session=True)
        self.started.append(child)
        _await_exec(child.pid, str(config))
        sv.pid_path(root, name).write_text(f"{child.pid}\n")
        return sv.ProcInfo(name, kind, role, 0, pid=child.pid, start_ticks=sv.start_ticks(child.pid) or 0)

    def other(self) -> subprocess.Popen[bytes]:
        """A process that is no node of any state dir (a pid reused by someone else)."""
        child = subprocess.Popen(["sleep", "120"], start_new_session=True)
        self.started.append(child)
        return child

    def close(self) -> None:
        for child in self.started:
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signal.SIGCONT)
                child.kill()
            child.wait(timeout=10)


@contextlib.contextmanager
def processes() -> Iterator[Procs]:
    procs = Procs()
    try:
        yield procs
    finally:
        procs.close()


def save(root: Path, *procs: sv.ProcInfo, namesrv: str = "127.0.0.1:1") -> sv.ClusterState:
    state = sv.ClusterState("2m-2s-async", namesrv, list(procs))
    sv.save_state(root, state)
    return state


def state_of(pid: int) -> str:
    """/proc/PID/stat's state letter (T: stopped, Z: zombie)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0]
