"""Process supervision for local clusters: state dir, pid/log files, start/stop/inspect with psutil.

Layout of a state dir:
    cluster.json              what was started: preset, name servers, every process
    <name>/<name>.log         the process's stdout+stderr
    <name>/<name>.pid         its pid (what `mq cluster down` falls back to when cluster.json is gone or unreadable)
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
from mqtools.common.javaprops import parse_properties
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


class StateFileError(ClusterStateError):
    """cluster.json is there but cannot be read (truncated, not JSON, not a cluster's): one line naming it, where a
    traceback was; `mq cluster down` falls back to the pid files."""


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
    """The state file's cluster; None when there is none; StateFileError when it cannot be read."""
    path = state_path(root)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StateFileError(f"cannot read {path}: {exc}") from None
    try:
        raw = json.loads(text)
        return ClusterState(raw["preset"], raw["namesrv_addr"], [ProcInfo(**p) for p in raw["procs"]],
                            raw.get("tls_ca"), raw.get("controller_addr"), raw.get("netns_tag"))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        why = f"no {exc}" if isinstance(exc, KeyError) else str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise StateFileError(f"{path} is not a readable cluster state ({why}); mq cluster down --dir {root} stops "
                             "the processes its pid files name") from None


def log_path(root: Path, name: str) -> Path:
    return root / name / f"{name}.log"


def pid_path(root: Path, name: str) -> Path:
    return root / name / f"{name}.pid"


def pid_file_procs(root: Path) -> list[ProcInfo]:
    """The running processes the pid files under `root` name: what `down` stops when cluster.json is gone or
    unreadable. A pid counts only when /proc/PID/cmdline is `mq` run with a path under <root>/<name>/ (a broker's
    -c, a name server's --store-dir, a proxy's -c) and the process leads its own session, as spawn starts it: a pid
    since reused by anything else is left alone. (A pid file holds only the pid, as pid files do, so there are no
    start ticks to compare, as there are in cluster.json.)"""
    found = []
    for pid_file in sorted(root.glob("*/*.pid")):
        name = pid_file.parent.name
        if pid_file.name != f"{name}.pid":
            continue
        try:
            pid = int(pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        args = _mq_args(pid, root / name)
        if args is None:
            continue
        kind = args[0] if args and args[0] in ("namesrv", "broker", "proxy") else "broker"
        found.append(ProcInfo(name, kind, _recorded_role(root, name, kind), 0, pid=pid,
                              start_ticks=start_ticks(pid) or 0))
    return found


def _mq_args(pid: int, home: Path) -> list[str] | None:
    """`pid`'s arguments after `-m mqtools.cli.main`, when it is an `mq` process of `home` that leads its session."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        if os.getsid(pid) != pid:
            return None
    except OSError:
        return None
    module = mq_command()[-1]
    if module not in argv:
        return None
    args = argv[argv.index(module) + 1:]
    mine = str(home)
    return args if any(a == mine or a.startswith(mine + os.sep) for a in args) else None


def _recorded_role(root: Path, name: str, kind: str) -> str:
    """The role its config gives a process found through its pid file (down's order: slaves before masters)."""
    if kind != "broker":
        return PROXY_ROLE if kind == "proxy" else NAMESRV_ROLE
    try:
        props = parse_properties((root / name / "broker.properties").read_text())
    except OSError:
        return "ASYNC_MASTER"
    if props.get("enableControllerMode", "").lower() == "true":
        return CONTROLLED_ROLE
    return props.get("brokerRole", "ASYNC_MASTER").upper()


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


STOPPED = "stopped"
"""run_state of a process that exists but does not run: SIGSTOPped (a pause drill) or stopped by a tracer."""


def run_state(proc: ProcInfo) -> str:
    """"running", STOPPED, or "exited" (no such process, or not the one recorded)."""
    ps = alive(proc)
    if ps is None:
        return "exited"
    try:
        status = ps.status()
    except psutil.Error:
        return "exited"
    return STOPPED if status in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP) else "running"


def spawn(root: Path, proc: ProcInfo, env: dict[str, str] | None = None) -> None:
    """Start `proc` detached, stdout+stderr appended to its log file; record pid and start time."""
    log = log_path(root, proc.name)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        _log_starts[str(log)] = out.tell()
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
_log_starts: dict[str, int] = {}  # log file -> where this start's part of it begins


def _reap(pid: int) -> None:
    child = _children.get(pid)
    if child is not None and child.poll() is not None:
        _children.pop(pid, None)


def wait_ready(root: Path, proc: ProcInfo, timeout: float) -> str:
    """Wait for the READY line this start wrote to the log; raise with the log tail if it dies."""
    log = log_path(root, proc.name)
    start = _log_starts.get(str(log), 0)
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
    died = alive(proc) is None
    stop(proc, grace=2.0)
    raise LaunchError(not_ready(proc.name, log, start, None if died else timeout))


ERROR_PREFIX = "mq: error: "


def not_ready(name: str, log: Path, start: int, timeout: float | None) -> str:
    """Why `name` did not come up, from this start's part of its log (from `start`, not earlier runs' lines): its
    `mq: error:` line first (else its last line), then up to 15 lines of that part; `timeout` when it still ran."""
    try:
        with open(log, "rb") as fh:
            fh.seek(start)
            this = fh.read().decode(errors="replace")
    except OSError:
        this = ""
    lines = [line for line in this.splitlines() if line.strip() and not line.startswith("--- ")]
    error = next((line[len(ERROR_PREFIX):] for line in reversed(lines) if line.startswith(ERROR_PREFIX)), None)
    lead = error or (f"no READY line within {timeout:g}s" if timeout is not None else
                     lines[-1] if lines else "it exited without a word")
    tail = lines[-15:]
    body = "" if tail in ([], [f"{ERROR_PREFIX}{error}"]) else "\n" + "\n".join(tail)
    return f"{name} did not become ready: {lead} (log {log}){body}"


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


KILL_WAIT = 5.0
"""Seconds a SIGKILLed process has to be gone before stop says it is still running."""
SURVIVED = "still running"
"""How stop's answer begins when the process outlived SIGKILL (uninterruptible sleep, a hung disk or NFS)."""


def stop(proc: ProcInfo, grace: float = 15.0) -> str:
    """SIGTERM and SIGCONT, wait `grace` seconds, then SIGKILL. Returns what happened. The SIGCONT (as systemd
    sends) lets a SIGSTOPped process act on the SIGTERM, instead of sitting out the grace period to be killed."""
    ps = alive(proc)
    if ps is None:
        return "not running"
    with contextlib.suppress(psutil.Error):
        ps.send_signal(signal.SIGTERM)
        ps.send_signal(signal.SIGCONT)
    how = "stopped"
    if not _wait_gone(ps, grace):
        with contextlib.suppress(psutil.Error):
            ps.kill()
        if not _wait_gone(ps, KILL_WAIT):
            return f"{SURVIVED} {KILL_WAIT:g}s after SIGKILL (pid {proc.pid}, {_status(ps)})"
        how = "killed after grace period"
    _reap(proc.pid)
    return how


def _status(ps: psutil.Process) -> str:
    try:
        return f"state {ps.status()}"
    except psutil.Error:
        return "state unknown"


def family(ps: psutil.Process) -> list[psutil.Process]:
    """A process and its descendants: a broker's front workers, the JVM a launcher script started. What one of a
    cluster's processes costs the machine is theirs together."""
    try:
        return [ps, *ps.children(recursive=True)]
    except psutil.Error:
        return [ps]


def usage(proc: ProcInfo) -> tuple[bool, float | None, int | None]:
    """(alive, cpu percent over a short sample, rss bytes), of the process with its descendants (`family`); a
    descendant that ends during the sample is left out."""
    ps = alive(proc)
    if ps is None:
        return False, None, None
    procs = family(ps)
    try:
        ps.cpu_percent(None)
    except psutil.Error:
        return False, None, None
    for child in procs[1:]:
        with contextlib.suppress(psutil.Error):
            child.cpu_percent(None)
    time.sleep(0.1)
    cpu, rss = 0.0, 0
    for i, p in enumerate(procs):
        try:
            with p.oneshot():
                cpu += p.cpu_percent(None)
                rss += p.memory_info().rss
        except psutil.Error:
            if i == 0:
                return False, None, None
    return True, cpu, rss
