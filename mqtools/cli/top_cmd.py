"""`mq top`: the live view of a cluster (Textual), or with --once one snapshot of it printed for scripts.

Textual is imported only when the live view starts, so `mq --help` and `mq top --once` stay quick
and work without a terminal.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import NO_OPTIONS, ClusterOptions, TimeoutOpt, cluster_command, fail, usage
from mqtools.cli.output import is_terminal
from mqtools.common.exitcodes import EXIT_UNREACHABLE

if TYPE_CHECKING:
    from mqtools.common.security import ClientSecurity

ONCE_FORMATS = ("table", "json")


@cluster_command
def top(
    where: ClusterOptions = NO_OPTIONS,
    refresh: Annotated[float, typer.Option("--refresh", help="Seconds between refreshes.", min=0.1)] = 2.0,
    once: Annotated[bool, typer.Option("--once", help="Print one snapshot of every view and exit.")] = False,
    output: Annotated[str, typer.Option("-o", "--output", help="With --once: table or json.")] = "table",
    allow_writes: Annotated[bool, typer.Option(
        "--allow-writes", help="Enable wipe/add write permission and reset group to latest (each confirmed).")] = False,
    state_dir: Annotated[Optional[Path], typer.Option(  # noqa: UP045 - typer needs Optional
        "--dir", help="A local cluster's state dir (mq cluster up --dir): show its processes' CPU, RSS, files.")] = None,
    view: Annotated[str, typer.Option("--view", help="Start in this view: brokers, ha, topics, groups, namesrv, "
                                                     "proxies.")] = "brokers",
    proxies: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--proxy", help="A RocketMQ 5 proxy's remoting address (host:8080; repeat for more) for the proxies view: the "
                        "gRPC clients it serves, which the brokers never see.")] = None,
    snapshot_dir: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--snapshot-dir", help="Where `s` saves snapshots (default: the current directory).")] = None,
    timeout: TimeoutOpt = 5.0,
) -> None:
    """Live view: brokers and heartbeats, HA, topics, groups, name servers, proxies (k9s-style keys; ? for help).

    Example: mq top -n 127.0.0.1:9876 --refresh 1
    """
    if output not in ONCE_FORMATS:
        raise usage(f"-o must be one of {', '.join(ONCE_FORMATS)}, not {output!r}")
    target = where.resolve()
    chosen_dir = str(state_dir) if state_dir else (target.context.state_dir if target.context else None)
    context_name = target.context.name if target.context else None
    if once:
        asked = tuple(proxies or (target.context.proxies if target.context else ()))
        _once(target.namesrv, context_name, chosen_dir, output, timeout, target.security, asked)
        return
    if not is_terminal(sys.stdout) or not is_terminal(sys.stdin):
        raise usage("mq top needs a terminal; use --once (-o json) for a snapshot")
    from mqtools.live.views import VIEWS

    if view not in VIEWS:
        raise usage(f"--view must be one of {', '.join(VIEWS)}, not {view!r}")
    from mqtools.tui.app import TopApp
    from mqtools.tui.poller import Poller

    poller = Poller(target.namesrv, timeout=timeout, state_dir=chosen_dir, security=target.security)
    TopApp(poller=poller, namesrv=poller.namesrv_addrs, context=context_name, refresh=refresh,
           allow_writes=allow_writes, snapshot_dir=snapshot_dir, view=view,
           proxies=tuple(proxies or (target.context.proxies if target.context else ()))).run()


def _once(namesrv: str, context: str | None, state_dir: str | None, output: str, timeout: float,
          security: ClientSecurity | None, proxies: tuple[str, ...]) -> None:
    import json

    from mqtools.client.admin import MQAdmin
    from mqtools.common.loop import run as run_loop
    from mqtools.live import export
    from mqtools.live.collect import Wanted, collect_once
    from mqtools.live.state import LiveState
    from mqtools.live.views import VIEWS, build

    sampler = None
    if state_dir:
        from mqtools.cluster.procstats import ProcSampler

        procs = ProcSampler(state_dir)
        procs.sample()  # CPU is measured between two samples: this one and the round's
        sampler = procs.sample

    async def session() -> tuple[list[str], LiveState]:
        state = LiveState()
        async with MQAdmin(namesrv, timeout=timeout, security=security) as admin:
            for outcome in await collect_once(admin, Wanted(topics=True, groups=True, proxies=proxies), sampler):
                state.apply(outcome)
            state.round_done()
            return list(admin.namesrv_addrs), state

    addrs, state = run_loop(session())
    snap = state.slot("snapshot")
    if snap.value is None:
        raise fail(f"no name server answered ({snap.error})", EXIT_UNREACHABLE)
    taken = time.time()
    tables = {name: build(state, name) for name in VIEWS}
    if output == "json":
        doc = export.snapshot_document(tables, context=context, namesrv=addrs, taken_at=taken)
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
        return
    header = export.header_lines(context=context, namesrv=addrs, taken_at=taken)
    sys.stdout.write("\n".join(header) + "\n")
    for table in tables.values():
        sys.stdout.write("\n" + export.view_text(table, table.rows, []).lstrip("\n"))
