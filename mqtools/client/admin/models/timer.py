"""Timer messages (RIP-43) per broker set: how far delivery got, what is pending, whether the wheel keeps up.

Built from three answers of one replica: the timer checkpoint (GET_TIMER_CHECK_POINT: the second the
wheel delivered up to, the TimerLog flush position, the rmq_sys_wheel_timer offset enqueued), the timer
metrics (GET_TIMER_METRICS: pending timer messages per real topic) and the runtime info's timer figures
(dequeue lag in seconds, enqueue lag in messages, congestion, TPS). A broker without a timer store
(Apache answers SYSTEM_ERROR, and its runtime info then holds zeros that mean nothing) or one that does
not know the requests (RocketMQ 4) has None for every figure, never a made-up 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqtools.client.admin.models.parse import opt_float, opt_int
from mqtools.common.presentation import (
    NA,
    Column,
    ReadSource,
    Unreachable,
    View,
    from_slaves_note,
    renders,
    slave_marked,
    when,
)

#: Topics named in the table's footer, most pending first.
FOOTER_TOPICS = 5


@dataclass(frozen=True, slots=True)
class TimerBrokerStatus:
    broker_name: str
    addr: str
    source: str
    """master, or slave when the set's master is gone or does not answer."""
    enabled: bool | None
    """False: the broker said it has no timer store; None: it does not serve the timer requests."""
    last_read_time_ms: int | None = None
    """The wheel's next second to deliver: everything due before it went out."""
    timer_log_flush_pos: int | None = None
    timer_queue_offset: int | None = None
    """How far the timer read rmq_sys_wheel_timer (its consume queue offset)."""
    master_timer_queue_offset: int | None = None
    pending: dict[str, int] | None = None
    """Timer messages not yet delivered, per real topic (TimerMetrics)."""
    read_behind_s: int | None = None
    """Dequeue lag: seconds between now and the wheel's delivery position (timerReadBehind)."""
    offset_behind: int | None = None
    """Enqueue lag: timer messages stored but not yet in the wheel (timerOffsetBehind)."""
    congest_num: int | None = None
    """timerCongestNum: every message in the wheel from its read position on (Apache's TimerWheel.getAllNum),
    the pending ones while the wheel keeps up; not a congestion measure of its own."""
    enqueue_tps: float | None = None
    dequeue_tps: float | None = None

    @classmethod
    def from_answers(cls, broker_name: str, addr: str, source: str, checkpoint: Any | None,
                     metrics: Any | None, runtime: dict[str, str] | None, *, known: bool) -> TimerBrokerStatus:
        """`checkpoint` a TimerCheckpointBody and `metrics` a TimerMetricsBody, None where the broker gave
        none; `known`: the broker understood the timer requests (False for a RocketMQ 4 broker)."""
        if checkpoint is None and metrics is None:
            return cls(broker_name, addr, source, False if known else None)
        raw = runtime or {}
        pending = None
        if metrics is not None:
            pending = {t: m.count for t, m in sorted(metrics.timing_count.items()) if m is not None}
        return cls(
            broker_name, addr, source, True,
            last_read_time_ms=checkpoint.last_read_time_ms if checkpoint else None,
            timer_log_flush_pos=checkpoint.last_timer_log_flush_pos if checkpoint else None,
            timer_queue_offset=checkpoint.last_timer_queue_offset if checkpoint else None,
            master_timer_queue_offset=checkpoint.master_timer_queue_offset if checkpoint else None,
            pending=pending,
            read_behind_s=opt_int(raw, "timerReadBehind"),
            offset_behind=opt_int(raw, "timerOffsetBehind"),
            congest_num=opt_int(raw, "timerCongestNum"),
            enqueue_tps=opt_float(raw, "timerEnqueueTps"),
            dequeue_tps=opt_float(raw, "timerDequeueTps"),
        )

    @property
    def pending_total(self) -> int | None:
        return None if self.pending is None else sum(max(n, 0) for n in self.pending.values())


@dataclass(frozen=True, slots=True)
class TimerStatus:
    brokers: list[TimerBrokerStatus]
    unreachable: list[Unreachable] = field(default_factory=list)

    @property
    def pending_total(self) -> int | None:
        """Summed over the sets read; None when no set has a figure."""
        known = [b.pending_total for b in self.brokers if b.pending_total is not None]
        return sum(known) if known else None


def _enabled_text(enabled: bool | None) -> str | None:
    return None if enabled is None else ("on" if enabled else "off")


def timer_broker_json(b: TimerBrokerStatus) -> dict[str, Any]:
    return {"brokerName": b.broker_name, "addr": b.addr, "source": b.source, "timerEnabled": b.enabled,
            "lastReadTimeMs": b.last_read_time_ms, "timerLogFlushPos": b.timer_log_flush_pos,
            "timerQueueOffset": b.timer_queue_offset, "masterTimerQueueOffset": b.master_timer_queue_offset,
            "pendingTotal": b.pending_total, "pending": b.pending, "readBehindSeconds": b.read_behind_s,
            "offsetBehind": b.offset_behind, "congestNum": b.congest_num, "enqueueTps": b.enqueue_tps,
            "dequeueTps": b.dequeue_tps}


@renders("TimerStatus")
def timer_status_view(st: TimerStatus) -> View:
    rows = [[slave_marked(b.broker_name, b.source), b.addr, _enabled_text(b.enabled), b.pending_total,
             when(b.last_read_time_ms), b.read_behind_s, b.offset_behind, b.congest_num, b.enqueue_tps,
             b.dequeue_tps] for b in st.brokers]
    data = {"pendingTotal": st.pending_total, "brokers": [timer_broker_json(b) for b in st.brokers]}
    total = st.pending_total
    least = "at least " if st.unreachable and total is not None else ""
    shown = NA if total is None else total
    footer = [f"total: {least}{shown} pending timer messages on {len(st.brokers)} broker sets"]
    by_topic: dict[str, int] = {}
    for b in st.brokers:
        for topic, n in (b.pending or {}).items():
            by_topic[topic] = by_topic.get(topic, 0) + max(n, 0)
    top = sorted(((n, t) for t, n in by_topic.items() if n > 0), key=lambda p: (-p[0], p[1]))[:FOOTER_TOPICS]
    if top:
        footer.append("most pending: " + ", ".join(f"{t} {n}" for n, t in top))
    footer += from_slaves_note(sorted(b.broker_name for b in st.brokers if b.source == ReadSource.SLAVE))
    return View("TimerStatus", [Column("BROKER"), Column("ADDR"), Column("TIMER"), Column("PENDING", True),
                                Column("DELIVERED UP TO"), Column("READ BEHIND S", True),
                                Column("OFFSET BEHIND", True), Column("CONGEST", True), Column("ENQ TPS", True),
                                Column("DEQ TPS", True)],
                rows, data, footer=footer, unreachable=st.unreachable)
