"""`mq admin drill list|run|check|soak`: failover drills with a verdict (mqtools.drills does the work).

`run` puts load on a cluster, injects the scenario's fault, keeps the load going, checks the history
and prints the report: exit 0 PASS, 1 FAIL, 2 usage, 3 cluster unreachable (or a preset that did not
come up). `check` re-judges a history saved with --history, offline, with the same code. `soak`
repeats drills on fresh preset clusters under varied load and prints a tally: exit 0 only when every
run passed. SIGTERM and SIGHUP stop `run` and `soak` as Ctrl-C does: the cluster is restored (a preset's taken
down) before the exit, 1.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from mqtools.cli.admin.common import (
    NO_OPTIONS,
    ClusterOptions,
    OutputOpt,
    check_output,
    cluster_command,
    usage,
)
from mqtools.cli.frame import fail, on_interrupt
from mqtools.cli.output import is_terminal, render
from mqtools.cluster.presets import parse_sets
from mqtools.common.exitcodes import EXIT_OK, EXIT_REFUSED

if TYPE_CHECKING:
    from mqtools.common.security import ClientSecurity
    from mqtools.drills.report import Report
    from mqtools.drills.runner import DrillStatus
    from mqtools.drills.soak import SoakStatus

app = typer.Typer(help="Failover drills: load, a real fault, a checked history and a PASS/FAIL verdict; soaks "
                       "that repeat them.",
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
    typer.Option("--namesrvs", min=1, max=9, help="With --preset: name servers (default 2 for kill-namesrv and pause-namesrv, else 1)."),
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
    typer.Option("--fault-for", min=0.0, help="Seconds of pause (pause-master, default 5; pause-namesrv, "
                                              "default 8) or downtime (restart-master, default 8)."),
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
    from mqtools.drills.scenarios import SCENARIOS, scenario_list_view

    check_output(output)
    render(scenario_list_view(SCENARIOS.values()), output)


def _print(report: Report, output: str) -> None:
    from mqtools.drills.report import drill_report_view
    from mqtools.drills.report import render as render_text

    if output == "json":
        render(drill_report_view(report), output)
    else:
        sys.stdout.write(render_text(report))
    sys.stdout.flush()


def _check_format(output: str) -> str:
    if output not in ("table", "json"):
        raise usage(f"-o must be table or json, not {output!r}")
    return output


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
@cluster_command
def run(
    scenario: Annotated[str, typer.Argument(help="kill-master, pause-master, restart-master, kill-slave, "
                                                 "kill-namesrv, pause-namesrv, drain-master, kill-proxy; in controller "
                                                 "mode also restart-old-master, kill-controller-leader, "
                                                 "kill-master-and-controller-leader (mq admin drill list).")],
    state_dir: DirOpt = None,
    preset: PresetOpt = None,
    base_port: Annotated[int, typer.Option("--base-port", help="With --preset: first name-server port.")] = 9876,
    namesrvs: NamesrvsOpt = None,
    sets: SetOpt = None,
    where: ClusterOptions = NO_OPTIONS,
    fault_cmd: FaultCmdOpt = None,
    heal_cmd: HealCmdOpt = None,
    target: TargetOpt = None,
    proxies: Annotated[Optional[str], typer.Option(  # noqa: UP045 - typer needs Optional
        "--proxies", help="With -n: the cluster's gRPC proxies (host:port, comma-separated) in the order "
                          "kill-proxy's clients try them; a local cluster's come from its state.")] = None,
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
    keep_logs: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--keep-logs", help="With --preset: copy the nodes' logs into this directory when the cluster is taken "
                            "down (a local cluster keeps them in its --dir).")] = None,
    seed: SeedOpt = None,
    output: ReportOpt = "table",
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
    if preset is not None and (where.namesrv or where.context):
        raise usage("--preset brings its own cluster: no -n or --context with it")
    if fault_at is not None and fault_at >= duration:
        raise usage(f"--fault-at {fault_at:g} is not within --duration {duration:g}")
    if history is not None and not history.parent.is_dir():
        raise usage(f"--history {history}: no such directory {history.parent}")
    if preset is not None and where.tls is not None and (where.tls.ca_file or where.tls.cert_file):
        raise usage("--preset makes its own CA: only --tls with it, no --tls-ca/--tls-cert/--tls-key")
    if keep_logs is not None and preset is None:
        raise usage("--keep-logs is for --preset's cluster, which goes when the drill ends (a local cluster keeps "
                    "its logs in its --dir)")
    from mqtools.drills.load import LoadSpec
    from mqtools.drills.report import build
    from mqtools.drills.runner import DrillSettings, run_drill

    addr, state_dir, security = _where(where, state_dir, preset)
    if proxies is not None and addr is None:
        raise usage("--proxies names the proxies of a cluster given by -n; a local cluster's are in its state")
    settings = DrillSettings(
        scenario, LoadSpec(rate, duration, producers, consumers, size, keys, poll_interval=poll_interval),
        state_dir=state_dir, preset=preset, base_port=base_port, namesrv_count=namesrvs,
        overrides=parse_sets(sets or []), namesrv=addr, fault_cmd=fault_cmd, heal_cmd=heal_cmd, target=target,
        fault_at=fault_at, fault_for=fault_for, max_rto=max_rto, max_lost=max_lost, max_duplicates=max_duplicates,
        seed=seed, security=security, tls=where.tls is not None and preset is not None,
        proxies=[p.strip() for p in (proxies or "").split(",") if p.strip()], keep_logs=keep_logs)
    from mqtools.drills.interrupts import as_interrupts

    display = _Display(scenario)
    on_interrupt(EXIT_REFUSED, "interrupted: the cluster was restored as far as the drill got")
    try:
        with as_interrupts():
            result = run_drill(settings, display)
    finally:
        display.close()
    if history is not None:
        result.write(history)
    report = build(result)
    _print(report, output)
    if result.meta.get("leftBroken"):  # the report FAILs on it too; this line is for whoever reads only stderr
        raise fail(f"the drill left the cluster broken: {'; '.join(result.meta['leftBroken'])}", EXIT_REFUSED)
    raise typer.Exit(EXIT_OK if report.passed else EXIT_REFUSED)


def _where(where: ClusterOptions, state_dir: Path | None,
           preset: str | None) -> tuple[str | None, Path | None, ClientSecurity | None]:
    """-n / --context name a cluster elsewhere, unless the context is a local cluster with a state dir;
    the security the TLS flags (or the context) ask for (a preset makes its own)."""
    from mqtools.client.contexts import client_security

    tls = None if preset is not None else where.tls
    if preset is not None or state_dir is not None or (where.namesrv is None and where.context is None):
        return None, state_dir, client_security(None, tls)
    found = where.resolve()
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
    from mqtools.drills.history import History
    from mqtools.drills.report import build

    report = build(History.read(file))
    _print(report, output)
    raise typer.Exit(EXIT_OK if report.passed else EXIT_REFUSED)


class _SoakDisplay:
    """A bar of runs done, the run going on and its drill's phase (stderr, terminals only)."""

    def __init__(self, total: int) -> None:
        self.bar: Any = None
        if is_terminal(sys.stderr):
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("soak"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[fails]}"),
                                TimeElapsedColumn(), TextColumn("{task.description}"),
                                console=Console(file=sys.stderr), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("", total=total, fails="")

    def __call__(self, status: SoakStatus) -> None:
        if self.bar is None:
            return
        what = "" if status.current is None else status.current.label()
        if status.drill is not None:
            what += f": {status.drill.phase} {status.drill.elapsed:.0f}s"
        self.bar.update(self.task, completed=status.done, description=what,
                        fails=f"{status.failed} FAIL" if status.failed else "")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _names(raw: str, known: list[str]) -> tuple[str, ...]:
    """A comma list, `all` for every known name; duplicates dropped, order kept."""
    if raw.strip() == "all":
        return tuple(known)
    return tuple(dict.fromkeys(n.strip() for n in raw.split(",") if n.strip()))


@app.command("soak")
def soak(
    scenarios: Annotated[str, typer.Option("--scenarios", help="all, or a comma list (mq admin drill list).")] = "all",
    presets: Annotated[str, typer.Option("--presets", help="Comma list of presets (mq cluster presets).")]
    = "2m-2s-sync,2m-2s-async",
    runs: Annotated[int, typer.Option("--runs", min=1, help="Runs of every scenario on every preset.")] = 3,
    vary: Annotated[str, typer.Option("--vary", help="What each run draws: a comma list of keys (none or 8), "
                                                     "rate (100-1000/s), size (256 B-16 KiB), tls; none for "
                                                     "none.")] = "keys,rate,size",
    seed: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--seed", help="Seed of the plan: what each run draws and each drill's seed (default: random, printed).")] = None,
    history_dir: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--history-dir", help="Where FAIL runs' histories go (mq admin drill check FILE), each with its nodes' "
                              "logs (NNN-SCENARIO-PRESET.logs/); default TMPDIR/mq-soak-SEED.")] = None,
    keep_all: Annotated[bool, typer.Option("--keep-all", help="Keep every run's history and logs, not only "
                                                              "FAILs'.")] = False,
    rate: Annotated[float, typer.Option("--rate", min=0.1, help="Messages per second where rate is not "
                                                                "varied.")] = 200.0,
    size: Annotated[int, typer.Option("--size", min=32, help="Body bytes where size is not varied.")] = 256,
    keys: Annotated[int, typer.Option("--keys", min=0, help="Sharding keys where keys are not varied.")] = 0,
    duration: Annotated[float, typer.Option("--duration", min=1.0, help="Seconds of load per run.")] = 12.0,
    producers: Annotated[int, typer.Option("--producers", min=1)] = 2,
    consumers: Annotated[int, typer.Option("--consumers", min=1)] = 2,
    poll_interval: Annotated[float, typer.Option("--poll-interval", min=0.1, help="The clients' route refresh, "
                                                 "seconds (pollNameServerInterval).")] = 30.0,
    base_port: Annotated[int, typer.Option("--base-port", help="First name-server port of each run's cluster.")]
    = 9876,
    sets: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--set", help="Broker property key=value for every run's cluster (repeatable).")] = None,
    output: Annotated[str, typer.Option("-o", "--output", help="table or json.")] = "table",
) -> None:
    """Run every chosen scenario on every chosen preset --runs times, each on a fresh cluster with the
    load --vary draws, and print the tally (exit 0 only when every run passed, 1 otherwise).

    Each FAIL's history is kept for mq admin drill check; --seed replays the same plan.

    Example: mq admin drill soak --presets 2m-2s-sync,2m-2s-async --runs 20 --vary keys,rate,size
    """
    import random
    import tempfile

    from mqtools.cluster.presets import list_presets
    from mqtools.drills.scenarios import SCENARIOS
    from mqtools.drills.soak import VARY_KINDS, SoakPlan, Variation, run_soak, soak_view, validate

    _check_format(output)
    chosen = _names(scenarios, list(SCENARIOS))
    kinds = () if vary.strip() == "none" else _names(vary, list(VARY_KINDS))
    chosen_presets = _names(presets, list_presets())
    unknown = [p for p in chosen_presets if p not in list_presets()]
    if unknown or not chosen or not chosen_presets:
        raise usage(f"unknown preset {unknown[0]!r} (known: {', '.join(list_presets())})" if unknown else
                    "--scenarios and --presets name at least one each")
    validate(chosen, kinds, chosen_presets if scenarios.strip() != "all" else ())
    seed = seed if seed is not None else random.randrange(1 << 31)
    where = history_dir or Path(tempfile.gettempdir()) / f"mq-soak-{seed}"
    if where.exists() and not where.is_dir():
        raise usage(f"--history-dir {where} is not a directory")
    plan = SoakPlan(chosen, chosen_presets, runs, frozenset(kinds), seed, Variation(keys, rate, size, False),
                    duration, producers, consumers, poll_interval, base_port, parse_sets(sets or []))
    from mqtools.drills.interrupts import as_interrupts

    display = _SoakDisplay(len(plan.schedule()))
    try:
        with as_interrupts():
            result = run_soak(plan, where, keep_all=keep_all, progress=display)
    finally:
        display.close()
    render(soak_view(result), output)
    raise typer.Exit(EXIT_OK if result.passed else EXIT_REFUSED)

