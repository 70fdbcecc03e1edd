"""When things happened, relative to the fault: errors, recovery, route changes, latency per phase.

RTO follows OpenChaos's RTOChecker: after the fault, the first failed or unknown send starts the
outage (at its invoke time); the first successful response after it ends the outage; a fault that never
made a send fail has RTO 0. Steady state is the first bucket after the fault from which every bucket to
the end of the load acknowledges at least 90% of the pre-fault rate with no errors. Latency is measured
from each send's planned time (the constant-rate schedule), so a stall shows as latency.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from mqtools.drills.history import OK, History, Op, is_error

STEADY_SHARE = 0.9
PHASES = ("before", "during", "after")
HIDDEN = frozenset({"load-start", "master-stopping", "cut"})
LABELS = {
    "master-left-route": "route dropped the master", "master-in-route": "master back in the route",
    "slave-left-route": "route dropped the slave", "slave-in-route": "slave back in the route",
    "slave-out-of-sync": "slave out of sync", "slave-in-sync": "slave in sync again",
    "slave-offset": "slave offset at the fault", "offsets-at-return": "committed offsets at the master's return",
    "producers-left": "producers left the group", "ha-ready": "ha ready", "master-stopped": "master stopped",
    "perm-added": "write permission back", "aborted": "runbook aborted", "load-end": "load ended",
    "settled": "consumers settled", "restored": "cluster restored", "restore-failed": "cluster restore failed",
    "left-broken": "left broken by the drill",
    "master-elected": "controllers elected a master", "controller-leader": "controller leader changed",
    "rejoined-sync-state-set": "old master back in the SyncStateSet", "route-master": "route names another master",
}


@dataclass(slots=True)
class Moment:
    """One line of the timeline: what, when (seconds after the fault; None when it never happened)."""

    label: str
    at: float | None
    detail: str = ""


@dataclass(slots=True)
class Latency:
    count: int
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None


@dataclass(slots=True)
class Bucket:
    start: float
    acked: int = 0
    errors: int = 0


@dataclass(slots=True)
class Timeline:
    fault_at: float | None
    heal_at: float | None
    load_end: float
    bucket: float
    rto: float | None
    """Seconds of unavailability (OpenChaos); 0 when no send failed; None when sends never recovered."""
    unavailable: bool
    time_to_steady: float | None
    pre_fault_rate: float | None
    moments: list[Moment] = field(default_factory=list)
    latency: dict[str, Latency] = field(default_factory=dict)
    buckets: list[Bucket] = field(default_factory=list)
    group_rto: float | None = None
    """Seconds from the fault to the first send the target group acknowledged that began after it."""
    election: float | None = None
    """Controller mode: seconds from the fault until the controllers had a new master for the group."""
    writers: list[str] = field(default_factory=list)
    """The target group's brokers that acknowledged sends, in the order they took over."""
    elections: int = 0
    """Master changes of the target group the controllers showed after the fault."""

    @property
    def split_brain(self) -> bool:
        """More changes of the broker acknowledging the group's writes than elections explain: two masters
        took writes in the same epoch window."""
        return len(self.writers) - 1 > self.elections

    def to_json(self) -> dict[str, Any]:
        return {
            "faultAt": self.fault_at, "healAt": self.heal_at, "loadEnd": self.load_end, "rtoSeconds": self.rto,
            "unavailable": self.unavailable, "timeToSteadySeconds": self.time_to_steady,
            "preFaultRate": self.pre_fault_rate,
            "moments": [{"label": m.label, "at": m.at, "detail": m.detail} for m in self.moments],
            "latencyMs": {name: {"count": lat.count, "p50": lat.p50_ms, "p99": lat.p99_ms, "max": lat.max_ms}
                          for name, lat in self.latency.items()},
            "series": {"bucketSeconds": self.bucket, "start": [round(b.start, 3) for b in self.buckets],
                       "acked": [b.acked for b in self.buckets], "errors": [b.errors for b in self.buckets]},
            "groupRtoSeconds": self.group_rto, "electionSeconds": self.election,
            "groupWriters": self.writers, "elections": self.elections, "splitBrain": self.split_brain,
        }


def percentile(values: list[float], share: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def latency_of(ops: list[Op]) -> Latency:
    values = [(o.complete - (o.planned if o.planned is not None else o.invoke)) * 1000 for o in ops]
    if not values:
        return Latency(0, None, None, None)
    return Latency(len(values), round(percentile(values, 0.5) or 0, 1), round(percentile(values, 0.99) or 0, 1),
                   round(max(values), 1))


def rto_of(sends: list[Op], fault_at: float) -> tuple[float | None, bool, float | None]:
    """(RTO seconds, whether any send failed after the fault, when sends succeeded again) as OpenChaos has it."""
    outage_start: float | None = None
    for op in sorted(sends, key=lambda o: o.complete):
        if op.complete < fault_at:
            continue
        if is_error(op) and outage_start is None:
            outage_start = op.invoke
        elif op.result == OK and outage_start is not None:
            return round(op.complete - outage_start, 3), True, op.complete
    return (0.0, False, None) if outage_start is None else (None, True, None)


def bucket_width(load_end: float) -> float:
    """1 s buckets, finer for short drills so the chart still has some width."""
    return 1.0 if load_end >= 30 else 0.5 if load_end >= 8 else 0.25


def analyze(history: History) -> Timeline:
    sends = history.sends()
    end_event = history.first_event("load-end")
    load_end = end_event.time if end_event else max((o.complete for o in sends), default=0.0)
    fault = history.first_event("fault")
    heal = history.first_event("heal")
    width = bucket_width(load_end)
    buckets = [Bucket(i * width) for i in range(max(1, math.ceil(load_end / width)))]
    for op in sends:
        index = min(int(op.complete // width), len(buckets) - 1)
        if op.complete > load_end + width:
            continue
        if op.result == OK:
            buckets[index].acked += 1
        elif is_error(op):
            buckets[index].errors += 1
    if fault is None:
        return Timeline(None, None, load_end, width, None, False, None, None, [],
                        {"before": latency_of([o for o in sends if o.result == OK])}, buckets)
    fault_at = fault.time
    rto, unavailable, recovered = rto_of(sends, fault_at)
    pre = [o for o in sends if o.result == OK and o.complete < fault_at]
    pre_rate = len(pre) / fault_at if fault_at > 0 else None
    steady = _steady(buckets, fault_at, width, pre_rate, load_end)
    timeline = Timeline(fault_at, heal.time if heal else None, load_end, width, rto, unavailable,
                        None if steady is None else round(steady - fault_at, 3), pre_rate, buckets=buckets)
    timeline.moments = _moments(history, sends, fault_at, rto, recovered, steady)
    broker = (history.meta.get("target") or {}).get("brokerName")
    # acknowledged: SEND_OK (a cut-off master's FLUSH_SLAVE_TIMEOUT stores without acknowledging)
    ok_group = sorted((o for o in sends if o.result == OK and o.broker == broker and o.status in (None, "SEND_OK")),
                      key=lambda o: o.complete)
    first = next((o for o in ok_group if o.invoke >= fault_at), None)
    timeline.group_rto = None if first is None else round(first.complete - fault_at, 3)
    elected = [e for e in history.events if e.name == "master-elected" and e.time >= fault_at]
    timeline.election = round(elected[0].time - fault_at, 3) if elected else None
    timeline.elections = len(elected)
    for op in ok_group:
        if op.store_host and (not timeline.writers or timeline.writers[-1] != op.store_host):
            timeline.writers.append(op.store_host)
    fault_end = max(fault_at + width, heal.time if heal else fault_at, steady if steady is not None else load_end)
    acked = [o for o in sends if o.result == OK]
    started = [(o.planned if o.planned is not None else o.invoke, o) for o in acked]
    timeline.latency = {
        "before": latency_of([o for t, o in started if t < fault_at]),
        "during": latency_of([o for t, o in started if fault_at <= t < fault_end]),
        "after": latency_of([o for t, o in started if t >= fault_end]),
    }
    return timeline


def _steady(buckets: list[Bucket], fault_at: float, width: float, pre_rate: float | None,
            load_end: float) -> float | None:
    """Start of the first bucket after the fault from which every full bucket is healthy."""
    if not pre_rate:
        return None
    need = STEADY_SHARE * pre_rate * width
    full = [b for b in buckets if b.start + width <= load_end + 1e-9]
    candidate: float | None = None
    for b in full:
        if b.start + width <= fault_at:
            continue
        healthy = b.acked >= need and b.errors == 0
        if healthy and candidate is None:
            candidate = max(b.start, fault_at)
        elif not healthy:
            candidate = None
    return candidate


def _moments(history: History, sends: list[Op], fault_at: float, rto: float | None, recovered: float | None,
             steady: float | None) -> list[Moment]:
    def rel(t: float | None) -> float | None:
        return None if t is None else round(t - fault_at, 3)

    after = [o for o in sends if o.complete >= fault_at]
    errors = sorted((o for o in after if is_error(o)), key=lambda o: o.complete)
    out = [Moment("fault", 0.0, history.first_event("fault").detail)]  # type: ignore[union-attr]
    for ev in history.events:
        if ev.name not in HIDDEN and ev.time >= fault_at - 1e-6 and ev is not history.first_event("fault"):
            out.append(Moment(LABELS.get(ev.name, ev.name), rel(ev.time), ev.detail))
    out.append(Moment("first client error", rel(errors[0].complete) if errors else None,
                      _error_detail(errors[0]) if errors else "no send failed"))
    out.append(Moment("last failed send", rel(errors[-1].complete) if errors else None,
                      _error_detail(errors[-1]) if errors else ""))
    if rto == 0.0 and recovered is None:
        out.append(Moment("first successful send after the fault (RTO)", 0.0, "RTO 0: no send failed"))
    else:
        out.append(Moment("first successful send after the fault (RTO)", rel(recovered),
                          f"RTO {rto:.3f}s from the first failed send's start" if rto is not None
                          else "sends never succeeded again"))
    out.append(Moment(f"throughput back to >= {int(STEADY_SHARE * 100)}% of the pre-fault rate", rel(steady),
                      "" if steady is not None else "not within the load"))
    target = history.meta.get("target") or {}
    reading = _reading_from_slave(history, fault_at, target.get("brokerName"))
    if reading is not None or history.meta.get("scenario") in ("kill-master", "restart-master", "drain-master"):
        out.append(Moment("consumers reading from the slave", rel(reading),
                          "" if reading is not None else
                          f"nothing of {target.get('brokerName')} was left to read from its slave"))
    out.sort(key=lambda m: (m.at is None, m.at if m.at is not None else 0.0))
    return out


def _error_detail(op: Op) -> str:
    what = op.error or op.result
    return f"{op.client}: {what}"[:160]


def _reading_from_slave(history: History, fault_at: float, broker: str | None) -> float | None:
    """First delivery of the target group's messages after its master left the route, before it came back."""
    if broker is None:
        return None
    dropped = next((e.time for e in history.events if e.name == "master-left-route" and e.time >= fault_at), None)
    if dropped is None:
        return None
    back = next((e.time for e in history.events if e.name == "master-in-route" and e.time > dropped), math.inf)
    found = [r.complete for r in history.receives() if r.broker == broker and dropped <= r.complete < back]
    return min(found) if found else None
