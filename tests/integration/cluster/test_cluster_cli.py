"""`mq cluster up/status/down/stop/start` with real processes, for every preset."""

from __future__ import annotations

import json
import os
import signal
import socket
from pathlib import Path

import psutil
import pytest
from support.adminsupport import mq_here
from support.ports import random_base_port

pytestmark = pytest.mark.integration

EXPECTED = {
    "2m-2s-async": {"broker-a": "ASYNC_MASTER", "broker-b": "ASYNC_MASTER", "broker-a-s": "SLAVE", "broker-b-s": "SLAVE"},
    "2m-2s-sync": {"broker-a": "SYNC_MASTER", "broker-b": "SYNC_MASTER", "broker-a-s": "SLAVE", "broker-b-s": "SLAVE"},
    "2m-noslave": {"broker-a": "ASYNC_MASTER", "broker-b": "ASYNC_MASTER"},
}


def base_port() -> int:
    """A random high base so that parallel runs and real RocketMQ defaults do not collide."""
    return random_base_port()


def status(state: Path) -> dict[str, dict]:
    out = mq_here("cluster", "status", "--dir", str(state), "-o", "json")
    assert out.returncode == 0, out.stderr
    return {row["name"]: row for row in json.loads(out.stdout)}


@pytest.mark.parametrize("preset", sorted(EXPECTED))
def test_up_status_down(preset: str, tmp_path: Path) -> None:
    state = tmp_path / "state"
    up = mq_here("cluster", "up", "--preset", preset, "--dir", str(state), "--namesrv", "2",
            "--base-port", str(base_port()), "--set", "mappedFileSizeCommitLog=1048576")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert "NAMESRV_ADDR=" in up.stdout
        rows = status(state)
        assert {n: r["role"] for n, r in rows.items() if r["kind"] == "broker"} == EXPECTED[preset]
        assert sum(1 for r in rows.values() if r["kind"] == "namesrv") == 2
        for row in rows.values():
            assert row["alive"] and row["registered"] and row["rssBytes"] > 0, row
            assert psutil.pid_exists(row["pid"])
            assert Path(row["log"]).exists()
            if row["role"] == "SLAVE":
                assert row["ha"]["activated"] is True
        table = mq_here("cluster", "status", "--dir", str(state))
        assert table.returncode == 0 and "REGISTERED" in table.stdout
    finally:
        down = mq_here("cluster", "down", "--dir", str(state), "--grace", "10")
    assert down.returncode == 0, down.stderr
    assert all(not r["alive"] for r in status(state).values())


def squat(ports: tuple[int, ...]) -> list[socket.socket] | None:
    """Listening sockets on all of `ports`, or None (and nothing held) when one is already in use."""
    held: list[socket.socket] = []
    try:
        for port in ports:
            sock = socket.socket()
            held.append(sock)
            sock.bind(("0.0.0.0", port))
            sock.listen()
    except OSError:
        for sock in held:
            sock.close()
        return None
    return held


def test_taken_ports_are_skipped_and_single_roles_stop_and_start(tmp_path: Path) -> None:
    state = tmp_path / "state"
    for _ in range(50):  # the random base may fall on ports another test's preset holds
        base = base_port()
        squatters = squat((base, base + 1035, base + 1036))  # the name server's and broker-a's default ports
        if squatters is not None:
            break
    else:
        pytest.fail("no base port whose name server and broker-a ports were all free")
    try:
        up = mq_here("cluster", "up", "--preset", "2m-2s-sync", "--dir", str(state), "--base-port", str(base))
        assert up.returncode == 0, up.stdout + up.stderr
        rows = status(state)
        used = {r["port"] for r in rows.values()} | {r["haPort"] for r in rows.values() if r["haPort"]}
        assert not used & {base, base + 1035, base + 1036}
        assert all(r["alive"] and r["registered"] for r in rows.values())

        again = mq_here("cluster", "up", "--preset", "2m-2s-sync", "--dir", str(state), "--base-port", str(base))
        assert again.returncode != 0 and "already running" in again.stderr

        stopped = mq_here("cluster", "stop", "broker-a", "--dir", str(state))
        assert stopped.returncode == 0 and "stopped" in stopped.stdout
        assert not status(state)["broker-a"]["alive"]
        started = mq_here("cluster", "start", "broker-a", "--dir", str(state))
        assert started.returncode == 0, started.stderr
        assert status(state)["broker-a"]["alive"]

        unknown = mq_here("cluster", "stop", "broker-z", "--dir", str(state))
        assert unknown.returncode != 0 and unknown.stderr.count("\n") == 1 and "broker-z" in unknown.stderr

        os.kill(status(state)["broker-b-s"]["pid"], signal.SIGSTOP)  # a paused slave: alive, answering nothing
        paused = status(state)["broker-b-s"]
        assert (paused["alive"], paused["state"], paused["ha"]) == (True, "stopped", None), paused
        row = next(line.split() for line in mq_here("cluster", "status", "--dir", str(state)).stdout.splitlines()
                   if line.startswith("broker-b-s "))
        assert (row[5], row[-1]) == ("stopped", "n/a"), row  # ALIVE, and replication not read
        # SIGCONT after SIGTERM: the paused slave stops within the grace, not killed after sitting it out
        down = mq_here("cluster", "down", "--dir", str(state), "--grace", "60")
        assert down.returncode == 0
        assert "broker-b-s: stopped" in down.stdout
        assert "broker-a: stopped" in down.stdout
        assert all(not r["alive"] for r in status(state).values())
    finally:
        for sock in squatters:
            sock.close()
        mq_here("cluster", "down", "--dir", str(state), "--grace", "10")


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    bad = mq_here("cluster", "up", "--preset", "3m-nothing", "--dir", str(tmp_path / "x"))
    assert bad.returncode != 0 and "unknown preset" in bad.stderr and bad.stderr.count("\n") == 1
    missing = mq_here("cluster", "status", "--dir", str(tmp_path / "none"))
    assert missing.returncode != 0 and "no cluster" in missing.stderr
