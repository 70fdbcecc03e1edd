"""sendLatencyEnable and startDetectorEnable: how Apache 5's proxy steers sends away from a failing broker.

Off by default, as in Apache; then a send takes the topic's next writable queue in turn, and a hung master gets
its share of the sends, each of which waits out the send timeout. On, each send's outcome is remembered per
broker (Apache 5's MQFaultStrategy and LatencyFaultToleranceImpl, with their tables): a failure (unreachable,
timed out, or refused by the broker) isolates the broker for 10 s and marks it unreachable; a success marks it
reachable and isolates it for a time that grows with the send's latency (none under 550 ms). A send then takes
the next queue in turn of a broker that is available and reachable, else available, else reachable, else just
the next (MessageQueueSelector.selectOneByPipeline). A broker that failed stays out of the first choice until a
send to it succeeds, which happens only when no other broker passes a filter, or until the detector
(startDetectorEnable) gets an answer from it: every 3 s it asks each broker on record, each at most once every
detectInterval, for a queue's max offset and waits detectTimeout. A message group's sends keep their queue
(the consistent hash), and receives take brokers in turn, as Apache's do.

Sans-IO: the clock is passed in and the detector's probe is the caller's (the proxy's server runs the rounds).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from mqtools.client.fault import QueueRotation, not_available_for
from mqtools.remoting.bodies import MessageQueue

log = logging.getLogger(__name__)

#: Apache 5's MQFaultStrategy tables: a send of at least LATENCY_MAX_MS[i] keeps its broker out for
#: NOT_AVAILABLE_MS[i] (the largest i it reaches).
LATENCY_MAX_MS: tuple[int, ...] = (50, 100, 550, 1800, 3000, 5000, 15000)
NOT_AVAILABLE_MS: tuple[int, ...] = (0, 0, 2000, 5000, 6000, 10000, 30000)
ISOLATION_LATENCY_MS = 10_000
"""A failed send counts as this latency (updateFaultItem with isolation), which the tables make 10 s out."""
DETECT_ROUND_S = 3.0
"""How often the detector looks at the brokers on record (LatencyFaultToleranceImpl.startDetector)."""


def not_available_ms(latency_ms: float) -> int:
    """How long a send of this latency keeps its broker out."""
    return not_available_for(latency_ms, LATENCY_MAX_MS, NOT_AVAILABLE_MS)


@dataclass
class FaultItem:
    """One broker's record: its last send's latency, when it is available again, whether it is reachable."""

    latency_ms: float
    available_at_ms: float
    reachable: bool
    check_at_ms: float = 0.0


class SendFaultStrategy:
    """The brokers' records and the queue choice they steer; `enabled` is sendLatencyEnable."""

    def __init__(self, *, enabled: bool = False, detect_interval_ms: int = 2000,
                 clock_ms: Callable[[], float] = lambda: time.monotonic() * 1000) -> None:
        self.enabled = enabled
        self.detect_interval_ms = detect_interval_ms
        self._clock_ms = clock_ms
        self.items: dict[str, FaultItem] = {}

    def update(self, broker_name: str, latency_ms: float, *, failed: bool) -> None:
        """Remember a send's outcome (ProducerProcessor's updateFaultItem: isolation and unreachable on failure)."""
        if not self.enabled:
            return
        now = self._clock_ms()
        duration = not_available_ms(ISOLATION_LATENCY_MS if failed else latency_ms)
        item = self.items.get(broker_name)
        if item is None:
            item = self.items[broker_name] = FaultItem(latency_ms, 0.0, True)
        if item.reachable == failed:  # a change: said once, as Apache's proxy says it
            log.warning("%s is %s", broker_name, "unreachable: sends go to the other brokers until it answers"
                        if failed else "reachable again: it takes sends")
        item.latency_ms = latency_ms
        item.reachable = not failed
        if duration > 0:  # an isolation is only ever extended, never cut short by a later, shorter one
            item.available_at_ms = max(item.available_at_ms, now + duration)

    def available(self, broker_name: str) -> bool:
        item = self.items.get(broker_name)
        return item is None or self._clock_ms() >= item.available_at_ms

    def reachable(self, broker_name: str) -> bool:
        item = self.items.get(broker_name)
        return item is None or item.reachable

    def select(self, rotation: QueueRotation) -> MessageQueue:
        """The queue for a send without a message group."""
        if self.enabled:
            for usable in (lambda b: self.available(b) and self.reachable(b), self.available, self.reachable):
                for _ in range(len(rotation.queues)):
                    mq = rotation.queues[rotation.next_index() % len(rotation.queues)]
                    if usable(mq.broker_name):
                        return mq
        return rotation.next_queue()

    def due_for_detection(self) -> list[str]:
        """The brokers on record whose next check has come (detectByOneRound), their next set detectInterval on."""
        now = self._clock_ms()
        due = [name for name, item in self.items.items() if now >= item.check_at_ms]
        for name in due:
            self.items[name].check_at_ms = now + self.detect_interval_ms
        return due

    def detected(self, broker_name: str) -> None:
        """The detector got an answer: the broker may be chosen first again once it is available."""
        item = self.items.get(broker_name)
        if item is not None and not item.reachable:
            log.warning("%s answers the detector: it takes sends again once its isolation ends", broker_name)
            item.reachable = True

    def forget(self, broker_name: str) -> None:
        """A broker the routes no longer name (the detector resolves none for it)."""
        self.items.pop(broker_name, None)
