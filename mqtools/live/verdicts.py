"""The diagnose verdicts `mq top` shows: each broker's and each sampled group's, from the samples the live
state keeps, judged by the same sans-IO judges as `mq admin diagnose` (mqtools.diagnose).

A broker's verdict needs two runtime answers within VERDICT_WINDOW and its config (read once a minute); a
group's needs samples spanning the diagnose window (10 s: clients commit offsets every 5 s). Until then the
verdict is not known and reads `n/a`. Enter on a broker shows its findings; on a group, the verdict's
evidence above the queues.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mqtools.diagnose.broker import BrokerDiagnosis
from mqtools.diagnose.broker import judge as judge_broker
from mqtools.diagnose.findings import Severity
from mqtools.diagnose.group import DEFAULTS, GroupDiagnosis, GroupSample
from mqtools.diagnose.group import judge as judge_group
from mqtools.live.tables import CRIT, NA, OK, WARN, Cell, Column, Row, Table, num

if TYPE_CHECKING:
    from mqtools.client.admin.models.brokers import BrokerRuntime
    from mqtools.live.state import LiveState

#: Seconds of a broker's runtime answers its verdict is taken over (as `mq admin diagnose broker --window`).
VERDICT_WINDOW = 10.0
#: How often a group is sampled: three samples make a window, as `mq admin diagnose group` takes them.
GROUP_SAMPLE_EVERY = DEFAULTS.min_window / 2
LEVELS = {Severity.OK: OK, Severity.INFO: WARN, Severity.UNKNOWN: WARN, Severity.ACTION: CRIT}


def verdict_cell(found: BrokerDiagnosis | GroupDiagnosis | None) -> Cell:
    if found is None:
        return Cell(None, NA)
    return Cell(found.verdict, found.verdict, LEVELS[found.severity])


def broker_verdict(state: LiveState, broker: str, addr: str) -> BrokerDiagnosis | None:
    """The broker node's verdict over its runtime answers of the last VERDICT_WINDOW; None until there are two."""
    history = state.runtimes.get(addr)
    if not history or len(history) < 2:
        return None
    newest = history[-1][0]
    recent = [(at, rt) for at, rt in history if newest - at <= VERDICT_WINDOW]
    if len(recent) < 2:
        return None
    samples: Sequence[BrokerRuntime] = [rt for _, rt in recent]
    return judge_broker(broker, addr, samples, state.value(f"config:{addr}"), newest - recent[0][0])


def window_of(samples: Sequence[GroupSample], window: float = DEFAULTS.min_window) -> list[GroupSample] | None:
    """The newest sample, the newest one at least `window` before it, and the one nearest their middle:
    the three samples `mq admin diagnose group` takes; None while the samples span less than the window."""
    if not samples:
        return None
    last = samples[-1]
    first = next((s for s in reversed(samples) if last.at - s.at >= window), None)
    if first is None:
        return None
    middle = min((s for s in samples if first.at < s.at < last.at), key=lambda s: abs(s.at - (first.at + last.at) / 2),
                 default=None)
    return [first, last] if middle is None else [first, middle, last]


def group_verdict(state: LiveState, group: str) -> GroupDiagnosis | None:
    """The group's verdict over its samples; None until they span the diagnose window (or it is not sampled)."""
    samples = window_of([sample for _, sample in state.group_samples.get(group, ())])
    if samples is None or not samples[-1].queues:
        return None
    return judge_group(group, samples)


def group_evidence(found: GroupDiagnosis | None, sampled: bool) -> list[str]:
    """Lines above a group's queues: its verdict, what it rests on and what to run next."""
    if found is None:
        return [f"verdict: {NA} ({'sampling: a verdict needs 10 s of samples' if sampled else 'not sampled'})"]
    lines = [f"verdict: {found.verdict} — {found.summary}"]
    lines.append(f"window {found.window_s:.0f} s: lag {NA if found.lag is None else found.lag} (was "
                 f"{NA if found.lag_at_start is None else found.lag_at_start}), in {num(found.produce_tps)}/s, "
                 f"out {num(found.consume_tps)}/s")
    if found.also:
        lines.append("also: " + ", ".join(found.also))
    lines += [f"next: {a}" for a in found.actions]
    return lines


FINDING_COLUMNS = [
    Column("FINDING", key="name"), Column("SEVERITY", key="severity"), Column("DETAIL", key="detail"),
    Column("FIGURE", True, key="figure"), Column("LIMIT", True, key="limit"), Column("CONFIG KEY", key="configKey"),
    Column("CLIENTS GET", key="answers"),
]


def broker_detail(state: LiveState, addr: str) -> Table:
    """Enter on a broker: its verdict's findings, one per row, and the figures they were held against."""
    table = Table("broker", f"broker {addr}", FINDING_COLUMNS, [])
    seen = state.seen_brokers.get(addr)
    found = None if seen is None else broker_verdict(state, seen[0].broker_name, addr)
    if found is None:
        table.info.append(f"verdict: {NA} (a verdict needs two runtime answers within {VERDICT_WINDOW:.0f} s)")
        return table
    table.info.append(f"verdict: {found.verdict} — {found.summary}")
    table.info.append("figures: " + ", ".join(f"{k} {NA if v is None else v}" for k, v in found.figures.items()))
    if state.value(f"config:{addr}") is None:
        table.notes.append("its config could not be read: limits are RocketMQ's defaults")
    for f in found.findings:
        table.rows.append(Row(f.name, [
            Cell(f.name, f.name), Cell(f.severity.value, f.severity.value, LEVELS[f.severity]), Cell(f.detail, f.detail),
            Cell(f.figure, _figure(f.figure)), Cell(f.limit, _figure(f.limit)), Cell(f.config_key, f.config_key or NA),
            Cell(f.answers, f.answers or "nothing refused"),
        ]))
    return table


def _figure(value: float | None) -> str:
    if value is None:
        return NA
    return f"{value:,.0f}" if value == int(value) else f"{value:.4g}"
