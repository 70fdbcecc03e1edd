"""`mq admin drill list|run|check`: failover drills with a verdict (mqtools.drills does the work).

`run` puts load on a cluster, injects the scenario's fault, keeps the load going, checks the history
and prints the report: exit 0 PASS, 1 FAIL, 2 usage, 3 cluster unreachable (or a preset that did not
come up). `check` re-judges a history saved with --history, offline, with the same code.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from mqtools.cli.admin.common import (
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    ContextOpt,
    NamesrvOpt,
    OutputOpt,
    TlsCaOpt,
    TlsCertOpt,
    TlsKeyOpt,
    TlsOpt,
    check_output,
    cli_tls,
    fail,
    tls_flags,
    usage,
)
from mqtools.cli.output import Column, View, is_terminal, render, schema_version

if TYPE_CHECKING:
    from mqtools.drills.report import Report
    from mqtools.drills.runner import DrillStatus
    from mqtools.remoting.security import ClientSecurity, TlsClientOptions

app = typer.Typer(help="Failover drills: load, a real fault, a checked history and a PASS/FAIL verdict.",
                  no_args_is_help=True)

DirOpt = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional
    typer.Option("--dir", help="A local cluster's state dir (mq cluster up --dir); default: mq cluster's default."),
]
PresetOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--preset", help="Bring a fresh cluster of this preset up for the drill, take it down after."),
]
NamesrvsOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--namesrvs", min=1, max=9, help="With --preset: name servers (default 2 for kill-namesrv, else 1)."),
]
SetOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--set", help="With --preset: broker property key=value (repeatable)."),
]
FaultCmdOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--fault-cmd", help="Shell command run at the fault moment (clusters elsewhere); it sees "
                                     "MQ_DRILL_NODE, MQ_DRILL_ADDR and MQ_DRILL_ACTION (kill, pause, stop)."),
]
HealCmdOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--heal-cmd", help="Shell command run at the heal moment (MQ_DRILL_ACTION cont or start)."),
]
TargetOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--target", help="Broker group the fault is about (default: the first by name)."),
]
FaultAtOpt = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option("--fault-at", min=0.0, help="Seconds into the load (default: a third of --duration)."),
]
FaultForOpt = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option("--fault-for", min=0.0, help="Seconds of pause (pause-master, default 5) or downtime "
                                              "(restart-master, default 8)."),
]
MaxRtoOpt = Annotated[Optional[float], typer.Option("--max-rto", min=0.0, help="Seconds.")]  # noqa: UP045
MaxLostOpt = Annotated[Optional[int], typer.Option("--max-lost", min=0)]  # noqa: UP045
MaxDupOpt = Annotated[Optional[int], typer.Option("--max-duplicates", min=0)]  # noqa: UP045
HistoryOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--history", help="Keep every operation as JSON lines (mq admin drill check FILE)."),
]
SeedOpt = Annotated[Optional[int], typer.Option("--seed", help="Seed of the run id (message ids).")]  # noqa: UP045
ReportOpt = Annotated[str, typer.Option("-o", "--output", help="table (the text report) or json.")]


@app.command("list")
def list_(output: OutputOpt = "table") -> None:
    """The scenarios, what each does to the cluster and what it predicts.

    Example: mq admin drill list
    """
    from mqtools.drills.scenarios import SCENARIOS

    check_output(output)
    rows = [[s.name, s.summary, s.expected] for s in SCENARIOS.values()]
    data = {"scenarios": [{"name": s.name, "summary": s.summary, "expected": s.expected, "needs": s.needs,
                           "faultFor": s.fault_for, "criteria": s.criteria.to_json(),
                           "asyncCriteria": s.async_criteria.to_json() if s.async_criteria else None}
                          for s in SCENARIOS.values()]}
    render(View("DrillScenarioList", [Column("SCENARIO"), Column("WHAT IT DOES"), Column("EXPECTED")], rows, data),
           output)


def _print(report: Report, output: str) -> None:
    from mqtools.drills.report import render as render_text
    from mqtools.drills.report import to_json

    if output == "json":
        doc = {"kind": "DrillReport", "schemaVersion": schema_version("DrillReport"), **to_json(report)}
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    else:
        sys.stdout.write(render_text(report))
    sys.stdout.flush()


def _check_format(output: str) -> str:
    if output not in ("table", "json"):
        raise usage(f"-o must be table or json, not {output!r}")
    return output


def _sets(items: list[str]) -> dict[str, str]:
    from mqtools.cli.cluster_cmd import parse_sets

    try:
        return parse_sets(items)
    except ValueError as exc:
        raise usage(str(exc)) from None


class _Display:
    """The progress display: one live status block on stderr while the drill runs (terminals only)."""

    def __init__(self, scenario: str) -> None:
        self.scenario = scenario
        self.live: Any = None
        if is_terminal(sys.stderr):
            from rich.console import Console
            from rich.live import Live

            self.live = Live(console=Console(file=sys.stderr), transient=True, refresh_per_second=4)
            self.live.start()

    def __call__(self, status: DrillStatus) -> None:
        if self.live is None:
            return
        from rich.text import Text

        c = status.counters
        text = (f"drill {self.scenario}: {status.phase}  {status.elapsed:5.1f}s of ~{status.duration:.0f}s\n"
                f"  sent {c.sent}  ok {c.ok}  failed {c.failed}  unknown {c.unknown}  in flight {c.inflight}  "
                f"received {c.received}")
        if status.last_event:
            text += f"\n  {status.last_event[:150]}"
        self.live.update(Text(text))

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()


@app.command("run")
def run(
    scenario: Annotated[str, typer.Argument(help="kill-master, pause-master, restart-master, kill-slave, "
                                                 "kill-namesrv or drain-master (mq admin drill list).")],
    state_dir: DirOpt = None,
    preset: PresetOpt = None,
    base_port: Annotated[int, typer.Option("--base-port", help="With --preset: first name-server port.")] = 9876,
    namesrvs: NamesrvsOpt = None,
    sets: SetOpt = None,
    namesrv: NamesrvOpt = None, context: ContextOpt = None,
    fault_cmd: FaultCmdOpt = None,
    heal_cmd: HealCmdOpt = None,
    target: TargetOpt = None,
    rate: Annotated[float, typer.Option("--rate", min=0.1, help="Messages per second (constant).")] = 100.0,
    duration: Annotated[float, typer.Option("--duration", min=1.0, help="Seconds of load.")] = 60.0,
    producers: Annotated[int, typer.Option("--producers", min=1, help="Producer clients.")] = 2,
    consumers: Annotated[int, typer.Option("--consumers", min=1, help="Push consumer clients.")] = 2,
    size: Annotated[int, typer.Option("--size", min=32, help="Message body bytes.")] = 256,
    keys: Annotated[int, typer.Option("--keys", min=0, help="Sharding keys: ordered sends and an order check "
                                                            "per key (0: round robin, no order check).")] = 0,
    fault_at: FaultAtOpt = None,
    fault_for: FaultForOpt = None,
    poll_interval: Annotated[float, typer.Option("--poll-interval", min=0.1, help="Seconds between the "
                                                 "clients' route refreshes (pollNameServerInterval).")] = 30.0,
    max_rto: MaxRtoOpt = None,
    max_lost: MaxLostOpt = None,
    max_duplicates: MaxDupOpt = None,
    history: HistoryOpt = None,
    seed: SeedOpt = None,
    output: ReportOpt = "table",
    tls: TlsOpt = False, tls_ca: TlsCaOpt = None, tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None,
) -> None:
    """Run a drill against a cluster and print the report with its verdict (exit 0 PASS, 1 FAIL).

    The cluster: a local one (--dir, default mq cluster's state dir), a fresh one (--preset), or one
    elsewhere (-n or --context) whose faults are your --fault-cmd / --heal-cmd. With --preset, --tls
    brings the cluster up with TLS on every port (mq cluster up --tls); a local cluster started with
    --tls is reached over TLS by itself; a cluster elsewhere takes the --tls options.

    Example: mq admin drill run kill-master --preset 2m-2s-sync --duration 30 --rate 200
    """
    _check_format(output)
    if state_dir is not None and preset is not None:
        raise usage("give --dir or --preset, not both")
    if preset is not None and (namesrv or context):
        raise usage("--preset brings its own cluster: no -n or --context with it")
    if fault_at is not None and fault_at >= duration:
        raise usage(f"--fault-at {fault_at:g} is not within --duration {duration:g}")
    if history is not None and not history.parent.is_dir():
        raise usage(f"--history {history}: no such directory {history.parent}")
    if preset is not None and (tls_ca or tls_cert or tls_key):
        raise usage("--preset makes its own CA: only --tls with it, no --tls-ca/--tls-cert/--tls-key")
    options = None if preset is not None else tls_flags(tls, tls_ca, tls_cert, tls_key) or cli_tls()
    from mqtools.drills.load import LoadSpec
    from mqtools.drills.report import build
    from mqtools.drills.runner import DrillError, DrillSettings, run_drill

    addr, state_dir, security = _where(namesrv, context, state_dir, preset, options)
    settings = DrillSettings(
        scenario, LoadSpec(rate, duration, producers, consumers, size, keys, poll_interval=poll_interval),
        state_dir=state_dir, preset=preset, base_port=base_port, namesrv_count=namesrvs,
        overrides=_sets(sets or []), namesrv=addr, fault_cmd=fault_cmd, heal_cmd=heal_cmd, target=target,
        fault_at=fault_at, fault_for=fault_for, max_rto=max_rto, max_lost=max_lost, max_duplicates=max_duplicates,
        seed=seed, security=security, tls=tls and preset is not None)
    display = _Display(scenario)
    try:
        result = run_drill(settings, display)
    except DrillError as exc:
        display.close()
        raise fail(str(exc), exc.code) from None
    except KeyboardInterrupt:
        display.close()
        raise fail("interrupted: the cluster was restored as far as the drill got", EXIT_REFUSED) from None
    display.close()
    if history is not None:
        try:
            result.write(history)
        except OSError as exc:
            raise fail(f"cannot write --history {history}: {exc.strerror or exc}", EXIT_USAGE) from None
    report = build(result)
    _print(report, output)
    raise typer.Exit(EXIT_OK if report.passed else EXIT_REFUSED)


def _where(namesrv: str | None, context: str | None, state_dir: Path | None, preset: str | None,
           tls: TlsClientOptions | None) -> tuple[str | None, Path | None, ClientSecurity | None]:
    """-n / --context name a cluster elsewhere, unless the context is a local cluster with a state dir;
    the security the TLS flags (or the context) ask for."""
    from mqtools.client.contexts import ContextError, client_security, resolve

    if preset is not None or state_dir is not None or (namesrv is None and context is None):
        return None, state_dir, client_security(None, tls)
    try:
        found = resolve(namesrv, context, tls)
    except ContextError as exc:
        raise usage(str(exc)) from None
    if found.context is not None and found.context.state_dir:
        return None, Path(found.context.state_dir), client_security(None, tls)
    return found.namesrv, None, found.security


@app.command("check")
def check(
    file: Annotated[Path, typer.Argument(help="A history saved with --history.")],
    output: ReportOpt = "table",
) -> None:
    """Re-check a saved history offline: the same checks and report as the run (exit 0 PASS, 1 FAIL).

    Example: mq admin drill check kill-master.jsonl
    """
    _check_format(output)
    from mqtools.drills.history import History, HistoryError
    from mqtools.drills.report import build

    try:
        report = build(History.read(file))
    except HistoryError as exc:
        raise usage(str(exc)) from None
    _print(report, output)
    raise typer.Exit(EXIT_OK if report.passed else EXIT_REFUSED)
