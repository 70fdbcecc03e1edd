"""Per-task figures that travel from executors to the driver and merge there.

Latency is an HDR histogram per task (microseconds), shipped encoded and added on the driver, so the
aggregate percentiles are those of all samples: never an average of per-task percentiles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LOWEST_US = 1
HIGHEST_US = 3_600_000_000
DIGITS = 3
PERCENTILES = (50.0, 90.0, 99.0, 99.9)


def new_histogram() -> Any:
    from hdrh.histogram import HdrHistogram

    return HdrHistogram(LOWEST_US, HIGHEST_US, DIGITS)


def record(hist: Any, micros: float, count: int = 1) -> None:
    hist.record_value(min(max(int(micros), LOWEST_US), HIGHEST_US), count)


@dataclass(slots=True)
class TaskStats:
    """What one task did: messages, failures by RocketMQ code (or error name), bytes, wall time, latency."""

    task: int
    messages: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    started: float = 0.0
    ended: float = 0.0
    histogram: str = ""
    """The encoded HDR histogram of latencies in microseconds ('' when nothing was recorded)."""
    delay_histogram: str = ""
    """With a target rate: how late each send started against its planned time (coordinated omission)."""

    def fail(self, code: str) -> None:
        self.failed[code] = self.failed.get(code, 0) + 1


def error_code(exc: BaseException) -> str:
    """The RocketMQ response code of a failure when a broker gave one (also behind the producer's "failed
    after its retries"), else the error's type name."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(code := getattr(cause, "code", None), int):
            return str(code)
        cause = cause.__cause__
    return type(exc).__name__


def merged(encoded: list[str]) -> Any:
    """One histogram holding every task's samples."""
    hist = new_histogram()
    for text in encoded:
        if text:
            hist.decode_and_add(text)
    return hist


def percentiles(encoded: list[str]) -> dict[str, float | None]:
    """min/p50/p90/p99/p99.9/max in milliseconds of the merged histograms (None when empty)."""
    hist = merged(encoded)
    keys = ["min", "p50", "p90", "p99", "p99.9", "max"]
    if hist.get_total_count() == 0:
        return dict.fromkeys(keys)
    values = [hist.get_min_value(), *(hist.get_value_at_percentile(p) for p in PERCENTILES), hist.get_max_value()]
    return {k: round(v / 1000, 3) for k, v in zip(keys, values, strict=True)}


def encode(hist: Any) -> str:
    if hist.get_total_count() == 0:
        return ""
    data = hist.encode()
    return data.decode() if isinstance(data, bytes) else str(data)


@dataclass(slots=True)
class Summary:
    """The aggregate over every task."""

    tasks: list[TaskStats]
    messages: int
    failed: dict[str, int]
    bytes: int
    seconds: float
    latency_ms: dict[str, float | None]
    delay_ms: dict[str, float | None] | None

    @property
    def msgs_per_s(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.bytes / self.seconds / 1_000_000 if self.seconds > 0 else 0.0


def summarize(tasks: list[TaskStats], *, with_delay: bool = False) -> Summary:
    """Sum counts, merge histograms; the wall time runs from the first task's start to the last one's end."""
    failed: dict[str, int] = {}
    for t in tasks:
        for code, n in t.failed.items():
            failed[code] = failed.get(code, 0) + n
    busy = [t for t in tasks if t.ended > 0]
    seconds = max(t.ended for t in busy) - min(t.started for t in busy) if busy else 0.0
    return Summary(sorted(tasks, key=lambda t: t.task), sum(t.messages for t in tasks), failed,
                   sum(t.bytes for t in tasks), seconds, percentiles([t.histogram for t in tasks]),
                   percentiles([t.delay_histogram for t in tasks]) if with_delay else None)
