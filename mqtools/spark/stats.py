"""Per-task figures that travel from executors to the driver and merge there, and the report they make
(`load_report_view`, the SparkLoadReport document of `mq spark-load`).

Latency is an HDR histogram per task (microseconds), shipped encoded and added on the driver, so the
aggregate percentiles are those of all samples: never an average of per-task percentiles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqtools.common.presentation import Column, View, renders

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


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _line(figures: dict[str, float | None]) -> str:
    """`min 0.2  p50 0.3 ...` for a footer; what was not measured (no send succeeded) reads n/a, as null in JSON."""
    return "  ".join(f"{k} {'n/a' if v is None else v}" for k, v in figures.items())


@renders("SparkLoadReport")
def load_report_view(action: str, topic: str, master: str, summary: Summary, produced: Summary | None = None
                     ) -> View:
    """Tasks, then the aggregate; for e2e the rows are the reading tasks and `produced` the producers'."""
    columns = [Column("TASK", True), Column("MESSAGES", True), Column("FAILED", True), Column("MB", True),
               Column("SECONDS", True), Column("MSGS/S", True), Column("P50 MS", True), Column("P99 MS", True)]
    rows, tasks = [], []
    for t in summary.tasks:
        lat = percentiles([t.histogram])
        secs = max(t.ended - t.started, 0.0)
        failed = sum(t.failed.values())
        rows.append([t.task, t.messages, failed, round(t.bytes / 1e6, 3), round(secs, 3),
                     round(t.messages / secs, 1) if secs else None, lat["p50"], lat["p99"]])
        tasks.append({"task": t.task, "messages": t.messages, "failed": dict(t.failed), "bytes": t.bytes,
                      "seconds": round(secs, 3), "latencyMs": lat})
    lat = summary.latency_ms
    failed = ", ".join(f"{code}: {n}" for code, n in sorted(summary.failed.items())) or "none"
    footer = [(f"{action} {topic} on {master}: {summary.messages} messages in {summary.seconds:.2f}s, "
               f"{summary.msgs_per_s:.1f} msgs/s, {summary.mb_per_s:.3f} MB/s; failed: {failed}"),
              "latency ms: " + _line(lat)]
    if summary.delay_ms is not None:
        footer.append("publish delay ms (planned vs actual start): " + _line(summary.delay_ms))
    if produced is not None:
        sent_failed = ", ".join(f"{code}: {n}" for code, n in sorted(produced.failed.items())) or "none"
        footer[0] = f"e2e {topic} on {master}: read {summary.messages} messages in {summary.seconds:.2f}s"
        footer[1] = "end-to-end latency ms (born to read): " + _line(lat)
        footer.append(f"produced {produced.messages} messages, {produced.msgs_per_s:.1f} msgs/s; failed: "
                      f"{sent_failed}; send latency ms: " + _line(produced.latency_ms))
        if produced.delay_ms is not None:
            footer.append("publish delay ms (planned vs actual start): " + _line(produced.delay_ms))
    data: dict[str, Any] = {
        "action": action, "topic": topic, "master": master, "tasks": tasks, "messages": summary.messages,
        "failed": dict(summary.failed), "bytes": summary.bytes, "seconds": round(summary.seconds, 3),
        "msgsPerSec": round(summary.msgs_per_s, 3), "mbPerSec": round(summary.mb_per_s, 6),
        "latencyMs": {k: _ms(v) for k, v in lat.items()},
        "publishDelayMs": None if summary.delay_ms is None else {k: _ms(v) for k, v in summary.delay_ms.items()}}
    if produced is not None:
        data["publishDelayMs"] = None if produced.delay_ms is None else {k: _ms(v) for k, v in produced.delay_ms.items()}
        data["produced"] = {"messages": produced.messages, "failed": dict(produced.failed),
                            "msgsPerSec": round(produced.msgs_per_s, 3),
                            "latencyMs": {k: _ms(v) for k, v in produced.latency_ms.items()}}
    return View("SparkLoadReport", columns, rows, data, title=f"spark-load {action} {topic}", footer=footer)
