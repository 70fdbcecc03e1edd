"""A spark-load report as files: CSV (one row per task, then the aggregate) and OpenMessaging Benchmark's
result JSON, so a run lines up with OMB's RocketMQ driver results in OMB's own charts and scripts.

OMB samples its rates and latencies every stats period into lists and keeps aggregates over the run;
spark-load measures each task once over its whole run, so every OMB list holds exactly one sample (the
run) and the aggregates come from the same merged HDR histogram. OMB's units are kept: latencies in
milliseconds, publish delay in microseconds. What a run did not measure is null (a produce run has no
end-to-end latency, a read run no publish latency), never 0.
"""

from __future__ import annotations

import csv
import json
from importlib import resources
from pathlib import Path
from typing import Any

from mqtools.spark.stats import Summary, TaskStats, merged, percentiles

#: OMB's percentile fields: name suffix -> percentile.
OMB_PERCENTILES = (("50pct", 50.0), ("75pct", 75.0), ("95pct", 95.0), ("99pct", 99.0), ("999pct", 99.9),
                   ("9999pct", 99.99), ("99999pct", 99.999))
#: JSON Schema of the --omb file, shipped beside this module (OMB's format: no kind/schemaVersion).
OMB_SCHEMA_FILE = "omb_result.schema.json"
CSV_LATENCY = ("min", "p50", "p90", "p99", "p99.9", "max")
CSV_HEADER = ("task", "messages", "failed", "bytes", "seconds", "msgs_per_s", "mb_per_s",
              *(f"latency_{k}_ms" for k in CSV_LATENCY))


def omb_schema() -> dict[str, Any]:
    return json.loads(resources.files(__package__).joinpath(OMB_SCHEMA_FILE).read_text(encoding="utf-8"))


def _csv_row(task: str, messages: int, failed: int, nbytes: int, seconds: float, histograms: list[str]
             ) -> list[Any]:
    lat = percentiles(histograms)
    rate = messages / seconds if seconds > 0 else None
    mb = nbytes / seconds / 1_000_000 if seconds > 0 else None
    cells = [task, messages, failed, nbytes, round(seconds, 3), None if rate is None else round(rate, 3),
             None if mb is None else round(mb, 6), *(lat[k] for k in CSV_LATENCY)]
    return ["" if c is None else c for c in cells]


def write_csv(path: Path, summary: Summary) -> None:
    """One row per task, then `all`: unknown cells are empty."""
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(CSV_HEADER)
        for t in summary.tasks:
            out.writerow(_csv_row(str(t.task), t.messages, sum(t.failed.values()), t.bytes,
                                  max(t.ended - t.started, 0.0), [t.histogram]))
        out.writerow(_csv_row("all", summary.messages, sum(summary.failed.values()), summary.bytes,
                              summary.seconds, [t.histogram for t in summary.tasks]))


def _scaled(value: float, scale: float, integral: bool) -> float | int:
    return round(value / scale) if integral else round(value / scale, 3)


def _latency(prefix: str, hist: Any, scale: float, integral: bool) -> dict[str, Any]:
    """OMB's per-period list fields and aggregated fields of one latency kind; null lists' samples and
    null aggregates when nothing was recorded."""
    names = ["Avg", *(suffix for suffix, _ in OMB_PERCENTILES), "Max"]
    if hist.get_total_count() == 0:
        values: list[Any] = [None] * len(names)
        quantiles: dict[str, Any] = {}
    else:
        raw = [hist.get_mean_value(), *(hist.get_value_at_percentile(p) for _, p in OMB_PERCENTILES),
               hist.get_max_value()]
        values = [_scaled(v, scale, integral) for v in raw]
        quantiles = {str(p): _scaled(hist.get_value_at_percentile(p), scale, integral)
                     for p in (50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99, 99.999, 100.0)}
    doc: dict[str, Any] = {}
    for name, value in zip(names, values, strict=True):
        doc[f"{prefix}{name}"] = [] if value is None else [value]
    agg = "aggregated" + prefix[0].upper() + prefix[1:]
    for name, value in zip(names, values, strict=True):
        doc[f"{agg}{name}"] = value
    doc[f"{agg}Quantiles"] = quantiles
    return doc


def omb_result(action: str, topic: str, driver: str, summary: Summary, *, message_size: int | None,
               partitions: int | None, produced: Summary | None = None) -> dict[str, Any]:
    """OMB's TestResult for a produce, consume or e2e run (see the module docstring for how it maps):
    `summary` is the producers' for produce, the readers' otherwise; e2e passes the producers' too."""
    from mqtools.spark.stats import new_histogram

    empty = new_histogram()
    senders = summary if action == "produce" else produced
    readers = None if action == "produce" else summary
    doc: dict[str, Any] = {
        "workload": f"mq spark-load {action} {topic}", "driver": driver, "messageSize": message_size,
        "topics": 1, "partitions": partitions,
        "producersPerTopic": len(senders.tasks) if senders else 0,
        "consumersPerTopic": len(readers.tasks) if readers else 0,
        "publishRate": [round(senders.msgs_per_s, 3)] if senders else [],
        "publishErrorRate": [round(sum(senders.failed.values()) / senders.seconds, 3) if senders.seconds > 0
                             else 0.0] if senders else [],
        "consumeRate": [round(readers.msgs_per_s, 3)] if readers else [],
        "backlog": [],
    }
    send_tasks: list[TaskStats] = senders.tasks if senders else []
    delays = merged([t.delay_histogram for t in send_tasks]) if senders and senders.delay_ms is not None else empty
    doc.update(_latency("publishLatency", merged([t.histogram for t in send_tasks]), 1000, False))
    doc.update(_latency("publishDelayLatency", delays, 1, True))
    doc.update(_latency("endToEndLatency", merged([t.histogram for t in readers.tasks]) if readers else empty,
                        1000, False))
    return doc


def write_omb(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n")
