"""A cluster from `mq cluster up --preset P`, as a user brings one up: real processes on random ports.

`preset_cluster()` yields a PresetCluster and always runs `mq cluster down`; tests use it to signal,
stop and start single roles (failover and HA tests) and to reach the processes' addresses.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.adminsupport import mq
from support.ports import random_base_port


def mq_run(*args: str) -> subprocess.CompletedProcess[str]:
    return mq(*args, timeout=120.0)


@dataclass
class PresetCluster:
    state: Path
    namesrv: str
    rows: dict[str, dict[str, Any]]
    """`mq cluster status -o json` by process name, as of the last refresh()."""

    def refresh(self) -> dict[str, dict[str, Any]]:
        out = mq_run("cluster", "status", "--dir", str(self.state), "-o", "json")
        assert out.returncode == 0, out.stderr
        self.rows = {row["name"]: row for row in json.loads(out.stdout)}
        return self.rows

    def addr(self, name: str) -> str:
        return f"127.0.0.1:{self.rows[name]['port']}"

    def ha_addr(self, name: str) -> str:
        return f"127.0.0.1:{self.rows[name]['haPort']}"

    def signal(self, name: str, sig: int) -> None:
        os.kill(int(self.rows[name]["pid"]), sig)

    def pause(self, name: str) -> None:
        self.signal(name, signal.SIGSTOP)

    def resume(self, name: str) -> None:
        self.signal(name, signal.SIGCONT)

    def kill(self, name: str) -> None:
        """SIGKILL, and wait until the process is gone (the pid may be reused only after that)."""
        pid = int(self.rows[name]["pid"])
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not self.refresh()[name]["alive"], 20, f"{name} gone")

    def stop(self, name: str) -> None:
        out = mq_run("cluster", "stop", name, "--dir", str(self.state))
        assert out.returncode == 0, out.stdout + out.stderr
        self.refresh()

    def start(self, name: str) -> None:
        out = mq_run("cluster", "start", name, "--dir", str(self.state))
        assert out.returncode == 0, out.stdout + out.stderr
        self.refresh()


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, every: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(every)


@contextmanager
def preset_cluster(root: Path, preset: str = "2m-2s-async", *props: str, namesrvs: int = 1,
                   namesrv_props: tuple[str, ...] = (), proxies: int = 0,
                   proxy_props: tuple[str, ...] = ()) -> Iterator[PresetCluster]:
    """`mq cluster up --preset` on a random base port (ports.random_base_port), `props` for every broker
    and `namesrv_props` for every name server, with `proxies` gRPC proxies (proxy-0, ...) and `proxy_props` for
    each of them; always `cluster down`."""
    state = root / "cluster"
    sets = [arg for prop in props for arg in ("--set", prop)]
    sets += [arg for prop in namesrv_props for arg in ("--namesrv-set", prop)]
    sets += [arg for prop in proxy_props for arg in ("--proxy-set", prop)]
    sets += ["--proxies", str(proxies)] if proxies else []
    if namesrvs != 1:
        sets += ["--namesrv", str(namesrvs)]
    try:
        up = mq_run("cluster", "up", "--preset", preset, "--dir", str(state), "--base-port",
                    str(random_base_port()), *sets)
        assert up.returncode == 0, up.stdout + up.stderr
        namesrv = next(line.split("=", 1)[1] for line in up.stdout.splitlines() if line.startswith("NAMESRV_ADDR="))
        cluster = PresetCluster(state, namesrv, {})
        cluster.refresh()
        yield cluster
    finally:
        status = mq_run("cluster", "status", "--dir", str(state), "-o", "json")
        for row in json.loads(status.stdout) if status.returncode == 0 else []:
            if row.get("alive") and row.get("pid"):
                with suppress(ProcessLookupError):
                    os.kill(int(row["pid"]), signal.SIGCONT)  # a paused process must hear the SIGTERM
        mq_run("cluster", "down", "--dir", str(state), "--grace", "10")
