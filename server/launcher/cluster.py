"""Local multi-process clusters: bring a preset up, inspect it, stop/start single roles, tear down.

Every role is its own OS process (`mq namesrv start` / `mq broker start -c ...`) supervised
through the state dir (see supervisor.py).  Masters start before slaves so that a slave's
first registration already returns its master's HA address.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mqtools.server.launcher import supervisor as sv
from mqtools.server.launcher.presets import load_preset
from mqtools.server.launcher.supervisor import ClusterState, LaunchError, ProcInfo

from mqtools.common.javaprops import render_properties
from mqtools.remoting.bodies import ClusterInfo
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingError

DEFAULT_BASE_PORT = 9876
BROKER_PORT_OFFSET = 10911 - DEFAULT_BASE_PORT  # the first broker gets RocketMQ's 10911
BROKER_PORT_STEP = 10


def default_state_dir() -> Path:
    """<user data dir>/mq/cluster (platformdirs when present, else XDG_DATA_HOME or ~/.local/share)."""
    try:
        import platformdirs
    except ImportError:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "mq"
    else:
        base = Path(platformdirs.user_data_dir("mq"))
    return base / "cluster"


@dataclass
class UpOptions:
    preset: str
    root: Path
    namesrv_count: int = 1
    base_port: int = DEFAULT_BASE_PORT
    overrides: dict[str, str] | None = None
    timeout: float = 60.0


def plan(opts: UpOptions) -> ClusterState:
    """Choose names, ports and command lines for every process of the preset."""
    specs = load_preset(opts.preset)
    taken: set[int] = set()
    namesrvs = []
    for i in range(opts.namesrv_count):
        port = sv.pick_ports(opts.base_port + i, 1, taken)
        name = f"namesrv-{i}"
        namesrvs.append(ProcInfo(name, "namesrv", "NAMESRV", port, args=[
            "namesrv", "start", "--listen-port", str(port), "--store-dir", str(opts.root / name)]))
    namesrv_addr = ";".join(p.addr for p in namesrvs)
    brokers = []
    for i, spec in enumerate(specs):
        port = sv.pick_ports(opts.base_port + BROKER_PORT_OFFSET + BROKER_PORT_STEP * i, 2, taken,
                             step=BROKER_PORT_STEP)
        brokers.append(ProcInfo(spec.name, "broker", spec.role, port, port + 1, spec.broker_name,
                                spec.broker_id))
    state = ClusterState(opts.preset, namesrv_addr, [*namesrvs, *brokers])
    for broker, spec in zip(brokers, specs, strict=True):
        props = {**spec.props, "listenPort": str(broker.port), "haListenPort": str(broker.ha_port),
                 "namesrvAddr": namesrv_addr, "brokerIP1": "127.0.0.1",
                 "storePathRootDir": str(opts.root / broker.name / "store"), **(opts.overrides or {})}
        config = opts.root / broker.name / "broker.properties"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(render_properties(props))
        broker.args = ["broker", "start", "-c", str(config)]
    return state


def up(opts: UpOptions, progress: Callable[[str], None] = lambda _: None) -> ClusterState:
    """Start every role, wait for registration and replication; on failure stop what started."""
    existing = sv.load_state(opts.root)
    if existing is not None and any(sv.alive(p) for p in existing.procs):
        raise LaunchError(f"a cluster is already running in {opts.root} (mq cluster down --dir {opts.root})")
    state = plan(opts)
    deadline = time.monotonic() + opts.timeout
    try:
        for proc in state.procs:  # name servers, then masters, then slaves (plan order)
            sv.spawn(opts.root, proc)
            sv.save_state(opts.root, state)
            sv.wait_ready(opts.root, proc, max(1.0, deadline - time.monotonic()))
            progress(f"started {proc.name} ({proc.role}) pid {proc.pid} on {proc.addr}")
        asyncio.run(wait_healthy(state, deadline))
    except BaseException:
        for proc in reversed(state.procs):
            sv.stop(proc, grace=5.0)
        raise
    return state


async def wait_healthy(state: ClusterState, deadline: float) -> None:
    """Until every broker is in the name servers' cluster info and every slave replicates."""
    client = RemotingClient(state.namesrv_addr.split(";"))
    try:
        while True:
            facts = await collect(client, state)
            missing = [p.name for p in state.procs if p.kind == "broker" and not facts[p.name]["registered"]]
            idle = [p.name for p in state.procs if p.role == "SLAVE" and not facts[p.name]["replicating"]]
            if not missing and not idle:
                return
            if time.monotonic() > deadline:
                raise LaunchError(f"not healthy in time: unregistered {missing or '-'}, not replicating {idle or '-'}")
            await asyncio.sleep(0.2)
    finally:
        await client.close()


async def _invoke(client: RemotingClient, addr: str, code: int, timeout: float = 2.0) -> RemotingCommand | None:
    try:
        return await client.invoke(addr, RemotingCommand.request(code), timeout)
    except (RemotingError, OSError, TimeoutError):
        return None


async def collect(client: RemotingClient, state: ClusterState) -> dict[str, dict[str, Any]]:
    """Per process: registered (in any name server's cluster info) and, for brokers, HA facts."""
    registered: dict[str, set[str]] = {}
    for proc in state.procs:
        if proc.kind != "namesrv":
            continue
        resp = await _invoke(client, proc.addr, RequestCode.GET_BROKER_CLUSTER_INFO)
        if resp is None or resp.code != ResponseCode.SUCCESS or not resp.body:
            continue
        for name, data in ClusterInfo.from_json(resp.body).broker_addr_table.items():
            registered.setdefault(name, set()).update(data.broker_addrs.values())
    facts: dict[str, dict[str, Any]] = {}
    for proc in state.procs:
        entry: dict[str, Any] = {"registered": proc.kind == "namesrv" or proc.addr in registered.get(proc.broker_name, ())}
        if proc.kind == "broker":
            entry.update(await _ha_facts(client, proc))
        facts[proc.name] = entry
    return facts


async def _ha_facts(client: RemotingClient, proc: ProcInfo) -> dict[str, Any]:
    resp = await _invoke(client, proc.addr, RequestCode.GET_BROKER_HA_STATUS)
    if resp is None or resp.code != ResponseCode.SUCCESS or not resp.body:
        return {"replicating": False, "ha": None}
    info = json.loads(resp.body)
    if proc.role == "SLAVE":
        client_info = info.get("haClientRuntimeInfo") or {}
        return {"replicating": bool(client_info.get("activated")), "ha": client_info}
    return {"replicating": False, "ha": {"slaves": len(info.get("haConnectionInfo") or []),
                                          "inSyncSlaveNums": info.get("inSyncSlaveNums")}}


def status(root: Path) -> list[dict[str, Any]]:
    """One row per process: pid, role, ports, alive, CPU/RSS, registered, HA facts."""
    state = _require(root)
    facts = asyncio.run(_collect_once(state))
    rows = []
    for proc in state.procs:
        is_alive, cpu, rss = sv.usage(proc)
        fact = facts.get(proc.name, {})
        rows.append({
            "name": proc.name, "kind": proc.kind, "role": proc.role, "pid": proc.pid if is_alive else None,
            "port": proc.port, "haPort": proc.ha_port or None, "brokerName": proc.broker_name or None,
            "brokerId": proc.broker_id if proc.kind == "broker" else None, "alive": is_alive,
            "cpuPercent": cpu, "rssBytes": rss,
            "registered": bool(fact.get("registered")) if is_alive else False,
            "ha": fact.get("ha") if is_alive else None,
            "log": str(sv.log_path(root, proc.name)),
        })
    return rows


async def _collect_once(state: ClusterState) -> dict[str, dict[str, Any]]:
    client = RemotingClient(state.namesrv_addr.split(";"))
    try:
        return await collect(client, state)
    finally:
        await client.close()


def down(root: Path, grace: float = 15.0) -> list[tuple[str, str]]:
    """Stop slaves, then masters, then name servers; returns (name, what happened)."""
    state = _require(root)
    order = sorted(state.procs, key=lambda p: {"SLAVE": 0, "NAMESRV": 2}.get(p.role, 1))
    return [(proc.name, sv.stop(proc, grace)) for proc in order]


def stop_one(root: Path, name: str, grace: float = 15.0) -> str:
    state = _require(root)
    return sv.stop(_proc(state, name), grace)


def start_one(root: Path, name: str, timeout: float = 30.0) -> ProcInfo:
    """Restart one role with its recorded command line (same ports, same store)."""
    state = _require(root)
    proc = _proc(state, name)
    if sv.alive(proc):
        raise LaunchError(f"{name} is already running (pid {proc.pid})")
    sv.spawn(root, proc)
    sv.save_state(root, state)
    sv.wait_ready(root, proc, timeout)
    return proc


def _require(root: Path) -> ClusterState:
    state = sv.load_state(root)
    if state is None:
        raise LaunchError(f"no cluster in {root} (start one with mq cluster up)")
    return state


def _proc(state: ClusterState, name: str) -> ProcInfo:
    proc = state.find(name)
    if proc is None:
        raise LaunchError(f"no process named {name!r} (known: {', '.join(p.name for p in state.procs)})")
    return proc
