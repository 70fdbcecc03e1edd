"""Process supervision for local clusters: state dir, pid/log files, start/stop/inspect with psutil.

Layout of a state dir:
    cluster.json              what was started: preset, name servers, every process
    <name>/<name>.log         the process's stdout+stderr
    <name>/<name>.pid         its pid
    <name>/store/             a broker's storePathRootDir (a name server's kvConfig.json lives in <name>/)
    <name>/broker.properties  the broker's full config (preset + ports + name servers + overrides)
    <name>/namesrv.properties a name server's TLS keys (only with mq cluster up --tls)
    <name>/rmq-proxy.json     a proxy's config (mq cluster up --proxy)
    tls/                      the local CA and server certificate (only with mq cluster up --tls)
Processes run in their own session so they outlive the `mq cluster up` that started them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from mqtools.client import credentials
from mqtools.common.errors import ToolkitError
from mqtools.common.exitcodes import EXIT_REFUSED, EXIT_UNREACHABLE
from mqtools.common.security import ClientSecurity, TlsClientOptions

STATE_FILE = "cluster.json"
NAMESRV_ROLE = "NAMESRV"
"""ProcInfo.role of a name server; a broker's role is its BrokerRole value."""
CONTROLLED_ROLE = "CONTROLLED"
"""ProcInfo.role of a broker in controller mode: its controllers decide whether it is master."""
PROXY_ROLE = "PROXY"
"""ProcInfo.role of a gRPC proxy (`mq proxy start`, cluster mode); its port is the gRPC port."""


class LaunchError(ToolkitError, RuntimeError):
    """A process did not come up; the message says which and where its log is."""

    exit_code = EXIT_UNREACHABLE


class ClusterStateError(LaunchError):
    """The state dir refuses the request: a cluster already running there, none there, no such process."""

    exit_code = EXIT_REFUSED


@dataclass
class ProcInfo:
    """One supervised process (name server, broker or proxy)."""

    name: str
    kind: str  # "namesrv" | "broker" | "proxy"
    role: str  # NAMESRV_ROLE, PROXY_ROLE or a BrokerRole value
    port: int
    ha_port: int = 0
    broker_name: str = ""
    broker_id: int = -1
    args: list[str] = field(default_factory=list)
    pid: int = 0
    create_time: float = 0.0
    """Its start in seconds since the epoch: how a state file written before start_ticks identifies it."""
    start_ticks: int = 0
    """Its start in clock ticks since boot (/proc/PID/stat): what tells it from a later process given the
    same pid. A start in wall-clock seconds moves when the clock is stepped (psutil adds /proc/stat's btime,
    which moves with it), and then a running process would look gone: no pid in `status`, left running by
    `down`, nothing for a drill to kill."""
    host: str = "127.0.0.1"
    netns: str = ""
    """The network namespace it runs in (mq cluster up --netns); empty: the root namespace."""
    remoting_port: int = 0
    """A proxy's remoting port (remotingListenPort), where tools ask about its gRPC clients; 0: none."""

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass
class ClusterState:
    preset: str
    namesrv_addr: str
    procs: list[ProcInfo]
    tls_ca: str | None = None
    """With --tls: the CA file that signs every process's certificate (what clients must trust)."""
    controller_addr: str | None = None
    """Controller presets: the controllers' addresses (brokers' controllerAddr), ';'-separated."""
    netns_tag: int | None = None
    """mq cluster up --netns: the tag of its namespaces' layout (mqtools.cluster.netns.Layout)."""

    def security(self) -> ClientSecurity | None:
        """What a client of this cluster needs: TLS verified against the cluster's CA, when it has one, and
        the environment's ACL credentials (MQ_ACCESS_KEY/MQ_SECRET_KEY) for a cluster with aclEnable=true."""
        tls = TlsClientOptions(self.tls_ca) if self.tls_ca else None
        creds = credentials.from_env()
        return ClientSecurity(creds, tls) if tls is not None or creds is not None else None

    def find(self, name: str) -> ProcInfo | None:
        return next((p for p in self.procs if p.name == name), None)


def state_path(root: Path) -> Path:
    return root / STATE_FILE


def save_state(root: Path, state: ClusterState) -> None:
    root.mkdir(parents=True, exist_ok=True)
    tmp = state_path(root).with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=2))
    os.replace(tmp, state_path(root))


def load_state(root: Path) -> ClusterState | None:
    path = state_path(root)
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    return ClusterState(raw["preset"], raw["namesrv_addr"], [ProcInfo(**p) for p in raw["procs"]], raw.get("tls_ca"),
                        raw.get("controller_addr"), raw.get("netns_tag"))


def log_path(root: Path, name: str) -> Path:
    return root / name / f"{name}.log"


def pid_path(root: Path, name: str) -> Path:
    return root / name / f"{name}.pid"


# ---------------------------------------------------------------------------- ports


def port_free(port: int) -> bool:
    """True when nothing listens on `port` (checked the way our servers bind: all interfaces)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def pick_ports(preferred: int, count: int, taken: set[int], step: int = 1, limit: int = 2000) -> int:
    """First base >= preferred where base..base+count-1 are all free and not already handed out."""
    base = preferred
    for _ in range(limit):
        wanted = range(base, base + count)
        if base + count <= 65535 and all(p not in taken and port_free(p) for p in wanted):
            taken.update(wanted)
            return base
        base += step
    raise LaunchError(f"no free ports near {preferred}")


# ---------------------------------------------------------------------------- processes


def mq_command() -> list[str]:
    return [sys.executable, "-m", "mqtools.cli.main"]


def start_ticks(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot (field 22 of /proc/PID/stat); None where there is no
    such file."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return int(stat[stat.rindex(b")") + 2:].split()[19])  # after "pid (comm) ": field 3 onwards


def alive(proc: ProcInfo) -> psutil.Process | None:
    """The running process for `proc`, or None (a reused pid with another start time is not it)."""
    if proc.pid <= 0:
        return None
    try:
        ps = psutil.Process(proc.pid)
        ticks = start_ticks(proc.pid) if proc.start_ticks else None
        same = ticks == proc.start_ticks if ticks is not None else abs(ps.create_time() - proc.create_time) <= 1.0
        if not same or ps.status() == psutil.STATUS_ZOMBIE:
            return None
        return ps
    except psutil.Error:
        return None


def spawn(root: Path, proc: ProcInfo, env: dict[str, str] | None = None) -> None:
    """Start `proc` detached, stdout+stderr appended to its log file; record pid and start time."""
    log = log_path(root, proc.name)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        _log_starts[proc.name] = out.tell()
        out.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting {proc.name}\n".encode())
        out.flush()
        netns = ["ip", "netns", "exec", proc.netns] if proc.netns else []
        child = subprocess.Popen(
            [*netns, *mq_command(), *proc.args], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            cwd=str(root / proc.name))
    proc.pid = child.pid
    try:
        proc.create_time = psutil.Process(child.pid).create_time()
    except psutil.Error:
        proc.create_time = 0.0
    proc.start_ticks = start_ticks(child.pid) or 0
    pid_path(root, proc.name).write_text(f"{child.pid}\n")
    _children[child.pid] = child


_children: dict[int, subprocess.Popen[bytes]] = {}
_log_starts: dict[str, int] = {}  # where this run's part of each log file begins


def _reap(pid: int) -> None:
    child = _children.get(pid)
    if child is not None and child.poll() is not None:
        _children.pop(pid, None)


def wait_ready(root: Path, proc: ProcInfo, timeout: float) -> str:
    """Wait for the READY line this start wrote to the log; raise with the log tail if it dies."""
    log = log_path(root, proc.name)
    start = _log_starts.get(proc.name, 0)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log, "rb") as fh:
            fh.seek(start)
            current = fh.read().decode(errors="replace")
        for line in current.splitlines():
            if line.startswith(f"READY {proc.kind} "):
                return line
        _reap(proc.pid)
        if alive(proc) is None:
            break
        time.sleep(0.05)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:]) if log.exists() else ""
    stop(proc, grace=2.0)
    raise LaunchError(f"{proc.name} did not become ready (log {log}):\n{tail}")


def _gone(ps: psutil.Process) -> bool:
    """Exited: no such process, or a zombie waiting for whoever inherited it to reap it."""
    try:
        return ps.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def _wait_gone(ps: psutil.Process, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not _gone(ps):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def stop(proc: ProcInfo, grace: float = 15.0) -> str:
    """SIGTERM, wait `grace` seconds, then SIGKILL. Returns what happened."""
    ps = alive(proc)
    if ps is None:
        return "not running"
    with contextlib.suppress(psutil.Error):
        ps.send_signal(signal.SIGTERM)
    how = "stopped"
    if not _wait_gone(ps, grace):
        with contextlib.suppress(psutil.Error):
            ps.kill()
        _wait_gone(ps, 5.0)
        how = "killed after grace period"
    _reap(proc.pid)
    return how


def usage(proc: ProcInfo) -> tuple[bool, float | None, int | None]:
    """(alive, cpu percent over a short sample, rss bytes)."""
    ps = alive(proc)
    if ps is None:
        return False, None, None
    try:
        with ps.oneshot():
            return True, ps.cpu_percent(interval=0.1), ps.memory_info().rss
    except psutil.Error:
        return False, None, None
