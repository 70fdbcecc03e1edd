"""Producer queue choice with latency fault tolerance (MQFaultStrategy + LatencyFaultTolerance).

Sans-IO: time comes from an injected clock (seconds, like time.monotonic) and randomness from an
injected Random, so every table below can be tested without sleeping.

RocketMQ's MQFaultStrategy.selectOneMessageQueue returns a queue of the broker that just failed when
that broker is still marked available ("null == lastBrokerName || name.equals(lastBrokerName)"). That
is backwards: here the first pass takes an available broker *other than* the last one that failed.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mqtools.client.types import MessageQueue

LATENCY_MAX_MS: tuple[int, ...] = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_MS: tuple[int, ...] = (0, 0, 30000, 60000, 120000, 180000, 600000)
ISOLATION_LATENCY_MS = 30000
"""A failed send counts as this latency (MQFaultStrategy.updateFaultItem with isolation), which the
tables turn into 600 s of isolation."""


def not_available_for(latency_ms: float, latency_max_ms: Sequence[int], not_available_ms: Sequence[int]) -> int:
    """A fault table's isolation for a send of this latency: the entry of the largest latencyMax it reaches (4.x's
    tables here, 5.x's in the proxy's fault tolerance)."""
    for bound, duration in zip(reversed(latency_max_ms), reversed(not_available_ms), strict=True):
        if latency_ms >= bound:
            return duration
    return 0


class QueueRotation:
    """A topic's publish queues with the shared round-robin counter (TopicPublishInfo.sendWhichQueue)."""

    def __init__(self, queues: Sequence[MessageQueue], start: int = 0) -> None:
        self.queues = list(queues)
        self._counter = itertools.count(start)

    def next_index(self) -> int:
        return next(self._counter)

    def next_queue(self, avoid_broker: str | None = None) -> MessageQueue:
        """Round robin, skipping queues of `avoid_broker` unless it holds every queue."""
        n = len(self.queues)
        for _ in range(n):
            mq = self.queues[self.next_index() % n]
            if mq.broker_name != avoid_broker:
                return mq
        return self.queues[self.next_index() % n]

    def queue_ids_of(self, broker_name: str) -> list[int]:
        return [mq.queue_id for mq in self.queues if mq.broker_name == broker_name]


@dataclass
class FaultItem:
    name: str
    latency_ms: float
    start_ms: float
    """The broker counts as available again from this instant on."""

    def available(self, now_ms: float) -> bool:
        return now_ms >= self.start_ms

    def rank(self, now_ms: float) -> tuple[bool, float, float]:
        """Best first: available ones, then lower latency, then sooner back."""
        return (not self.available(now_ms), self.latency_ms, self.start_ms)


class LatencyFaultTolerance:
    """Per-broker latency and the instant it becomes available again."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, rng: random.Random | None = None) -> None:
        self._clock = clock
        self._rng = rng or random.Random()
        self._items: dict[str, FaultItem] = {}
        self._which_worst = itertools.count()

    def now_ms(self) -> float:
        return self._clock() * 1000.0

    def update(self, name: str, latency_ms: float, not_available_ms: float) -> None:
        self._items[name] = FaultItem(name, latency_ms, self.now_ms() + not_available_ms)

    def is_available(self, name: str) -> bool:
        item = self._items.get(name)
        return item is None or item.available(self.now_ms())

    def remove(self, name: str) -> None:
        self._items.pop(name, None)

    def item(self, name: str) -> FaultItem | None:
        return self._items.get(name)

    def pick_one_at_least(self, avoid: str | None = None) -> str | None:
        """A broker from the better half of those on record (ties broken at random).

        `avoid` (the broker that just failed) is left out unless it is the only one on record.
        """
        items = [i for i in self._items.values() if i.name != avoid] or list(self._items.values())
        if not items:
            return None
        self._rng.shuffle(items)
        now = self.now_ms()
        items.sort(key=lambda i: i.rank(now))
        half = len(items) // 2
        if half <= 0:
            return items[0].name
        return items[next(self._which_worst) % half].name


class MQFaultStrategy:
    """Choose the queue for the next send attempt and learn from how attempts went."""

    def __init__(self, *, enabled: bool = False, clock: Callable[[], float] = time.monotonic,
                 rng: random.Random | None = None,
                 latency_max_ms: Sequence[int] = LATENCY_MAX_MS,
                 not_available_ms: Sequence[int] = NOT_AVAILABLE_MS) -> None:
        if len(latency_max_ms) != len(not_available_ms):
            raise ValueError("latencyMax and notAvailableDuration must have the same length")
        self.enabled = enabled
        self.tolerance = LatencyFaultTolerance(clock, rng)
        self.latency_max_ms = tuple(latency_max_ms)
        self.not_available_ms = tuple(not_available_ms)

    def not_available_duration(self, latency_ms: float) -> int:
        """The isolation a send of this latency earns (computeNotAvailableDuration)."""
        return not_available_for(latency_ms, self.latency_max_ms, self.not_available_ms)

    def update_fault_item(self, broker_name: str, latency_ms: float, *, isolation: bool) -> None:
        if not self.enabled:
            return
        duration = self.not_available_duration(ISOLATION_LATENCY_MS if isolation else latency_ms)
        self.tolerance.update(broker_name, latency_ms, duration)

    def select_one_queue(self, rotation: QueueRotation, last_broker_name: str | None) -> MessageQueue:
        if not rotation.queues:
            raise ValueError("no queue to choose from")
        if not self.enabled:
            return rotation.next_queue(last_broker_name)
        n = len(rotation.queues)
        index = rotation.next_index()
        for i in range(n):
            mq = rotation.queues[(index + i) % n]
            if mq.broker_name != last_broker_name and self.tolerance.is_available(mq.broker_name):
                return mq
        return self._least_bad(rotation, last_broker_name)

    def _least_bad(self, rotation: QueueRotation, last_broker_name: str | None) -> MessageQueue:
        """No broker is both available and different from the last failure: take the best on record."""
        broker = self.tolerance.pick_one_at_least(avoid=last_broker_name)
        if broker is not None:
            ids = rotation.queue_ids_of(broker)
            if ids:
                return MessageQueue(rotation.queues[0].topic, broker, ids[rotation.next_index() % len(ids)])
            self.tolerance.remove(broker)
        return rotation.next_queue(last_broker_name)
