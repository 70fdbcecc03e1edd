"""The live state: the latest outcome of every polling job, and the short histories rates need.

A job's outcome replaces what the state held under its key only when it succeeded; a failure keeps
the old value (shown greyed, with its age) and records the error, so a refresh that fails never
blanks a view. Outcomes are applied on the UI's thread, in the order they arrive.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

HISTORY_SECONDS = 300.0
VERDICT_HISTORY = 30.0
"""How far back the runtime answers and group samples the verdicts are judged from go (mqtools.live.verdicts)."""
"""How far back histories go: the HA sparkline spans this, rates use the last RATE_WINDOW of it."""
RATE_WINDOW = 10.0
SILENT_ROUNDS = 2
"""Rounds after which a job that has not answered is shown as not answering (`mq top`: red within two refreshes)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one job returned (value) or why it failed (error), and when it finished."""

    key: str
    value: Any
    error: str | None
    wall: float
    """time.time() when it finished: what a person reads."""
    mono: float
    """time.monotonic() when it finished: what ages and rates are computed from."""


@dataclass(slots=True)
class Slot:
    """The freshest good value of one key, and the error of the last attempt if it failed."""

    value: Any = None
    ok_wall: float | None = None
    ok_mono: float | None = None
    error: str | None = None
    failed_mono: float | None = None

    @property
    def stale(self) -> bool:
        """The last attempt failed (whatever value is shown is older than the last refresh)."""
        return self.error is not None

    @property
    def last_heard(self) -> float | None:
        """Monotonic time of the last outcome, good or failed: a job still running since is not heard from."""
        heard = [m for m in (self.ok_mono, self.failed_mono) if m is not None]
        return max(heard) if heard else None


@dataclass(slots=True)
class Series:
    """(monotonic time, value) samples of one figure, oldest first, at most HISTORY_SECONDS old."""

    points: deque[tuple[float, float]] = field(default_factory=deque)

    def add(self, mono: float, value: float) -> None:
        self.points.append((mono, value))
        while self.points and mono - self.points[0][0] > HISTORY_SECONDS:
            self.points.popleft()

    def rate(self, window: float = RATE_WINDOW) -> float | None:
        """Change per second between the newest sample and the oldest within `window` of it."""
        if len(self.points) < 2:
            return None
        t1, v1 = self.points[-1]
        t0, v0 = next(((t, v) for t, v in self.points if t1 - t <= window and t < t1), self.points[-2])
        return None if t1 <= t0 else (v1 - v0) / (t1 - t0)

    def values(self) -> list[float]:
        return [v for _, v in self.points]


class LiveState:
    """Slots by job key ("snapshot", "probe", "procs", "topics", "groups", "runtime:ADDR", "ha:ADDR",
    "topic:NAME", "group:NAME", "config:ADDR", "sample:GROUP") and series by figure ("ha-ack:MASTER:SLAVE",
    "ha-diff:MASTER:SLAVE", "lag:GROUP"); for the verdicts, each broker's recent runtime answers and each
    sampled group's recent samples."""

    def __init__(self) -> None:
        self.slots: dict[str, Slot] = {}
        self.series: dict[str, Series] = {}
        self.last_round_wall: float | None = None
        self.last_round_mono: float | None = None
        self.rounds = 0
        self.round_monos: deque[float] = deque(maxlen=SILENT_ROUNDS + 1)
        """When the last few rounds ended: a job not heard from over SILENT_ROUNDS of them does not answer."""
        self.memo: dict[str, dict[Any, Any]] = {}
        """Rows a view built from the same figures before (views of thousands of rows reuse them)."""
        self.runtimes: dict[str, deque[tuple[float, Any]]] = {}
        """broker address -> (monotonic time, BrokerRuntime) of its answers in the last VERDICT_HISTORY."""
        self.group_samples: dict[str, deque[tuple[float, Any]]] = {}
        """group -> (its clock reading, GroupSample of mqtools.diagnose) of the last VERDICT_HISTORY."""
        self.seen_brokers: dict[str, tuple[Any, float]] = {}
        """broker address -> (its last BrokerRow, monotonic time of that snapshot): a broker that
        leaves the name servers' table (killed: its connection closed) stays on screen as gone."""

    def slot(self, key: str) -> Slot:
        return self.slots.get(key) or Slot()

    def value(self, key: str) -> Any:
        found = self.slots.get(key)
        return None if found is None else found.value

    def apply(self, outcome: Outcome) -> None:
        slot = self.slots.setdefault(outcome.key, Slot())
        if outcome.error is not None:
            slot.error, slot.failed_mono = outcome.error, outcome.mono
            return
        slot.value, slot.ok_wall, slot.ok_mono, slot.error, slot.failed_mono = (
            outcome.value, outcome.wall, outcome.mono, None, None)
        self._record(outcome)

    def round_done(self, wall: float | None = None, mono: float | None = None) -> None:
        self.rounds += 1
        self.last_round_wall = time.time() if wall is None else wall
        self.last_round_mono = time.monotonic() if mono is None else mono
        self.round_monos.append(self.last_round_mono)

    def silent(self, key: str, since_key: str = "snapshot") -> bool:
        """Whether job `key` has not been heard from over SILENT_ROUNDS rounds, while `since_key` (the job that
        starts it again each round) answered after it: a broker that is registered but does not answer (hung,
        or a timeout longer than the refresh) is red within two refreshes instead of one timeout later."""
        heard, starter = self.slot(key).last_heard, self.slot(since_key).ok_mono
        if heard is None or starter is None or starter <= heard:
            return False
        return sum(1 for m in self.round_monos if m > heard) >= SILENT_ROUNDS

    def series_of(self, name: str) -> Series:
        return self.series.get(name) or Series()

    def _record(self, outcome: Outcome) -> None:
        """Keep the figures whose change over time a view shows (HA progress, group lag)."""
        kind, _, addr = outcome.key.partition(":")
        if kind == "snapshot":
            for row in outcome.value.brokers:
                self.seen_brokers[row.addr] = (row, outcome.mono)
        elif kind == "ha":
            for conn in outcome.value.slaves:
                if conn.ack_offset is not None:
                    self._add(f"ha-ack:{addr}:{conn.addr}", outcome.mono, conn.ack_offset)
                if conn.diff_bytes is not None:
                    self._add(f"ha-diff:{addr}:{conn.addr}", outcome.mono, conn.diff_bytes)
        elif kind == "runtime":
            _keep(self.runtimes.setdefault(addr, deque()), (outcome.mono, outcome.value), outcome.mono)
        elif kind == "sample":
            _keep(self.group_samples.setdefault(addr, deque()), (outcome.value.at, outcome.value), outcome.value.at)
        elif kind == "groups":
            for summary in outcome.value:  # a partial lag (a set left out) is no point of the group's lag over time
                if summary.diff_total is not None and not summary.unreachable:
                    self._add(f"lag:{summary.group}", outcome.mono, summary.diff_total)

    def _add(self, name: str, mono: float, value: float) -> None:
        self.series.setdefault(name, Series()).add(mono, value)

    def stale_keys(self) -> list[str]:
        return sorted(k for k, s in self.slots.items() if s.stale)


def _keep(history: deque[tuple[float, Any]], item: tuple[float, Any], now: float) -> None:
    """Append, and drop what is older than VERDICT_HISTORY."""
    history.append(item)
    while now - history[0][0] > VERDICT_HISTORY:
        history.popleft()
