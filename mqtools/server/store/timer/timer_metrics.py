"""TimerMetrics: ``config/timermetrics``, how many timer messages each real topic has pending.

Enqueueing into the wheel counts +1 for the message's REAL_TOPIC, delivering (or rolling) counts -1;
a message delivered at once because it was already due is not counted either way. The JSON is
Apache's TimerMetricsSerializeWrapper, which is also the body of GET_TIMER_METRICS::

    {"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},
     "timingCount":{"TopicA":{"count":2,"timeStamp":1700000000000}}}
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mqtools.server.store.config_manager import ConfigManager, loads

FILE_NAME = "timermetrics"


@dataclass(slots=True)
class Metric:
    count: int = 0
    time_stamp: int = 0


class TimerMetrics(ConfigManager):
    """The per-topic pending counts and their DataVersion; persisted when changed."""

    def __init__(self, path: Path, clock_ms: Callable[[], int]) -> None:
        super().__init__(path)
        self.clock_ms = clock_ms
        self.timing_count: dict[str, Metric] = {}
        now = clock_ms()
        self.data_version = {"counter": 0, "stateVersion": 0, "timestamp": now}

    def add(self, topic: str | None, value: int) -> int:
        """Count ``value`` for ``topic`` (nothing without a topic); the new count."""
        if topic is None:
            return 0
        now = self.clock_ms()
        metric = self.timing_count.get(topic)
        if metric is None:
            metric = self.timing_count[topic] = Metric(0, now)
        metric.count += value
        metric.time_stamp = now
        self.data_version["counter"] += 1
        self.data_version["timestamp"] = now
        self.dirty = True
        return metric.count

    def replace(self, counts: dict[str, Metric], version: dict[str, int] | None = None) -> None:
        """Counts taken whole: a master's (with its DataVersion), or a wheel counted again (a new version)."""
        self.timing_count = dict(counts)
        if version is not None:
            self.data_version = dict(version)
        else:
            self.data_version["counter"] += 1
            self.data_version["timestamp"] = self.clock_ms()
        self.dirty = True

    def count(self, topic: str) -> int:
        metric = self.timing_count.get(topic)
        return metric.count if metric is not None else 0

    def remove(self, topic: str) -> None:
        if self.timing_count.pop(topic, None) is not None:
            self.dirty = True

    def encode(self) -> bytes:
        body = {
            "dataVersion": dict(sorted(self.data_version.items())),
            "timingCount": {
                t: {"count": m.count, "timeStamp": m.time_stamp} for t, m in self.timing_count.items()
            },
        }
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()

    def decode(self, data: bytes) -> None:
        raw = loads(data)
        if not isinstance(raw, dict):
            raise TypeError("timermetrics is not a JSON object")
        for topic, m in (raw.get("timingCount") or {}).items():
            self.timing_count[topic] = Metric(int(m.get("count", 0)), int(m.get("timeStamp", 0)))
        dv = raw.get("dataVersion") or {}
        for key in ("counter", "stateVersion", "timestamp"):
            if key in dv:
                self.data_version[key] = int(dv[key])
