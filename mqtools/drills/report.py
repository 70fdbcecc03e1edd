"""The drill report: header, workload, pre-flight verdict, timeline, integrity, latency, chart, verdict.

Built from a `History` alone (`build`), so `mq admin drill check FILE` prints the same report as the
run that wrote FILE. `to_json` is the whole report for `-o json`; `render` the text for people, with
the throughput-and-errors chart drawn in plain characters so it survives a pipe and a log file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqtools.common.presentation import NA, View, renders
from mqtools.drills.checkers import SHOWN_IDS, Integrity, check
from mqtools.drills.history import History
from mqtools.drills.scenarios import SCENARIOS, Criteria
from mqtools.drills.timeline import Bucket, Timeline, analyze
from mqtools.drills.toolkit_truth import judge_truth

PASS = "PASS"
FAIL = "FAIL"
CHART_ROWS = 6
CHART_WIDTH = 72
BLOCKS = " ▁▂▃▄▅▆▇█"


@dataclass(slots=True)
class Reason:
    ok: bool
    text: str


@dataclass(slots=True)
class Report:
    history: History
    integrity: Integrity
    timeline: Timeline
    criteria: Criteria
    verdict: str = PASS
    reasons: list[Reason] = field(default_factory=list)

    @property
    def meta(self) -> dict[str, Any]:
        return self.history.meta

    @property
    def passed(self) -> bool:
        return self.verdict == PASS


def build(history: History) -> Report:
    criteria = Criteria.from_json(history.meta.get("criteria") or {})
    report = Report(history, check(history), analyze(history), criteria)
    report.reasons = judge(report.integrity, report.timeline, criteria, history.meta.get("aborted"),
                           history.meta.get("transactions"))
    if history.meta.get("leftBroken"):  # a drill that leaves the cluster broken has not passed, whatever it measured
        report.reasons.append(Reason(False, f"the cluster was not restored: {'; '.join(history.meta['leftBroken'])}"))
    if criteria.toolkit_truth:
        report.reasons += [Reason(f.ok, f.text) for f in judge_truth(history, report.integrity)]
    report.verdict = PASS if all(r.ok for r in report.reasons) else FAIL
    return report


def _bound(ok: bool, what: str, value: Any, limit: Any) -> Reason:
    return Reason(ok, f"{what} {value} {'<=' if ok else '>'} {limit}")


def judge(i: Integrity, t: Timeline, c: Criteria, aborted: str | None,
          transactions: dict[str, Any] | None = None) -> list[Reason]:
    """Every criterion of the scenario (and the always-on integrity checks), each with its figure."""
    reasons = []
    if transactions is not None:
        left = transactions.get("openLeft")
        reasons.append(Reason(left == 0, f"transactions still open after the brokers' checks: "
                                         f"{NA if left is None else left}"))
    if aborted:
        reasons.append(Reason(False, f"the drill did not complete its steps: {aborted}"))
    if t.fault_at is None:
        reasons.append(Reason(False, "no fault was injected"))
    if c.loss_explained and c.max_lost is None and i.loss is not None:
        where = f"the slave's commitlog offset {i.loss.slave_offset} at the fault"
        reasons.append(Reason(i.loss.unexplained == 0,
                              f"lost {len(i.lost)}: ASYNC_MASTER may lose only what lay beyond {where}"
                              if i.loss.unexplained == 0 else
                              f"lost {len(i.lost)}, {i.loss.unexplained} of them not beyond {where}"))
    elif c.lost_send_ok_only:
        limit = c.max_lost if c.max_lost is not None else 0
        send_ok = len(i.lost) - len(i.lost_not_ok)
        reasons.append(_bound(send_ok <= limit, "SEND_OK lost", send_ok, limit))
        if i.lost_not_ok:
            reasons.append(Reason(True, f"{len(i.lost_not_ok)} answered stored-but-not-replicated never consumed "
                                        "(not acknowledged: cut from the old master's log)"))
    else:
        limit = c.max_lost if c.max_lost is not None else 0
        reasons.append(_bound(len(i.lost) <= limit, "lost", len(i.lost), limit))
    if c.max_rto is not None and t.fault_at is not None:
        if t.rto is None:
            reasons.append(Reason(False, "sends never succeeded again after the fault (RTO unbounded)"))
        else:
            reasons.append(_bound(t.rto <= c.max_rto, "RTO", f"{t.rto:.3f}s", f"{c.max_rto:g}s"))
    if c.max_group_rto is not None and t.fault_at is not None:
        if t.group_rto is None:
            reasons.append(Reason(False, "the target group never acknowledged a send begun after the fault"))
        else:
            reasons.append(_bound(t.group_rto <= c.max_group_rto, "group write RTO", f"{t.group_rto:.3f}s",
                                  f"{c.max_group_rto:g}s"))
    if c.split_brain:
        reasons.append(Reason(not t.split_brain,
                              f"two masters acknowledged writes in one epoch: writers {' -> '.join(t.writers)} "
                              f"with {t.elections} election(s)" if t.split_brain else
                              f"one master at a time: {len(t.writers)} writer(s), {t.elections} election(s)"))
    if c.max_failed is not None:
        bad = i.failed + i.unknown
        reasons.append(_bound(bad <= c.max_failed, "failed or unknown sends", bad, c.max_failed))
    if c.max_duplicates is not None:
        reasons.append(_bound(i.duplicate_deliveries <= c.max_duplicates, "duplicate deliveries",
                              i.duplicate_deliveries, c.max_duplicates))
    if c.max_redelivered is not None:
        reasons.append(_bound(i.redelivered <= c.max_redelivered, "re-delivered (same stored message twice)",
                              i.redelivered, c.max_redelivered))
    if c.max_regression is not None:
        if i.regression is None:
            reasons.append(Reason(False, "offset regression unknown: no master returned during the drill, or its "
                                         "committed offsets could not be read"))
        else:
            reasons.append(_bound(i.regression.messages <= c.max_regression, "consumer offset regression (messages)",
                                  i.regression.messages, c.max_regression))
    if c.max_order_violations is not None and i.order is not None:
        reasons.append(_bound(i.order.violations <= c.max_order_violations, "order violations",
                              i.order.violations, c.max_order_violations))
    if i.unexpected:
        reasons.append(Reason(False, f"{len(i.unexpected)} consumed message(s) were never sent"))
    if i.failed_but_consumed:
        reasons.append(Reason(False, f"{len(i.failed_but_consumed)} send(s) reported failed were consumed"))
    return reasons


# -- JSON -----------------------------------------------------------------------------------------


def to_json(report: Report) -> dict[str, Any]:
    meta = report.meta
    return {
        "scenario": meta.get("scenario"), "verdict": report.verdict,
        "reasons": [{"ok": r.ok, "text": r.text} for r in report.reasons],
        "header": {k: meta.get(k) for k in ("version", "startedUtc", "finishedUtc", "runId", "seed", "topic",
                                            "group", "cluster", "target", "settings", "aborted")},
        "preflight": meta.get("preflight"), "criteria": report.criteria.to_json(),
        "integrity": report.integrity.to_json(), "timeline": report.timeline.to_json(),
        "transactions": meta.get("transactions"),
    }


@renders("DrillReport")
def drill_report_view(report: Report) -> View:
    """The report's document: its body is `to_json`; people read the report as text (`render`), not a table."""
    return View("DrillReport", [], [], to_json(report))


# -- text -----------------------------------------------------------------------------------------


def _s(value: float | None, unit: str = "s") -> str:
    return NA if value is None else f"{value:.3f}{unit}" if unit == "s" else f"{value:g}{unit}"


def render(report: Report) -> str:
    lines: list[str] = []
    lines += _header(report)
    lines += ["", "Pre-flight: ha ready " + _preflight(report.meta.get("preflight") or {})]
    lines += ["", f"Timeline (seconds after the fault at {_s(report.timeline.fault_at)} into the load)"]
    width = max((len(m.label) for m in report.timeline.moments), default=10)
    for m in report.timeline.moments:
        at = f"{NA:>7}" if m.at is None else f"{m.at:+8.3f}"
        lines.append(f"  {at}  {m.label.ljust(width)}  {m.detail}".rstrip())
    t = report.timeline
    if (report.meta.get("target") or {}).get("controllers"):
        lines += ["", "Controller mode",
                  f"  election                 {_s(t.election)} after the fault ({t.elections} master change(s))",
                  f"  group write RTO          {_s(t.group_rto)} (fault to the group's first acknowledged send)",
                  (f"  masters that took writes {' -> '.join(t.writers) or 'none'}"
                  f"{'  SPLIT BRAIN' if t.split_brain else ''}")]
    lines += ["", "Integrity", *_integrity(report.integrity)]
    tx = report.meta.get("transactions")
    if tx is not None:
        lines += ["", "Transactions",
                  f"  open when the producers died  {_g(tx.get('openAtKill'))}",
                  (f"  checks answered               COMMIT {_g(tx.get('checkedCommit'))}, ROLLBACK "
                  f"{_g(tx.get('checkedRollback'))}"),
                  f"  still open at the end         {_g(tx.get('openLeft'))}",
                  (f"  check after the half stored   p50 {_s(tx.get('checkBackP50S'))}, max "
                   f"{_s(tx.get('checkBackMaxS'))}")]
    lines += ["", "Latency of acknowledged sends, ms from the planned send time",
              f"  {'phase':<8}{'count':>8}{'p50':>10}{'p99':>10}{'max':>10}"]
    for phase, lat in report.timeline.latency.items():
        lines.append(f"  {phase:<8}{lat.count:>8}{_ms(lat.p50_ms):>10}{_ms(lat.p99_ms):>10}{_ms(lat.max_ms):>10}")
    lines += ["", *chart(report.timeline)]
    lines += ["", f"Verdict: {report.verdict}"]
    lines += [f"  {'ok  ' if r.ok else 'FAIL'}  {r.text}" for r in report.reasons]
    return "\n".join(lines) + "\n"


def _g(value: Any) -> str:
    """A settings figure from the history's meta; n/a when an older or hand-made history lacks it."""
    return NA if value is None else f"{value:g}" if isinstance(value, (int, float)) else str(value)


def _ms(value: float | None) -> str:
    return NA if value is None else f"{value:.1f}"


def _header(report: Report) -> list[str]:
    meta = report.meta
    scenario = SCENARIOS.get(str(meta.get("scenario")))
    settings = meta.get("settings") or {}
    target = meta.get("target") or {}
    lines = [f"mq admin drill {meta.get('scenario')}: {report.verdict}"]
    if scenario is not None:
        lines.append(f"  scenario   {scenario.summary}")
        lines.append(f"  expected   {scenario.expected}")
    cluster = meta.get("cluster") or {}
    for b in cluster.get("brokers", []):
        lines.append(f"  broker     {b['cluster']}/{b['brokerName']} id {b['brokerId']} {b['addr']} ({b['name']}): "
                     f"{b.get('role') or NA}, {b.get('flushDiskType') or NA}")
    lines.append(f"  namesrv    {', '.join(cluster.get('namesrv', []))}")
    if cluster.get("controllers"):
        lines.append(f"  controller {', '.join(cluster['controllers'])} (controller mode)")
    master, slave = target.get("master") or {}, target.get("slave") or {}
    lines.append(f"  target     {target.get('brokerName')}: master {master.get('name', NA)}, slave "
                 f"{slave.get('name', NA)}, replication {target.get('sendMode') or NA}")
    lines.append(f"  load       {_g(settings.get('rate'))} msg/s for {_g(settings.get('duration'))}s, "
                 f"{_g(settings.get('producers'))} producer(s), {_g(settings.get('consumers'))} consumer(s), "
                 f"{_g(settings.get('size'))} bytes, {settings.get('keys') or 'no'} sharding keys, "
                 f"route refresh every {_g(settings.get('pollInterval'))}s")
    lines.append(f"  fault      at {_g(settings.get('faultAt'))}s, --fault-for {_g(settings.get('faultFor'))}s"
                 + (f", --fault-cmd {settings['faultCmd']!r}" if settings.get("faultCmd") else ""))
    lines.append(f"  run        {meta.get('runId')} seed {meta.get('seed')}, mq {meta.get('version')}, "
                 f"{meta.get('startedUtc')} to {meta.get('finishedUtc') or NA} UTC, topic {meta.get('topic')}")
    return lines


def _preflight(pre: dict[str, Any]) -> list[str] | str:
    checks = pre.get("checks") or []
    mark = {True: "ok  ", False: "FAIL", None: "    "}
    body = "".join(f"\n  {mark[c.get('ok')]}  {c.get('name')}: {c.get('detail')}" for c in checks)
    return f"{pre.get('verdict', NA)}{body}"


def _integrity(i: Integrity) -> list[str]:
    def ids(values: list[str]) -> str:
        shown = ", ".join(values[:5])
        return f"  ({shown}{', ...' if len(values) > 5 else ''})" if values else ""

    failed = ", ".join(f"{k}: {v}" for k, v in sorted(i.failed_by_code.items())) or "-"
    not_ok = ", ".join(f"{k}: {v}" for k, v in sorted(i.acked_not_ok.items()))
    rows = [
        ("sent", str(i.sent), ""),
        ("acknowledged", str(i.acked), f"  (stored, not SEND_OK: {not_ok})" if not_ok else ""),
        ("failed", str(i.failed), f"  by code: {failed}" if i.failed else ""),
        ("unknown (no answer)", str(i.unknown), ""),
        ("consumed (deliveries)", str(i.consumed), ""),
        ("consumed unique", str(i.consumed_unique), ""),
        ("lost", str(len(i.lost)), ids(i.lost)),
        ("duplicated", str(len(i.duplicated)),
         f"  {i.duplicate_deliveries} extra deliveries: {i.redelivered} re-delivered, {i.stored_twice} stored twice"
         if i.duplicated else ""),
        ("recovered (unknown, consumed)", str(len(i.recovered)), ""),
        ("unexpected (never sent)", str(len(i.unexpected)), ids(i.unexpected)),
        ("failed but consumed", str(len(i.failed_but_consumed)), ids(i.failed_but_consumed)),
        ("order violations", NA if i.order is None else str(i.order.violations),
         "  (no sharding keys)" if i.order is None else f"  over {i.order.keys} keys"),
        ("offset regression", NA if i.regression is None else str(i.regression.messages),
         "  (no master returned, or its offsets not read)" if i.regression is None else
         f"  messages over {i.regression.queues} queue(s) at {i.regression.returns} return(s)"),
    ]
    if i.loss is not None:
        rows.append(("lost, explained by slave", f"{i.loss.explained}/{len(i.lost)}",
                     (f"  slave at commitlog offset {i.loss.slave_offset}; {i.loss.acked_beyond} acknowledged "
                     "message(s) lay beyond it")))
    width = max(len(r[0]) for r in rows)
    out = [f"  {label.ljust(width)}  {value:>7}{extra}" for label, value, extra in rows]
    if len(i.lost) > SHOWN_IDS:
        out.append(f"  (-o json lists the first {SHOWN_IDS} ids of each category)")
    return out


def chart(t: Timeline) -> list[str]:
    """Acknowledged sends per second as bars, errors below, F at the fault and H at the heal."""
    buckets = _fit(t.buckets, t.bucket)
    if not buckets:
        return ["Throughput: no sends"]
    width = buckets[1].start - buckets[0].start if len(buckets) > 1 else t.bucket
    rates = [b.acked / width for b in buckets]
    top = max(rates) or 1.0
    lines = [f"Throughput (acknowledged/s) and errors over time, {width:g}s per column"]
    label = len(f"{top:.0f}")
    for row in range(CHART_ROWS, 0, -1):
        cells = []
        for r in rates:
            level = r / top * CHART_ROWS
            full = level - (row - 1)
            cells.append("█" if full >= 1 else BLOCKS[int(max(0.0, full) * 8)] if full > 0 else " ")
        axis = f"{top:.0f}" if row == CHART_ROWS else "0" if row == 1 else ""
        lines.append(f"  {axis.rjust(label)} |{''.join(cells)}")
    errors = "".join("x" if b.errors else " " for b in buckets)
    lines.append(f"  {'err'.rjust(label)} |{errors}")
    marks = [" "] * len(buckets)
    for at, sign in ((t.fault_at, "F"), (t.heal_at, "H")):
        if at is not None:
            marks[min(len(marks) - 1, int(at // width))] = sign
    lines.append(f"  {''.rjust(label)} +{''.join(marks)}")
    end = f"{t.load_end:.0f}s"
    lines.append(f"  {''.rjust(label)}  0s{end.rjust(max(0, len(buckets) - 2))}")
    return lines


def _fit(buckets: list[Bucket], width: float) -> list[Bucket]:
    """Merge neighbouring buckets until the chart fits CHART_WIDTH columns."""
    factor = max(1, -(-len(buckets) // CHART_WIDTH))
    if factor == 1:
        return buckets
    merged = []
    for i in range(0, len(buckets), factor):
        group = buckets[i:i + factor]
        merged.append(Bucket(group[0].start, sum(b.acked for b in group), sum(b.errors for b in group)))
    return merged
