"""`mq cluster ...`: local multi-process clusters from presets (2m-2s-async, 2m-2s-sync, 2m-noslave, and
the controller-mode 2m-2s-controller, 1m-2s-controller and 2m-2s-controller-single)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.frame import fail
from mqtools.common.exitcodes import EXIT_REFUSED, EXIT_USAGE
from mqtools.common.presentation import NA

if TYPE_CHECKING:
    from mqtools.cluster.launcher import ProcStatus
    from mqtools.cluster.supervisor import ClusterState

app = typer.Typer(help="Local multi-process clusters from RocketMQ-style presets.", no_args_is_help=True)
PRESET_HELP = ("2m-2s-async, 2m-2s-sync, 2m-noslave, or in controller mode 2m-2s-controller (three controllers in "
               "three name servers), 1m-2s-controller or 2m-2s-controller-single.")

DirOpt = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional here
    typer.Option("--dir", help="State directory (default: <user data dir>/mq/cluster)."),
]


def _root(path: Path | None) -> Path:
    from mqtools.cluster.launcher import default_state_dir

    return (path or default_state_dir()).expanduser().resolve()


@app.command()
def up(
    preset: Annotated[str, typer.Option("--preset", "-p", help=PRESET_HELP)] = "2m-2s-async",
    namesrv: Annotated[int, typer.Option("--namesrv", min=1, max=9,
                                         help="Number of name servers (a controller preset sets its own).")] = 1,
    state_dir: DirOpt = None,
    base_port: Annotated[int, typer.Option("--base-port", help="First name-server port; brokers from base+1035.")] = 9876,
    sets: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--set", help="Extra broker property key=value for every broker (repeatable)."),
    ] = None,
    namesrv_sets: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--namesrv-set", help="Extra name server property key=value for every name server "
                     "(repeatable), e.g. brokerChannelExpiredTime=30000."),
    ] = None,
    proxy_sets: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--proxy-set", help="Extra proxy key=value (rmq-proxy.json) for every proxy (repeatable), e.g. "
                     "grpcClientConsumerMinLongPollingTimeoutMillis=1000."),
    ] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for a healthy cluster.")] = 90.0,
    netns: Annotated[bool, typer.Option("--netns", help="Every process in a network namespace of its own on one "
                                        "bridge (root only), so drills can partition them.")] = False,
    tls: Annotated[bool, typer.Option("--tls", help="Make a local CA and run every port in TLS enforcing mode.")]
    = False,
    proxy: Annotated[bool, typer.Option("--proxy", help="Add a gRPC proxy (mq proxy start, cluster mode; first "
                                        "port base-1795, 8081 by default) for RocketMQ 5 clients.")] = False,
    proxies: Annotated[int, typer.Option("--proxies", min=0, max=9, help="Number of gRPC proxies (--proxy is "
                                         "--proxies 1).")] = 0,
    context: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--context", help="Save a context of this name for the cluster (with --tls: 'local' unless given).")] = None,
) -> None:
    """Start every role as its own process, wait until registered and replicating, print the topology.

    With --tls the CA and server certificate are made under the state dir's tls/, and the context
    records the CA, so `mq admin ... --context NAME` reaches the cluster over TLS.
    """
    from mqtools.cluster.launcher import UpOptions
    from mqtools.cluster.launcher import up as cluster_up
    from mqtools.cluster.presets import parse_sets
    from mqtools.cluster.supervisor import CONTROLLED_ROLE

    root = _root(state_dir)
    opts = UpOptions(preset, root, namesrv, base_port, parse_sets(sets or []), timeout, tls=tls, netns=netns,
                     namesrv_overrides=parse_sets(namesrv_sets or [], option="--namesrv-set"),
                     proxies=max(proxies, 1 if proxy else 0),
                     proxy_overrides=parse_sets(proxy_sets or [], option="--proxy-set"))
    state = cluster_up(opts, progress=typer.echo)
    typer.echo(f"cluster {preset} up in {root}")
    typer.echo(f"NAMESRV_ADDR={state.namesrv_addr}")
    if state.controller_addr:
        typer.echo(f"CONTROLLER_ADDR={state.controller_addr}")
    proxy_addrs = [p.addr for p in state.procs if p.kind == "proxy"]
    if proxy_addrs:
        typer.echo(f"PROXY_ADDR={';'.join(proxy_addrs)}")
    for proc in state.procs:
        ha = f" ha={proc.ha_port}" if proc.ha_port else f" remoting={proc.remoting_port}" if proc.remoting_port else ""
        ident = f" {proc.broker_name}" if proc.kind == "broker" else ""
        if proc.kind == "broker" and proc.role != CONTROLLED_ROLE:
            ident += f" id={proc.broker_id}"
        typer.echo(f"  {proc.name:<12} {proc.role:<12} {proc.addr}{ha}{ident} pid={proc.pid}")
    context_name = context or ("local" if tls else None)
    if context_name is not None:
        _save_context(context_name, state, root)
    typer.echo(f"stop it with: mq cluster down --dir {root}")


def _save_context(name: str, state: ClusterState, root: Path) -> None:
    """Record the cluster as a context: name servers, state dir, its proxies' remoting ports and, with --tls, the
    CA to trust."""
    from mqtools.client.contexts import record_cluster

    security = state.security()
    proxies = tuple(f"{p.host}:{p.remoting_port}" for p in state.procs if p.kind == "proxy" and p.remoting_port)
    record_cluster(name, state.namesrv_addr, str(root), security.tls if security else None, proxies)
    if state.tls_ca:
        typer.echo(f"TLS CA: {state.tls_ca}")
    typer.echo(f"context {name}: mq admin cluster list --context {name}")


@app.command()
def down(
    state_dir: DirOpt = None,
    grace: Annotated[float, typer.Option("--grace", help="Seconds before SIGTERM escalates to SIGKILL.")] = 15.0,
) -> None:
    """Stop every process (slaves, masters, then name servers) gracefully; data stays.

    Without a readable cluster.json it stops what the pid files name, each checked to be this dir's mq process.
    """
    from mqtools.cluster.launcher import down as cluster_down

    done = cluster_down(_root(state_dir), grace, note=lambda line: typer.echo(f"mq: {line}", err=True))
    for name, how in done:
        typer.echo(f"{name}: {how}")
    _survivors(done)


def _survivors(done: list[tuple[str, str]]) -> None:
    """Exit 1, naming them, when a process outlived its SIGKILL (stop's answer says so)."""
    from mqtools.cluster.supervisor import SURVIVED

    left = [name for name, how in done if how.startswith(SURVIVED)]
    if left:
        raise fail(f"still running after SIGKILL: {', '.join(left)}", EXIT_REFUSED)


def _fmt_bytes(value: int | None) -> str:
    return "-" if value is None else f"{value / (1024 * 1024):.1f}M"


def _replication(row: ProcStatus) -> str:
    """`-` where there is nothing to read (a name server, a process not alive), n/a where a broker's HA could not be
    read (a stopped or hung one)."""
    if row.proc.kind == "proxy":
        return _grpc(row)
    if row.proc.kind != "broker" or not row.alive:
        return "-"
    ha = row.health.ha if row.health else None
    if ha is None:
        return NA
    if not ha.is_master:
        return "replicating" if ha.replicating else "not connected"
    in_sync = NA if ha.in_sync_slaves is None else str(ha.in_sync_slaves)
    return f"{len(ha.slaves)} slave(s), {in_sync} in sync"


def _grpc(row: ProcStatus) -> str:
    """A proxy's line in the last column: whether it answered a gRPC call (and over TLS)."""
    probe = row.health.grpc if row.health else None
    if probe is None:
        return "-"
    tls = " over TLS" if probe.tls else ""
    return f"gRPC answering{tls} ({probe.latency_ms} ms)" if probe.answering else f"gRPC not answering: {probe.error}"


def _registered(row: ProcStatus) -> str:
    """yes/no, n/a when no name server answered, a * when only some did (the table's footer names the others)."""
    if row.proc.kind == "proxy":
        return "-"
    if row.registered is None:
        return NA
    partial = "*" if row.proc.kind == "broker" and row.namesrv_unanswered else ""
    return ("yes" if row.registered else "no") + partial


def _alive(row: ProcStatus) -> str:
    from mqtools.cluster.supervisor import STOPPED

    return STOPPED if row.state == STOPPED else "yes" if row.alive else "no"


def _footer(rows: list[ProcStatus]) -> list[str]:
    """Which name servers did not answer, when some did not: REGISTERED is about the others, or not known."""
    silent = sorted({ns for r in rows if r.proc.kind == "broker" for ns in r.namesrv_unanswered})
    if not silent:
        return []
    if all(r.registered is None for r in rows if r.proc.kind == "broker"):
        return [f"REGISTERED n/a: no name server answered ({', '.join(silent)})"]
    return [f"* registered with the name servers that answered; not answering: {', '.join(silent)}"]


def _role(row: ProcStatus) -> str:
    """The role; a controller-mode broker's as it is now, marked (ctl), or n/a when it cannot be asked."""
    from mqtools.cluster.supervisor import CONTROLLED_ROLE

    if row.proc.role != CONTROLLED_ROLE:
        return row.proc.role
    return f"{row.role} (ctl)" if row.role else f"{NA} (ctl)"


def _table(rows: list[ProcStatus]) -> str:
    headers = ["NAME", "ROLE", "PID", "PORT", "HA", "ALIVE", "CPU%", "RSS", "REGISTERED", "REPLICATION"]
    lines = [[r.proc.name, _role(r), str(r.proc.pid) if r.alive else "-", str(r.proc.port),
              str(r.proc.ha_port or "-"), _alive(r),
              "-" if r.cpu_percent is None else f"{r.cpu_percent:.1f}", _fmt_bytes(r.rss_bytes),
              _registered(r), _replication(r)] for r in rows]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    out += ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines]
    return "\n".join(out + _footer(rows))


@app.command()
def status(
    state_dir: DirOpt = None,
    output: Annotated[str, typer.Option("-o", "--output", help="table or json.")] = "table",
) -> None:
    """Each process: pid, role, ports, alive (`stopped` when SIGSTOPped), CPU/RSS, registered with the name servers
    (n/a when none answered); a broker's replication (n/a when it could not be read); a proxy: whether it answers a
    gRPC call (last column)."""
    from mqtools.cluster.launcher import status as cluster_status

    if output not in ("table", "json"):
        raise fail(f"-o must be table or json, not {output!r}", EXIT_USAGE)
    rows = cluster_status(_root(state_dir))
    typer.echo(json.dumps([r.to_json() for r in rows], indent=2) if output == "json" else _table(rows))


@app.command()
def stop(
    name: Annotated[str, typer.Argument(help="Process name, e.g. broker-a, namesrv-0 or proxy-0.")],
    state_dir: DirOpt = None,
    grace: Annotated[float, typer.Option("--grace", help="Seconds before SIGKILL.")] = 15.0,
) -> None:
    """Stop one role (failover drills)."""
    from mqtools.cluster.launcher import stop_one

    how = stop_one(_root(state_dir), name, grace)
    typer.echo(f"{name}: {how}")
    _survivors([(name, how)])


@app.command()
def start(
    name: Annotated[str, typer.Argument(help="Process name, e.g. broker-a, namesrv-0 or proxy-0.")],
    state_dir: DirOpt = None,
) -> None:
    """Start one stopped role again with its recorded config (same ports, same store)."""
    from mqtools.cluster.launcher import start_one

    proc = start_one(_root(state_dir), name)
    typer.echo(f"{name}: started pid {proc.pid} on {proc.addr}")
