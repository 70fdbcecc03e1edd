"""Local multi-process clusters: bring a preset up, inspect it, stop/start single roles, tear down.

Every role is its own OS process (`mq namesrv start` / `mq broker start -c ...`) supervised
through the state dir (mqtools.cluster.supervisor); health is read through MQAdmin (mqtools.cluster.health).  Masters start before slaves so that a slave's
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

from mqtools.cluster import netns
from mqtools.cluster import supervisor as sv
from mqtools.cluster.certs import LocalCertificates, make_local_certificates
from mqtools.cluster.health import ProcHealth, collect_once, controlled_masters, wait_healthy
from mqtools.cluster.presets import load_namesrv_spec, load_preset
from mqtools.cluster.supervisor import (
    CONTROLLED_ROLE,
    NAMESRV_ROLE,
    PROXY_ROLE,
    ClusterState,
    LaunchError,
    ProcInfo,
)
from mqtools.common import tls as keys
from mqtools.common.brokerrole import VIP_CHANNEL_OFFSET, BrokerRole
from mqtools.common.javaprops import render_properties

DEFAULT_BASE_PORT = 9876
BROKER_PORT_OFFSET = 10911 - DEFAULT_BASE_PORT  # the first broker gets RocketMQ's 10911
BROKER_PORT_STEP = 10
#: Controllers inside the name servers (controller presets) listen from base port + 100.
CONTROLLER_PORT_OFFSET = 100
#: A proxy's gRPC port: the first gets Apache's grpcServerPort 8081 with the default base port.
PROXY_PORT_OFFSET = 8081 - DEFAULT_BASE_PORT
#: Broker properties a proxy of the cluster takes over (its authentication and authorization follow the brokers').
#: (Not authenticationWhitelist: the brokers' lists remoting codes, the proxy's gRPC request names.)
_PROXY_KEYS_FROM_BROKERS = ("brokerClusterName", "maxMessageSize", "authenticationEnabled", "authorizationEnabled",
                            "innerClientAuthenticationCredentials")


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
    tls: bool = False
    """Make a local CA and run every port (remoting and HA) in TLS enforcing mode."""
    netns: bool = False
    """Run every process in a network namespace of its own (root only), so drills can partition them."""
    namesrv_overrides: dict[str, str] | None = None
    """Extra name server properties (`--namesrv-set`), over the preset's namesrv.properties."""
    proxies: int = 0
    """gRPC proxies (`mq proxy start`, cluster mode) on the cluster's name servers, started after the brokers."""
    proxy_overrides: dict[str, str] | None = None
    """Extra proxy keys (`--proxy-set`), over what the launcher writes in each proxy's rmq-proxy.json."""


def tls_properties(certs: LocalCertificates) -> dict[str, str]:
    """RocketMQ's tls.* keys for a process of a --tls cluster: enforcing on its ports, and TLS with
    the cluster's CA (verified) on its own connections (registration, HA, broker to broker)."""
    return {keys.TLS_SERVER_MODE: keys.TlsMode.ENFORCING.value, keys.TLS_SERVER_CERTPATH: str(certs.cert),
            keys.TLS_SERVER_KEYPATH: str(certs.key), keys.TLS_ENABLE: "true",
            keys.TLS_CLIENT_TRUSTCERTPATH: str(certs.ca), keys.TLS_CLIENT_AUTHSERVER: "true"}


def plan(opts: UpOptions) -> ClusterState:
    """Choose names, ports and command lines for every process of the preset."""
    specs = load_preset(opts.preset)
    ns_spec = load_namesrv_spec(opts.preset)
    certs = make_local_certificates(opts.root / "tls") if opts.tls else None
    secured = tls_properties(certs) if certs is not None else {}
    taken: set[int] = set()
    count = ns_spec.count or opts.namesrv_count
    layout = netns.Layout(opts.base_port) if opts.netns else None

    def place(k: int) -> tuple[str, str]:
        """(host, namespace) of process k: its own namespace with --netns, else the loopback."""
        return (layout.host(k), layout.namespace(k)) if layout is not None else ("127.0.0.1", "")

    ports = [sv.pick_ports(opts.base_port + i, 1, taken) for i in range(count)]
    controllers = _controller_peers(opts.base_port, [place(i)[0] for i in range(count)], taken) \
        if ns_spec.with_controller else {}
    namesrvs = []
    for i, port in enumerate(ports):
        name = f"namesrv-{i}"
        args = ["namesrv", "start", "--listen-port", str(port), "--store-dir", str(opts.root / name)]
        props = {**ns_spec.props, **secured, **(opts.namesrv_overrides or {})}
        if controllers:
            props.update({"controllerDLegerPeers": ";".join(f"{pid}-{a}" for pid, a in controllers.items()),
                          "controllerDLegerSelfId": f"n{i}", "controllerStorePath": str(opts.root / name / "controller")})
        if props:
            config = opts.root / name / "namesrv.properties"
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text(render_properties(props))
            args += ["-c", str(config)]
        host, ns = place(i)
        namesrvs.append(ProcInfo(name, "namesrv", NAMESRV_ROLE, port, args=args, host=host, netns=ns))
    namesrv_addr = ";".join(p.addr for p in namesrvs)
    controller_addr = ";".join(controllers.values()) or None
    brokers = []
    for i, spec in enumerate(specs):
        # four ports from listenPort - 2: the VIP channel, one unused, listenPort and the HA port
        port = sv.pick_ports(opts.base_port + BROKER_PORT_OFFSET - VIP_CHANNEL_OFFSET + BROKER_PORT_STEP * i, 4,
                             taken, step=BROKER_PORT_STEP) + VIP_CHANNEL_OFFSET
        host, ns = place(count + i)
        brokers.append(ProcInfo(spec.name, "broker", CONTROLLED_ROLE if spec.controlled else spec.role, port,
                                port + 1, spec.broker_name, spec.broker_id, host=host, netns=ns))
    proxies = []
    for i in range(opts.proxies):
        # two ports: remotingListenPort, then the gRPC port (Apache's 8080 and 8081)
        port = sv.pick_ports(max(1024, opts.base_port + PROXY_PORT_OFFSET - 1 + 2 * i), 2, taken) + 1
        host, ns = place(count + len(specs) + i)
        proxies.append(ProcInfo(f"proxy-{i}", "proxy", PROXY_ROLE, port, host=host, netns=ns, remoting_port=port - 1))
    state = ClusterState(opts.preset, namesrv_addr, [*namesrvs, *brokers, *proxies],
                         str(certs.ca) if certs is not None else None, controller_addr,
                         opts.base_port if layout is not None else None)
    for broker, spec in zip(brokers, specs, strict=True):
        props = {**spec.props, "listenPort": str(broker.port), "haListenPort": str(broker.ha_port),
                 "namesrvAddr": namesrv_addr, "brokerIP1": broker.host,
                 "storePathRootDir": str(opts.root / broker.name / "store"), **secured, **(opts.overrides or {})}
        if controller_addr is not None:
            props["controllerAddr"] = controller_addr
        config = opts.root / broker.name / "broker.properties"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(render_properties(props))
        broker.args = ["broker", "start", "-c", str(config)]
    broker_props = {**(specs[0].props if specs else {}), **(opts.overrides or {})}
    for proxy in proxies:
        config = _proxy_config(opts.root, proxy, namesrv_addr, broker_props, certs, opts.proxy_overrides or {})
        proxy.args = ["proxy", "start", "-c", str(config)]
    return state


def _proxy_config(root: Path, proxy: ProcInfo, namesrv_addr: str, broker_props: dict[str, str],
                  certs: LocalCertificates | None, overrides: dict[str, str]) -> Path:
    """Write the proxy's rmq-proxy.json: the brokers' cluster and limits, its port, TLS like the others, then
    the `--proxy-set` keys over all of it (the proxy reads numbers and flags from their text)."""
    taken = {k: broker_props[k] for k in _PROXY_KEYS_FROM_BROKERS if k in broker_props}
    conf: dict[str, Any] = {"rocketMQClusterName": taken.pop("brokerClusterName", "DefaultCluster"),
                            "namesrvAddr": namesrv_addr, "proxyMode": "cluster", "grpcServerPort": proxy.port,
                            "remotingListenPort": proxy.remoting_port, "grpcBindAddress": proxy.host,
                            # the proxies share a host on different ports: a client given them all moves between them
                            "useEndpointPortFromRequest": True, **taken}
    if certs is not None:
        conf.update({"tlsCertPath": str(certs.cert), "tlsKeyPath": str(certs.key), "tls.enable": "true",
                     "tls.client.trustCertPath": str(certs.ca), keys.TLS_SERVER_MODE: keys.TlsMode.ENFORCING.value})
    conf.update(overrides)
    path = root / proxy.name / "rmq-proxy.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(conf, indent=2) + "\n")
    return path


def _controller_peers(base_port: int, hosts: list[str], taken: set[int]) -> dict[str, str]:
    """Controller id -> remoting address of the controller inside each name server (on that name server's
    host); each takes two ports, the second for the controllers' Raft traffic."""
    return {f"n{i}": f"{host}:{sv.pick_ports(base_port + CONTROLLER_PORT_OFFSET + 2 * i, 2, taken, step=2)}"
            for i, host in enumerate(hosts)}


def up(opts: UpOptions, progress: Callable[[str], None] = lambda _: None) -> ClusterState:
    """Start every role, wait for registration and replication; on failure stop what started."""
    try:
        existing = sv.load_state(opts.root)
        running = [p for p in existing.procs if sv.alive(p)] if existing is not None else sv.pid_file_procs(opts.root)
    except sv.StateFileError as exc:  # unreadable: what its pid files name still counts
        if sv.pid_file_procs(opts.root):
            raise sv.ClusterStateError(f"a cluster may be running in {opts.root}: {exc}") from None
        running = []
    if running:
        raise sv.ClusterStateError(f"a cluster is already running in {opts.root} (mq cluster down --dir {opts.root})")
    if opts.netns and (why := netns.unavailable()) is not None:
        raise LaunchError(why)
    state = plan(opts)
    deadline = time.monotonic() + opts.timeout
    if state.netns_tag is not None:
        try:
            netns.create(netns.Layout(state.netns_tag), len(state.procs))
        except netns.NetnsError as exc:
            raise LaunchError(f"cannot make the network namespaces: {exc}") from None
    try:
        for stage in start_stages(state.procs):
            for proc in stage:
                sv.spawn(opts.root, proc)
                sv.save_state(opts.root, state)
            for proc in stage:
                sv.wait_ready(opts.root, proc, max(1.0, deadline - time.monotonic()))
                progress(f"started {proc.name} ({proc.role}) pid {proc.pid} on {proc.addr}")
        asyncio.run(wait_healthy(state, deadline))
    except BaseException:
        for proc in reversed(state.procs):
            sv.stop(proc, grace=5.0)
        _remove_namespaces(state)
        raise
    return state


def start_stages(procs: list[ProcInfo]) -> list[list[ProcInfo]]:
    """The processes in plan order, grouped into stages whose members start together: the name servers, the first
    broker of each set (its master; in controller mode the one that applies first), the others of each set (a
    slave learns its master's address when it registers, so it starts once the master is ready), the proxies.
    A cluster comes up in four waits for a READY line instead of one per process."""
    seen: set[str] = set()
    stages: dict[int, list[ProcInfo]] = {}
    for proc in procs:
        if proc.kind == "namesrv":
            key = 0
        elif proc.kind == "broker":
            key = 2 if proc.broker_name in seen else 1
            seen.add(proc.broker_name)
        else:
            key = 3
        stages.setdefault(key, []).append(proc)
    return [stages[key] for key in sorted(stages)]


def _remove_namespaces(state: ClusterState) -> None:
    if state.netns_tag is not None:
        netns.destroy(netns.Layout(state.netns_tag), len(state.procs))


@dataclass(frozen=True, slots=True)
class ProcStatus:
    """One process of a local cluster as `mq cluster status` shows it."""

    proc: ProcInfo
    alive: bool
    """The process exists (it may be SIGSTOPped: `state`)."""
    cpu_percent: float | None
    rss_bytes: int | None
    health: ProcHealth | None
    """What was read of it while it runs (HA, gRPC); None for a process that is not alive."""
    log: Path
    state: str = "exited"
    """supervisor.run_state: "running", "stopped" (SIGSTOPped: alive, but answers nothing) or "exited"."""
    registered: bool | None = False
    """A broker in the live table of every name server that answered; None when none answered."""
    namesrv_unanswered: tuple[str, ...] = ()
    """The name servers that did not answer: `registered` is only about the others."""

    @property
    def role(self) -> str | None:
        """The recorded role; for a controller-mode broker the one it has now (None while not known)."""
        if self.proc.role != CONTROLLED_ROLE:
            return self.proc.role
        ha = self.health.ha if self.health else None
        if ha is None:
            return None
        return BrokerRole.SYNC_MASTER.value if ha.is_master else BrokerRole.SLAVE.value

    def to_json(self) -> dict[str, Any]:
        p = self.proc
        controlled = p.role == CONTROLLED_ROLE
        return {
            "name": p.name, "kind": p.kind, "role": self.role, "controllerMode": controlled,
            "pid": p.pid if self.alive else None, "port": p.port,
            "haPort": p.ha_port or None, "brokerName": p.broker_name or None,
            "brokerId": p.broker_id if p.kind == "broker" and not controlled else None, "alive": self.alive,
            "state": self.state, "cpuPercent": self.cpu_percent, "rssBytes": self.rss_bytes,
            "registered": self.registered, "log": str(self.log),
            # a broker's HA: null when it could not be read; a name server or proxy has none to read (no key)
            **({"ha": self._ha_json(), "namesrvNotAnswering": list(self.namesrv_unanswered)}
               if p.kind == "broker" else {}),
            **({"grpc": self._grpc_json(), "remotingPort": p.remoting_port or None} if p.kind == "proxy" else {}),
        }

    def _grpc_json(self) -> dict[str, Any] | None:
        probe = self.health.grpc if self.health else None
        if probe is None:
            return None
        return {"answering": probe.answering, "tls": probe.tls, "latencyMs": probe.latency_ms, "error": probe.error}

    def _ha_json(self) -> dict[str, Any] | None:
        ha = self.health.ha if self.health else None
        if ha is None:
            return None
        if ha.client is not None:
            return {"masterAddr": ha.client.master_addr, "activated": ha.client.activated,
                    "maxOffset": ha.client.max_offset}
        return {"slaves": len(ha.slaves), "inSyncSlaveNums": ha.in_sync_slaves}


def status(root: Path) -> list[ProcStatus]:
    """One entry per process: alive, CPU/RSS, registration and HA, in the state file's order."""
    state = _require(root)
    health = asyncio.run(collect_once(state))
    rows = []
    for proc in state.procs:
        is_alive, cpu, rss = sv.usage(proc)
        seen = health.get(proc.name)
        # a broker's registration is the name servers' word, alive or not; a name server's is its being up
        registered = (seen.registered if seen is not None else None) if proc.kind == "broker" else \
            is_alive and proc.kind == "namesrv"
        rows.append(ProcStatus(proc, is_alive, cpu, rss, seen if is_alive else None, sv.log_path(root, proc.name),
                               sv.run_state(proc), registered, seen.unanswered if seen is not None else ()))
    return rows


def down(root: Path, grace: float = 15.0, note: Callable[[str], None] = lambda _: None) -> list[tuple[str, str]]:
    """Stop proxies, slaves, then masters, then name servers; returns (name, what happened).

    A controller-mode broker is ordered by the role it has now: a master stopped before its slaves would have
    the controllers elect one of them on the way down (and the set come back up with its roles swapped).

    Without a readable cluster.json the pid files say what runs (supervisor.pid_file_procs); `note` is told so."""
    unreadable = None
    try:
        state = sv.load_state(root)
    except sv.StateFileError as exc:
        state, unreadable = None, str(exc).split("; ", 1)[0]
    if state is None:
        procs = sv.pid_file_procs(root)
        if not procs and unreadable is not None:
            raise sv.StateFileError(f"{unreadable}; no pid file under {root} names a running process of it")
        if not procs:
            raise sv.ClusterStateError(f"no cluster in {root} (start one with mq cluster up)")
        note(f"{unreadable or f'no {sv.STATE_FILE} in {root}'}: stopping what its pid files name")
        state = ClusterState("", "", procs)
    controlled = [p.name for p in state.procs if p.role == CONTROLLED_ROLE and sv.alive(p)]
    masters = asyncio.run(controlled_masters(state, controlled)) if controlled and state.namesrv_addr else \
        set(controlled)

    def rank(p: ProcInfo) -> int:
        if p.role == CONTROLLED_ROLE:
            return 1 if p.name in masters else 0
        return {PROXY_ROLE: -1, BrokerRole.SLAVE.value: 0, NAMESRV_ROLE: 2}.get(p.role, 1)

    done = [(proc.name, sv.stop(proc, grace)) for proc in sorted(state.procs, key=rank)]
    _remove_namespaces(state)
    return done


def stop_one(root: Path, name: str, grace: float = 15.0) -> str:
    state = _require(root)
    return sv.stop(_proc(state, name), grace)


def start_one(root: Path, name: str, timeout: float = 30.0) -> ProcInfo:
    """Restart one role with its recorded command line (same ports, same store)."""
    state = _require(root)
    proc = _proc(state, name)
    if sv.alive(proc):
        raise sv.ClusterStateError(f"{name} is already running (pid {proc.pid})")
    sv.spawn(root, proc)
    sv.save_state(root, state)
    sv.wait_ready(root, proc, timeout)
    return proc


def _require(root: Path) -> ClusterState:
    state = sv.load_state(root)
    if state is None:
        raise sv.ClusterStateError(f"no cluster in {root} (start one with mq cluster up)")
    return state


def _proc(state: ClusterState, name: str) -> ProcInfo:
    proc = state.find(name)
    if proc is None:
        raise sv.ClusterStateError(f"no process named {name!r} (known: {', '.join(p.name for p in state.procs)})")
    return proc
