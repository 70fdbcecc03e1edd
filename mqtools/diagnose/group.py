"""Why a consumer group lags: one verdict from samples of the group taken over a window (sans-IO).

A sample is what the admin API reads at one moment: every queue's broker and committed offsets (consume
stats, the group's retry queue among them), the members online with what each holds after rebalance and
in what state (their running info), and the dead-letter queue's size. The judge compares the first and
the last sample (and each pair in between for ownership changes) and picks the first verdict that holds,
in this order:

  offline            no member online
  rebalancing        the members or who holds which queue changed in the window
  stuck orderly queue an orderly member holds a queue (locked) with messages waiting and commits nothing
  stalled            queues with messages waiting whose committed offset did not move in the window
  not acknowledging  a POP group whose popped messages come back after their invisible time
  unowned queues     members online, but queues no member holds (not judged for a POP group)
  blocked by retries the retry queue grows by a share of what is consumed, or the dead-letter queue grows
  slow               consuming, but the backlog is past the lag threshold and not shrinking
  healthy            the backlog shrinks, or stays under the lag threshold

A POP group (mq's brokers say so: GET_POP_IN_FLIGHT) is judged on what it pops: the broker moves its
offsets when it pops, and its members hold no queues, so what shows a consumer that stopped acknowledging
is the messages in flight and those that came back after their invisible time (revived).

Clients commit offsets every few seconds (persistConsumerOffsetInterval, 5 s), so a window shorter than
twice that can mistake a working queue for a stalled one: Thresholds.min_window says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from mqtools.common.presentation import NA, Column, ReadSource, Unreachable, View, renders
from mqtools.common.topics import is_retry_topic
from mqtools.diagnose.findings import Severity, number

if TYPE_CHECKING:
    from mqtools.remoting.bodies import MessageQueue

HEALTHY, SLOW, STALLED, UNOWNED, REBALANCING = "healthy", "slow", "stalled", "unowned queues", "rebalancing"
RETRIES, OFFLINE, STUCK_ORDERLY, UNKNOWN = "blocked by retries", "offline", "stuck orderly queue", "unknown"
NO_MASTER = "no master"
NOT_ACKED = "not acknowledging"
SEVERITY = {HEALTHY: Severity.OK, REBALANCING: Severity.INFO, UNKNOWN: Severity.UNKNOWN}
#: The verdicts, in the order the judge tries them (the first that holds is the verdict, the rest "also").
ORDER = (OFFLINE, NO_MASTER, REBALANCING, STUCK_ORDERLY, STALLED, NOT_ACKED, UNOWNED, RETRIES, SLOW)


@dataclass(frozen=True, slots=True)
class Thresholds:
    """What the verdicts compare against; `mq admin diagnose` takes each as an option."""

    lag_ok: int = 1000
    """A backlog up to this many messages is healthy even when it does not shrink."""
    retry_share: float = 0.05
    """Retries arriving at this share of what is consumed (or more) block the group."""
    min_window: float = 10.0
    """Shortest window in which a committed offset that did not move means no progress (two commit periods)."""


DEFAULTS = Thresholds()


@dataclass(frozen=True, slots=True)
class QueueSample:
    broker_offset: int
    consumer_offset: int | None
    last_timestamp_ms: int | None
    """Store time of the last message the group consumed from the queue; None when not known."""
    source: ReadSource = ReadSource.MASTER
    """Which replica answered for the queue: master, or slave when its set has no master answering."""


@dataclass(frozen=True, slots=True)
class HeldQueue:
    """A queue as its holder reports it (a ProcessQueueInfo of the client's running info)."""

    locked: bool | None = None
    last_consume_ms: int | None = None
    cached: int | None = None


@dataclass(frozen=True, slots=True)
class Member:
    client_id: str
    version: str | None = None
    orderly: bool | None = None
    held: Mapping[MessageQueue, HeldQueue] | None = None
    """What it holds after rebalance; None when its running info could not be read."""


@dataclass(frozen=True, slots=True)
class PopSample:
    """A POP group's figures at one moment, summed over the brokers that gave them."""

    inflight: int
    """Popped and not acknowledged."""
    revive_due: int
    """Of those, past their invisible time."""
    revived: int
    """Came back after their invisible time since the brokers started (a counter)."""
    complete: bool = True
    """False: some set gave no figures (a slave, an Apache broker, a set not read); the sums leave it out."""


@dataclass(frozen=True, slots=True)
class GroupSample:
    at: float
    """Seconds on the collector's clock."""
    queues: Mapping[MessageQueue, QueueSample]
    members: Sequence[Member] | None
    """None when the group's connections could not be read."""
    dlq_offset: int | None = None
    """Messages ever put to the group's %DLQ% topic; None when it has none or it could not be read."""
    unreachable: tuple[Unreachable, ...] = ()
    """Broker sets no replica answered for, and why: their queues are not in `queues`."""
    pop: PopSample | None = None
    """Set for a group that pops (as mq's brokers report it); None otherwise or when not known."""


@dataclass(frozen=True, slots=True)
class QueueEvidence:
    queue: MessageQueue
    broker_offset: int
    consumer_offset: int | None
    lag: int
    produced_per_s: float
    consumed_per_s: float | None
    owner: str | None
    """The member holding it at the end of the window; None when none does or it is not known."""
    last_consumed_ms: int | None
    locked: bool | None
    source: ReadSource = ReadSource.MASTER

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.queue.topic, "brokerName": self.queue.broker_name, "queueId": self.queue.queue_id,
                "brokerOffset": self.broker_offset, "consumerOffset": self.consumer_offset, "lag": self.lag,
                "producedPerSec": round(self.produced_per_s, 3),
                "consumedPerSec": None if self.consumed_per_s is None else round(self.consumed_per_s, 3),
                "owner": self.owner, "lastConsumedStoreTime": self.last_consumed_ms, "locked": self.locked,
                "source": self.source}


@dataclass(slots=True)
class GroupDiagnosis:
    group: str
    verdict: str
    summary: str
    window_s: float
    lag: int | None = None
    lag_at_start: int | None = None
    produce_tps: float | None = None
    consume_tps: float | None = None
    drain_s: float | None = None
    """Seconds to a backlog of 0 at these rates; None when it would not drain."""
    retry_growth: int | None = None
    dlq_growth: int | None = None
    queues: list[QueueEvidence] = field(default_factory=list)
    members: list[Member] = field(default_factory=list)
    also: list[str] = field(default_factory=list)
    """Other verdicts that hold too, in the judge's order."""
    actions: list[str] = field(default_factory=list)
    pop: PopSample | None = None
    """A POP group's figures at the end of the window."""
    revived_growth: int | None = None
    """POP: messages that came back after their invisible time during the window."""
    unreachable: list[Unreachable] = field(default_factory=list)
    """Broker sets the last sample could not read: the figures leave their queues out (the document is partial)."""

    @property
    def severity(self) -> Severity:
        return SEVERITY.get(self.verdict, Severity.ACTION)

    @property
    def at_least(self) -> str:
        """What a sum over the sets read is said as: "at least " while some set could not be read."""
        return "at least " if self.unreachable else ""

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "verdict": self.verdict, "severity": self.severity.value,
                "summary": self.summary, "windowSeconds": round(self.window_s, 3), "lag": self.lag,
                "lagAtStart": self.lag_at_start, "produceTps": _round(self.produce_tps),
                "consumeTps": _round(self.consume_tps), "drainSeconds": _round(self.drain_s),
                "retryGrowth": self.retry_growth, "dlqGrowth": self.dlq_growth,
                "queues": [q.to_json() for q in self.queues],
                "members": [{"clientId": m.client_id, "version": m.version, "orderly": m.orderly,
                             "queuesHeld": None if m.held is None else len(m.held)} for m in self.members],
                "pop": None if self.pop is None else {
                    "inflight": self.pop.inflight, "reviveDue": self.pop.revive_due,
                    "revivedInWindow": self.revived_growth},
                "also": self.also, "actions": self.actions}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def unknown(group: str, window_s: float, missing: str, unreachable: Sequence[Unreachable] = ()) -> GroupDiagnosis:
    """A group whose figures could not be read: the verdict names the missing one (and the sets not read)."""
    return GroupDiagnosis(group, UNKNOWN, f"cannot judge: {missing}", window_s,
                          actions=[f"mq admin group progress {group}"], unreachable=list(unreachable))


def _owners(members: Sequence[Member] | None) -> dict[MessageQueue, str] | None:
    """Queue -> holder, None when some member's holdings are not known."""
    if members is None or any(m.held is None for m in members):
        return None
    return {mq: m.client_id for m in members for mq in (m.held or {})}


def _held(members: Sequence[Member], mq: MessageQueue) -> HeldQueue | None:
    for m in members:
        if m.held and mq in m.held:
            return m.held[mq]
    return None


def judge(group: str, samples: Sequence[GroupSample], thresholds: Thresholds = DEFAULTS) -> GroupDiagnosis:
    """The verdict over `samples` (at least two, oldest first)."""
    if len(samples) < 2:
        raise ValueError("a verdict needs two samples at least")
    first, last = samples[0], samples[-1]
    window = last.at - first.at
    if last.members is None:
        return unknown(group, window, "the group's connections (GET_CONSUMER_CONNECTION_LIST) did not answer",
                       last.unreachable)
    if not last.queues:
        return unknown(group, window, "no consume stats: the group has no offsets on any broker", last.unreachable)
    members = list(last.members)
    pop = last.pop
    owners = None if pop is not None else _owners(members)  # POP members hold no queues
    rows: list[QueueEvidence] = []
    for mq, end in sorted(last.queues.items(), key=lambda kv: (kv[0].topic, kv[0].broker_name, kv[0].queue_id)):
        start = first.queues.get(mq, end)
        consumed = None if end.consumer_offset is None or start.consumer_offset is None \
            else (end.consumer_offset - start.consumer_offset) / window if window > 0 else 0.0
        held = _held(members, mq)
        rows.append(QueueEvidence(mq, end.broker_offset, end.consumer_offset,
                                  max(0, end.broker_offset - (end.consumer_offset or 0)),
                                  (end.broker_offset - start.broker_offset) / window if window > 0 else 0.0,
                                  consumed, owners.get(mq) if owners is not None else None, end.last_timestamp_ms,
                                  held.locked if held else None, end.source))
    plain = [r for r in rows if not is_retry_topic(r.queue.topic)]
    retry = [r for r in rows if is_retry_topic(r.queue.topic)]
    lag = sum(r.lag for r in plain)
    lag_start = sum(max(0, s.broker_offset - (s.consumer_offset or 0)) for mq, s in first.queues.items()
                    if not is_retry_topic(mq.topic))
    produce = sum(r.produced_per_s for r in plain)
    consume = sum(r.consumed_per_s or 0.0 for r in plain)
    out = GroupDiagnosis(group, HEALTHY, "", window, lag, lag_start, produce, consume,
                         lag / (consume - produce) if consume > produce else (0.0 if lag == 0 else None),
                         queues=rows, members=members, pop=pop, unreachable=list(last.unreachable))
    if pop is not None and first.pop is not None:
        out.revived_growth = max(0, pop.revived - first.pop.revived)
    out.retry_growth = sum(r.broker_offset - first.queues.get(r.queue, last.queues[r.queue]).broker_offset
                           for r in retry)
    if last.dlq_offset is not None:
        out.dlq_growth = last.dlq_offset - (first.dlq_offset if first.dlq_offset is not None else 0)
    holds = {v: f(out, plain, owners, samples, thresholds) for v, f in _CHECKS.items()}
    found = [v for v in ORDER if holds[v]]
    if found:
        out.verdict, out.also = found[0], found[1:]
        out.summary = holds[found[0]]  # type: ignore[assignment]
    else:
        out.summary = (f"backlog {out.at_least}{lag:,} (was {lag_start:,}): shrinking" if lag < lag_start else
                       f"backlog {out.at_least}{lag:,} is within the {thresholds.lag_ok:,} threshold")
    out.actions = _actions(out)
    return out


def _offline(out: GroupDiagnosis, plain: list[QueueEvidence], owners: dict | None, samples: Sequence[GroupSample],
             t: Thresholds) -> str | None:
    if out.members:
        return None
    return (f"no member online; {out.at_least}{out.lag:,} message(s) wait on {sum(1 for r in plain if r.lag):,} "
            "queue(s)")


def _no_master(out: GroupDiagnosis, plain: list[QueueEvidence], owners: dict | None,
               samples: Sequence[GroupSample], t: Thresholds) -> str | None:
    """Queues on a broker set with no master answering: read from its slave, consumers read there but their
    commits fail (RocketMQ 4 clients commit to the master), so that lag stands still; sets not read at all."""
    slave_read = [r for r in plain if r.source != ReadSource.MASTER]
    lost = sorted({u.broker_name or u.addr or "?" for u in samples[-1].unreachable})
    if not slave_read and not lost:
        return None
    parts = []
    if slave_read:
        sets = sorted({r.queue.broker_name for r in slave_read})
        parts.append(f"{len(slave_read)} queue(s) with {sum(r.lag for r in slave_read):,} message(s) waiting are on "
                     f"{', '.join(sets)}, which has no master answering: read from its slave, consumers can read "
                     "there but cannot commit until a master returns or is elected")
    if lost:
        parts.append(f"could not read {', '.join(lost)} at all: the lag shown leaves its queues out")
    return "; ".join(parts)


def _rebalancing(out: GroupDiagnosis, plain: list[QueueEvidence], owners: dict | None,
                 samples: Sequence[GroupSample], t: Thresholds) -> str | None:
    changes = []
    for before, after in pairwise(samples):
        if before.members is None or after.members is None:
            continue
        was, now = {m.client_id for m in before.members}, {m.client_id for m in after.members}
        if was != now:
            joined, left = sorted(now - was), sorted(was - now)
            changes.append(" ".join(filter(None, [f"joined {', '.join(joined)}" if joined else "",
                                                  f"left {', '.join(left)}" if left else ""])))
            continue
        o1, o2 = _owners(before.members), _owners(after.members)
        if o1 is not None and o2 is not None:
            moved = sorted((mq for mq in set(o1) | set(o2) if o1.get(mq) != o2.get(mq)),
                           key=lambda mq: (mq.topic, mq.broker_name, mq.queue_id))
            if moved:
                named = ", ".join(f"{mq.topic}@{mq.broker_name}:{mq.queue_id} {o1.get(mq) or 'nobody'} -> "
                                  f"{o2.get(mq) or 'nobody'}" for mq in moved[:3])
                changes.append(f"{len(moved)} queue(s) changed hands ({named}{', ...' if len(moved) > 3 else ''})")
    return f"ownership changed in the window: {'; '.join(changes)}" if changes else None


def _no_progress(out: GroupDiagnosis, plain: list[QueueEvidence], t: Thresholds) -> list[QueueEvidence]:
    if out.window_s < t.min_window:
        return []
    return [r for r in plain if r.lag > 0 and r.consumed_per_s == 0.0]


def _locked_by_orderly(out: GroupDiagnosis, r: QueueEvidence) -> bool:
    return bool(r.locked) and any(m.orderly and m.client_id == r.owner for m in out.members)


def _stuck_orderly(out: GroupDiagnosis, plain: list[QueueEvidence], owners: dict | None,
                   samples: Sequence[GroupSample], t: Thresholds) -> str | None:
    stuck = [r for r in _no_progress(out, plain, t) if _locked_by_orderly(out, r)]
    if not stuck:
        return None
    holders = sorted({r.owner for r in stuck if r.owner})
    return (f"{len(stuck)} locked queue(s) of an orderly consumer commit nothing with {sum(r.lag for r in stuck):,} "
            f"message(s) waiting; held by {', '.join(holders)}")


def _stalled(out: GroupDiagnosis, plain: list[QueueEvidence], owners: dict | None, samples: Sequence[GroupSample],
             t: Thresholds) -> str | None:
    stalled = [r for r in _no_progress(out, plain, t)
               if (owners is None or r.owner is not None) and not _locked_by_orderly(out, r)]
    if not stalled:
        return None
    holders = sorted({r.owner for r in stalled if r.owner})
    who = f"; held by {', '.join(holders)}" if holders else ""
    return (f"{len(stalled)} queue(s) made no progress in {out.window_s:.0f} s with "
            f"{sum(r.lag for r in stalled):,} message(s) waiting{who}")


def _not_acked(out: GroupDiagnosis, plain: list[QueueEvidence], owners: dict | None,
               samples: Sequence[GroupSample], t: Thresholds) -> str | None:
    """POP messages came back after their invisible time in the window, or wait past it now: the members
    pop but do not acknowledge (or not within the invisible time)."""
    pop = out.pop
    if pop is None or not (out.revived_growth or pop.revive_due):
        return None
    parts = []
    if out.revived_growth:
        parts.append(f"{out.revived_growth:,} popped message(s) came back after their invisible time in "
                     f"{out.window_s:.0f} s")
    if pop.revive_due:
        parts.append(f"{pop.revive_due:,} wait past it")
    return f"{'; '.join(parts)}: not acknowledged in time; {pop.inflight:,} popped and not acknowledged now"


def _unowned(out: GroupDiagnosis, plain: list[QueueEvidence], owners: dict | None, samples: Sequence[GroupSample],
             t: Thresholds) -> str | None:
    if owners is None or not out.members or out.pop is not None:
        return None
    free = [r for r in plain if r.queue not in owners]
    if not free:
        return None
    return (f"{len(free)} queue(s) held by no online member ({sum(r.lag for r in free):,} message(s) waiting), "
            f"{len(out.members)} member(s) online")


def _retries(out: GroupDiagnosis, plain: list[QueueEvidence], owners: dict | None, samples: Sequence[GroupSample],
             t: Thresholds) -> str | None:
    consumed = sum(r.consumed_per_s or 0.0 for r in plain) * out.window_s
    parts = []
    if out.retry_growth and out.retry_growth >= max(1.0, t.retry_share * consumed):
        parts.append(f"{out.retry_growth:,} message(s) sent back for retry in {out.window_s:.0f} s "
                     f"({consumed:,.0f} consumed)")
    if out.dlq_growth:
        parts.append(f"{out.dlq_growth:,} moved to the dead-letter queue")
    return "; ".join(parts) or None


def _slow(out: GroupDiagnosis, plain: list[QueueEvidence], owners: dict | None, samples: Sequence[GroupSample],
          t: Thresholds) -> str | None:
    if out.lag is None or out.lag <= t.lag_ok or out.lag < (out.lag_at_start or 0):
        return None
    drain = f"drains in {out.drain_s:,.0f} s" if out.drain_s else "does not drain at these rates"
    return (f"consuming {out.consume_tps or 0:,.1f} msgs/s against {out.produce_tps or 0:,.1f} produced: backlog "
            f"{out.at_least}{out.lag:,} (was {out.lag_at_start:,}), {drain}")


_CHECKS = {OFFLINE: _offline, NO_MASTER: _no_master, REBALANCING: _rebalancing, STUCK_ORDERLY: _stuck_orderly, STALLED: _stalled,
           NOT_ACKED: _not_acked, UNOWNED: _unowned, RETRIES: _retries, SLOW: _slow}


def _actions(out: GroupDiagnosis) -> list[str]:
    """The one or two commands that act on the verdict (or look closer)."""
    g = out.group
    return {
        OFFLINE: [f"mq admin group connections {g}", f"mq admin offset reset {g} --to latest  # if nobody will read it",
                  f"mq admin diagnose group {g} --proxy PROXY  # gRPC clients are seen by their proxies only"],
        NO_MASTER: ["mq admin ha status", "restart the set's master (controller mode: mq admin controller elect-master)"],
        REBALANCING: [f"mq admin diagnose group {g}  # again once the members settle"],
        STUCK_ORDERLY: [f"mq admin group status {g}", "restart the holder shown; its lock expires after 60 s"],
        STALLED: [f"mq admin group connections {g}", "inspect the holder shown (jstack, its logs)"],
        NOT_ACKED: [f"mq admin group progress {g}  # POP: in flight, past their invisible time, revived",
                    "make the consumers ack (or change the invisible time) within the invisible time they pop with"],
        UNOWNED: [f"mq admin group connections {g}", "check the members' subscriptions are the same"],
        RETRIES: [f"mq admin dlq list {g}", f"mq admin group progress {g}"],
        SLOW: [f"mq admin group progress {g}", "add consumers (up to the queue count) or consume threads"],
    }.get(out.verdict, [])


QUEUE_COLUMNS = [Column("TOPIC"), Column("BROKER"), Column("QID", True), Column("BROKER OFFSET", True),
                 Column("CONSUMER OFFSET", True), Column("LAG", True), Column("IN/S", True), Column("OUT/S", True),
                 Column("OWNER"), Column("LOCKED")]


@renders("GroupDiagnosis")
def group_diagnosis_view(d: GroupDiagnosis) -> View:
    """The verdict as the title, the queues that show it, the window's figures, the members and what to run next."""
    rows = [[q.queue.topic, q.queue.broker_name, q.queue.queue_id, q.broker_offset, q.consumer_offset, q.lag,
             q.produced_per_s, q.consumed_per_s, q.owner, q.locked] for q in d.queues]
    footer = [f"{d.summary}",
              (f"window {d.window_s:.1f} s: lag {d.at_least}{number(d.lag)} (was {number(d.lag_at_start)}), in "
               f"{_rate(d.produce_tps)}, out {_rate(d.consume_tps)}, drains in {number(d.drain_s, 's')}, retries "
               f"{number(d.retry_growth)}, to DLQ {number(d.dlq_growth)}")]
    if d.pop is not None:
        some = "" if d.pop.complete and not d.unreachable else "at least "
        footer.append(f"POP: {some}{d.pop.inflight:,} popped and not acknowledged, {d.pop.revive_due:,} past their invisible "
                      f"time, {number(d.revived_growth)} came back in the window")
    footer += [f"member {m.client_id} {m.version or NA}{' orderly' if m.orderly else ''}, holds "
               f"{NA if m.held is None else len(m.held)} queue(s)" for m in d.members]
    footer += [f"also: {', '.join(d.also)}"] if d.also else []
    footer += [f"next: {a}" for a in d.actions]
    return View("GroupDiagnosis", QUEUE_COLUMNS, rows, d.to_json(), title=f"{d.group}: {d.verdict.upper()}",
                footer=footer, unreachable=d.unreachable)


def _rate(value: float | None) -> str:
    return NA if value is None else f"{value:,.1f} msgs/s"
