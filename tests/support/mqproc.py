"""Start real `mq` server processes for integration and compat tests.

Every server role prints one line `READY <role> <host>:<port> [key=value ...]` on stdout
once it listens; with port 0 the OS picks a free port and that line says which.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

READY = re.compile(r"^READY (\S+) (\S+):(\d+)(.*)$")


@dataclass
class MqProcess:
    args: list[str]
    proc: subprocess.Popen
    role: str
    host: str
    port: int
    extra: dict[str, str]
    lines: list[str] = field(default_factory=list)

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM and wait; SIGKILL when it does not go in time."""
        self.signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.proc.wait(5)

    def output(self) -> str:
        return "\n".join(self.lines)


def mq_command() -> list[str]:
    return [sys.executable, "-m", "mqtools.cli.main"]


def start_mq(args: list[str], *, timeout: float = 20.0, env: dict[str, str] | None = None,
             cwd: Path | None = None, prefix: Sequence[str] = ()) -> MqProcess:
    """Run `mq <args>` (after `prefix`: `ip netns exec NS` runs it in a network namespace) and wait for its
    READY line; raise with its output if it never comes."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    proc = subprocess.Popen(
        [*prefix, *mq_command(), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=full_env, cwd=cwd,
    )
    lines: list[str] = []
    ready: list[re.Match] = []
    got = threading.Event()

    def pump() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            line = line.rstrip("\n")
            lines.append(line)
            match = READY.match(line)
            if match and not ready:
                ready.append(match)
                got.set()
        got.set()

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout
    while not ready and time.monotonic() < deadline and proc.poll() is None:
        got.wait(0.05)
    if not ready:
        proc.kill()
        proc.wait(5)
        raise RuntimeError(f"mq {' '.join(args)} did not become ready:\n" + "\n".join(lines))
    match = ready[0]
    extra = dict(kv.split("=", 1) for kv in match.group(4).split() if "=" in kv)
    return MqProcess(args, proc, match.group(1), match.group(2), int(match.group(3)), extra, lines)


DELAY_LEVELS_FAST = "1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 11s 12s 13s 14s 15s 16s 17s 18s"


def start_namesrv(workdir: Path) -> MqProcess:
    """A name server on an ephemeral port with its KV file under `workdir`."""
    return start_mq(["namesrv", "start", "--listen-port", "0", "--store-dir", str(workdir / "namesrv")])


def write_broker_props(path: Path, namesrv: str, store: Path, **props: str) -> Path:
    """A broker.properties for tests: ephemeral port, small commitlog files, fast delay levels."""
    lines = {
        "brokerClusterName": "TestCluster", "brokerName": "broker-a", "brokerId": "0", "listenPort": "0",
        "namesrvAddr": namesrv, "storePathRootDir": str(store), "brokerIP1": "127.0.0.1",
        "mappedFileSizeCommitLog": str(8 * 1024 * 1024), "messageDelayLevel": DELAY_LEVELS_FAST,
    }
    lines.update(props)
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    return path


def start_broker(workdir: Path, namesrv: str, name: str = "broker-a", **props: str) -> MqProcess:
    """A broker process named `name` whose store lives in `workdir/<name>`."""
    props.setdefault("brokerName", name)
    conf = write_broker_props(workdir / f"{name}.properties", namesrv, workdir / name, **props)
    return start_mq(["broker", "start", "-c", str(conf)], timeout=30)


def start_proxy(workdir: Path, cluster_name: str, namesrv: str, **settings: object) -> MqProcess:
    """`mq proxy start` in cluster mode on ephemeral ports, with an rmq-proxy.json of Apache's keys (`settings`
    over the cluster's name and name server) written under `workdir`."""
    conf = workdir / "rmq-proxy.json"
    conf.write_text(json.dumps({"rocketMQClusterName": cluster_name, "namesrvAddr": namesrv, "grpcServerPort": 0,
                                "remotingListenPort": 0, **settings}))
    return start_mq(["proxy", "start", "-c", str(conf), "--host", "127.0.0.1"], timeout=60)


def connected(pid: int, port: int) -> bool:
    """Whether process `pid` holds an established connection to local `port` (a command asking that server)."""
    return any(c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
               for c in psutil.Process(pid).net_connections("tcp"))
