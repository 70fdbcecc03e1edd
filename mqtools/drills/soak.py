"""`mq admin drill soak`: every chosen scenario on every chosen preset, N times, under varied load; a tally.

One drill passing once proves little: a FAIL that shows once in five runs is the one a user meets. A
soak runs each (scenario, preset) cell N times, each run an ordinary drill (`runner.run_drill`) on a
fresh preset cluster so no run inherits another's leftovers, and varies what the issue list says
exposes faults: ordered keys (none / 8), rate (100-1,000/s), body size (256 B - 16 KiB, so bodies
over the client's 4 KiB threshold go compressed) and TLS. What varies, and each drill's own seed,
come from the soak's seed: the same --seed replays the same plan. Every FAIL's history is kept, so
`mq admin drill check FILE` re-judges it offline.
"""

from __future__ import annotations

import math
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mqtools.cluster import netns
from mqtools.cluster.presets import load_preset
from mqtools.common.errors import ToolkitError
from mqtools.common.exitcodes import EXIT_USAGE
from mqtools.common.presentation import Column, View, renders
from mqtools.drills.history import History
from mqtools.drills.load import LoadSpec
from mqtools.drills.report import FAIL, PASS, Report, build
from mqtools.drills.runner import DrillError, DrillSettings, DrillStatus, run_drill
from mqtools.drills.scenarios import CLASSIC, CONTROLLER, SCENARIOS
from mqtools.drills.timeline import percentile

VARY_KINDS = ("keys", "rate", "size", "tls")
KEYED = 8
"""Sharding keys of a keyed run (ordered sends, an order check per key)."""
RATE_RANGE = (100.0, 1000.0)
SIZE_RANGE = (256, 16 * 1024)


@dataclass(frozen=True, slots=True)
class Variation:
    """The load of one run: what --vary draws, or the soak's fixed values where it does not."""

    keys: int
    rate: float
    size: int
    tls: bool

    def label(self) -> str:
        return (f"{self.rate:g}/s {self.size} B, {self.keys or 'no'} keys" + (", TLS" if self.tls else ""))

    def to_json(self) -> dict[str, Any]:
        return {"keys": self.keys, "rate": self.rate, "size": self.size, "tls": self.tls}


@dataclass(frozen=True, slots=True)
class SoakRun:
    index: int
    """1-based, in the order the runs go."""
    scenario: str
    preset: str
    variation: Variation
    seed: int

    def label(self) -> str:
        return f"#{self.index} {self.scenario} on {self.preset} ({self.variation.label()})"


@dataclass(frozen=True, slots=True)
class SoakPlan:
    scenarios: tuple[str, ...]
    presets: tuple[str, ...]
    runs: int
    vary: frozenset[str]
    seed: int
    base: Variation
    """The load where --vary leaves a figure fixed."""
    duration: float = 12.0
    producers: int = 2
    consumers: int = 2
    poll_interval: float = 1.0
    base_port: int = 9876
    overrides: dict[str, str] = field(default_factory=dict)

    def schedule(self) -> list[SoakRun]:
        """Round by round (every cell once per round), so a soak cut short has covered every cell evenly."""
        rng = random.Random(self.seed)
        can_partition = netns.unavailable() is None
        cells = [(p, s) for p in self.presets for s in self.scenarios
                 if preset_mode(p) in SCENARIOS[s].modes and (can_partition or not SCENARIOS[s].netns)]
        out = []
        for _ in range(self.runs):
            for preset, scenario in cells:
                out.append(SoakRun(len(out) + 1, scenario, preset, self._draw(rng), rng.randrange(1 << 31)))
        return out

    def _draw(self, rng: random.Random) -> Variation:
        """Log-uniform rate and size: small and large values come up alike."""
        keys = rng.choice((0, KEYED))
        rate = round(math.exp(rng.uniform(*map(math.log, RATE_RANGE))) / 10) * 10
        size = round(math.exp(rng.uniform(*map(math.log, SIZE_RANGE))))
        tls = rng.random() < 0.5
        b = self.base
        return Variation(keys if "keys" in self.vary else b.keys, float(rate) if "rate" in self.vary else b.rate,
                         size if "size" in self.vary else b.size, tls if "tls" in self.vary else b.tls)

    def settings(self, run: SoakRun) -> DrillSettings:
        v = run.variation
        load = LoadSpec(v.rate, self.duration, self.producers, self.consumers, v.size, v.keys,
                        poll_interval=self.poll_interval)
        return DrillSettings(run.scenario, load, preset=run.preset, base_port=self.base_port,
                             overrides=dict(self.overrides), seed=run.seed, tls=v.tls)

    def to_json(self) -> dict[str, Any]:
        return {"scenarios": list(self.scenarios), "presets": list(self.presets), "runs": self.runs,
                "vary": sorted(self.vary), "seed": self.seed, "base": self.base.to_json(),
                "duration": self.duration, "producers": self.producers, "consumers": self.consumers,
                "pollInterval": self.poll_interval}


@dataclass(slots=True)
class RunOutcome:
    """One run's verdict and its figures (None: not known, e.g. no order check without keys)."""

    run: SoakRun
    verdict: str
    failing: list[str]
    """The reasons that failed, or the error that kept the drill from running."""
    seconds: float
    lost: int | None = None
    duplicated: int | None = None
    failed: int | None = None
    unknown: int | None = None
    rto: float | None = None
    regression: int | None = None
    order_violations: int | None = None
    history: str | None = None
    group_rto: float | None = None
    election: float | None = None
    split_brain: bool | None = None
    lost_not_ok: int | None = None
    """Of `lost`: answered with a status other than SEND_OK (stored on a master cut off from its slaves,
    then cut with its tail when it rejoined); the rest were acknowledged."""
    logs: str | None = None
    """The directory of the run's node logs, kept with its history when it failed."""

    @classmethod
    def of(cls, run: SoakRun, report: Report, seconds: float) -> RunOutcome:
        i, t = report.integrity, report.timeline
        controlled = bool((report.meta.get("target") or {}).get("controllers"))
        return cls(run, report.verdict, [r.text for r in report.reasons if not r.ok], seconds, len(i.lost),
                   len(i.duplicated), i.failed, i.unknown, t.rto, None if i.regression is None else
                   i.regression.messages, None if i.order is None else i.order.violations,
                   group_rto=t.group_rto, election=t.election, split_brain=t.split_brain if controlled else None,
                   lost_not_ok=len(i.lost_not_ok))

    def to_json(self) -> dict[str, Any]:
        return {"index": self.run.index, "scenario": self.run.scenario, "preset": self.run.preset,
                "load": self.run.variation.to_json(), "seed": self.run.seed, "verdict": self.verdict,
                "failing": self.failing, "seconds": round(self.seconds, 1), "lost": self.lost,
                "duplicated": self.duplicated, "failed": self.failed, "unknown": self.unknown,
                "rtoSeconds": self.rto, "offsetRegression": self.regression,
                "orderViolations": self.order_violations, "history": self.history, "logs": self.logs,
                "groupRtoSeconds": self.group_rto, "electionSeconds": self.election, "splitBrain": self.split_brain,
                "lostNotOk": self.lost_not_ok}


@dataclass(slots=True)
class Tally:
    """One (scenario, preset) cell: counts and the worst of each figure over its runs."""

    scenario: str
    preset: str
    runs: int
    passed: int
    failed_runs: int
    lost: int | None
    duplicated: int | None
    failed: int | None
    unknown: int | None
    rto_p50: float | None
    rto_p99: float | None
    regression: int | None
    order_violations: int | None
    group_rto_p50: float | None = None
    group_rto_p99: float | None = None
    election_p50: float | None = None
    split_brains: int | None = None
    lost_send_ok: int | None = None
    """The worst run's acknowledged (SEND_OK) messages lost: `lost` less what was answered otherwise."""

    @classmethod
    def of(cls, scenario: str, preset: str, outcomes: list[RunOutcome]) -> Tally:
        def worst(values: Iterable[int | None]) -> int | None:
            known = [v for v in values if v is not None]
            return max(known) if known else None

        rtos = [o.rto for o in outcomes if o.rto is not None]
        group = [o.group_rto for o in outcomes if o.group_rto is not None]
        elections = [o.election for o in outcomes if o.election is not None]
        brains = [o.split_brain for o in outcomes if o.split_brain is not None]
        return cls(scenario, preset, len(outcomes), sum(o.verdict == PASS for o in outcomes),
                   sum(o.verdict != PASS for o in outcomes), worst(o.lost for o in outcomes),
                   worst(o.duplicated for o in outcomes), worst(o.failed for o in outcomes),
                   worst(o.unknown for o in outcomes), percentile(rtos, 0.5), percentile(rtos, 0.99),
                   worst(o.regression for o in outcomes), worst(o.order_violations for o in outcomes),
                   percentile(group, 0.5), percentile(group, 0.99), percentile(elections, 0.5),
                   sum(brains) if brains else None,
                   worst(None if o.lost is None or o.lost_not_ok is None else o.lost - o.lost_not_ok
                         for o in outcomes))

    def to_json(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "preset": self.preset, "runs": self.runs, "pass": self.passed,
                "fail": self.failed_runs, "worstLost": self.lost, "worstDuplicated": self.duplicated,
                "worstFailed": self.failed, "worstUnknown": self.unknown, "rtoP50Seconds": self.rto_p50,
                "rtoP99Seconds": self.rto_p99, "worstOffsetRegression": self.regression,
                "worstOrderViolations": self.order_violations, "groupRtoP50Seconds": self.group_rto_p50,
                "groupRtoP99Seconds": self.group_rto_p99, "electionP50Seconds": self.election_p50,
                "splitBrains": self.split_brains, "worstLostSendOk": self.lost_send_ok}


@dataclass(slots=True)
class SoakResult:
    plan: SoakPlan
    outcomes: list[RunOutcome] = field(default_factory=list)
    history_dir: Path | None = None
    interrupted: bool = False

    @property
    def passed(self) -> bool:
        """Every planned run ran and passed."""
        return not self.interrupted and len(self.outcomes) == len(self.plan.schedule()) and \
            all(o.verdict == PASS for o in self.outcomes)

    def tally(self) -> list[Tally]:
        cells: dict[tuple[str, str], list[RunOutcome]] = {}
        for o in self.outcomes:
            cells.setdefault((o.run.scenario, o.run.preset), []).append(o)
        order = {(p, s): n for n, (p, s) in enumerate((p, s) for p in self.plan.presets
                                                       for s in self.plan.scenarios)}
        return [Tally.of(s, p, runs) for (s, p), runs in sorted(cells.items(), key=lambda c: order[c[0][1], c[0][0]])]

    def to_json(self) -> dict[str, Any]:
        return {"verdict": PASS if self.passed else FAIL, "interrupted": self.interrupted,
                "plan": self.plan.to_json(), "historyDir": None if self.history_dir is None else
                str(self.history_dir), "tally": [t.to_json() for t in self.tally()],
                "runs": [o.to_json() for o in self.outcomes]}


@renders("DrillSoak")
def soak_view(result: SoakResult) -> View:
    """The tally, a row per (scenario, preset) cell with the worst of its runs; each FAIL and the verdict after."""
    columns = [Column("SCENARIO"), Column("PRESET"), *(Column(h, right=True) for h in (
        "RUNS", "PASS", "FAIL", "LOST", "LOST SEND_OK", "DUP", "FAILED", "UNKNOWN", "RTO P50", "RTO P99", "REGRESSION", "ORDER",
        "GROUP RTO P50", "GROUP RTO P99", "ELECTION P50", "SPLIT BRAIN"))]
    rows = [[t.scenario, t.preset, t.runs, t.passed, t.failed_runs, t.lost, t.lost_send_ok, t.duplicated, t.failed,
             t.unknown,
             _secs(t.rto_p50), _secs(t.rto_p99), t.regression, t.order_violations, _secs(t.group_rto_p50),
             _secs(t.group_rto_p99), _secs(t.election_p50), t.split_brains] for t in result.tally()]
    done, fails = len(result.outcomes), [o for o in result.outcomes if o.verdict != PASS]
    plan = result.plan
    footer = [(f"{done} run(s), {done - len(fails)} PASS, {len(fails)} FAIL; seed {plan.seed} "
              f"(--seed {plan.seed} replays this plan); figures are the worst of each cell's runs")]
    footer += [f"FAIL {o.run.label()}: {'; '.join(o.failing)}{_kept(o)}" for o in fails]
    if result.interrupted:
        footer.append("interrupted: the runs above are all that ran")
    footer.append(f"Verdict: {PASS if result.passed else FAIL}")
    return View("DrillSoak", columns, rows, result.to_json(), footer=footer)


def _kept(outcome: RunOutcome) -> str:
    kept = [f"{what} {where}" for what, where in (("history", outcome.history), ("logs", outcome.logs)) if where]
    return f" ({', '.join(kept)})" if kept else ""


def _secs(value: float | None) -> str | None:
    return None if value is None else f"{value:.2f}s"


@dataclass(slots=True)
class SoakStatus:
    """What the progress display shows: runs done, the current one and its drill's own status."""

    done: int
    total: int
    failed: int
    current: SoakRun | None
    drill: DrillStatus | None = None


SoakProgress = Callable[[SoakStatus], None]


def preset_mode(preset: str) -> str:
    """classic or controller: whether the preset's brokers are in controller mode."""
    return CONTROLLER if any(spec.controlled for spec in load_preset(preset)) else CLASSIC


class SoakPlanError(ToolkitError, ValueError):
    """A soak asked for a scenario or --vary kind that does not exist, or that no chosen preset can run."""

    exit_code = EXIT_USAGE


def validate(scenarios: Iterable[str], vary: Iterable[str], presets: Iterable[str] = ()) -> None:
    """SoakPlanError naming the first unknown scenario or --vary kind, or a scenario no chosen preset can run."""
    modes = {preset_mode(p) for p in presets}
    for name in scenarios:
        if name not in SCENARIOS:
            raise SoakPlanError(f"unknown scenario {name!r} (known: {', '.join(SCENARIOS)})")
        if modes and not modes & SCENARIOS[name].modes:
            raise SoakPlanError(f"{name} is for {' or '.join(sorted(SCENARIOS[name].modes))} clusters: no chosen "
                             "preset is one")
        if modes and SCENARIOS[name].netns and (why := netns.unavailable()) is not None:
            raise SoakPlanError(f"{name}: {why}")
    for kind in vary:
        if kind not in VARY_KINDS:
            raise SoakPlanError(f"unknown --vary kind {kind!r} (known: {', '.join(VARY_KINDS)})")


PORT_TAKEN = "address already in use"
PORT_RETRIES = 2
PORT_STEP = 100
"""A run whose cluster could not bind a port starts again this many ports higher, at most PORT_RETRIES
times: another process (any outgoing connection, when the base port lies in the kernel's ephemeral
range) held one, and that says nothing about the scenario. Nothing else is retried."""


def _keep(logs: Path, into: Path) -> str | None:
    """Move a run's node logs beside its history (creating the history directory); where they went."""
    into.parent.mkdir(parents=True, exist_ok=True)
    if not logs.is_dir():
        return None
    shutil.rmtree(into, ignore_errors=True)  # a soak run again into the same --history-dir
    return str(shutil.move(logs, into))


def _drill(plan: SoakPlan, run: SoakRun, logs: Path, progress: Callable[[DrillStatus], None]) -> History:
    """One run on its fresh cluster, whose node logs are copied into `logs` when it is taken down."""
    settings = replace(plan.settings(run), keep_logs=logs)
    for _ in range(PORT_RETRIES):
        try:
            return run_drill(settings, progress)
        except DrillError as exc:
            if PORT_TAKEN not in str(exc):
                raise
        settings = replace(settings, base_port=settings.base_port + PORT_STEP)
    return run_drill(settings, progress)


def run_soak(plan: SoakPlan, history_dir: Path, *, keep_all: bool = False,
             progress: SoakProgress = lambda _: None) -> SoakResult:
    """Every run of the plan in turn; Ctrl-C ends the soak with the runs done so far (interrupted)."""
    result = SoakResult(plan, history_dir=history_dir)
    schedule = plan.schedule()
    for run in schedule:
        failed = sum(o.verdict != PASS for o in result.outcomes)
        status = SoakStatus(len(result.outcomes), len(schedule), failed, run)
        progress(status)
        started = time.monotonic()
        stem = f"{run.index:03d}-{run.scenario}-{run.preset}"
        with tempfile.TemporaryDirectory(prefix="mq-soak-logs-") as scratch:
            logs = Path(scratch) / "logs"
            try:
                history = _drill(plan, run, logs, lambda s, st=status: progress(replace(st, drill=s)))
            except DrillError as exc:
                result.outcomes.append(RunOutcome(run, FAIL, [f"the drill did not run: {exc}"],
                                                  time.monotonic() - started,
                                                  logs=_keep(logs, history_dir / f"{stem}.logs")))
                continue
            except KeyboardInterrupt:
                result.interrupted = True
                break
            outcome = RunOutcome.of(run, build(history), time.monotonic() - started)
            if keep_all or outcome.verdict != PASS:
                path = history_dir / f"{stem}.jsonl"
                outcome.logs = _keep(logs, history_dir / f"{stem}.logs")
                history.write(path)
                outcome.history = str(path)
        result.outcomes.append(outcome)
    progress(SoakStatus(len(result.outcomes), len(schedule), sum(o.verdict != PASS for o in result.outcomes),
                        None))
    return result
