"""MQFaultStrategy / LatencyFaultTolerance on a fake clock, table by table."""

from __future__ import annotations

import random

import pytest

from mqtools.client.fault import (
    LATENCY_MAX_MS,
    NOT_AVAILABLE_MS,
    LatencyFaultTolerance,
    MQFaultStrategy,
    QueueRotation,
)
from mqtools.client.types import MessageQueue


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance_ms(self, ms: float) -> None:
        self.now += ms / 1000.0


def queues(*brokers: str, per_broker: int = 2) -> list[MessageQueue]:
    return [MessageQueue("T", b, q) for b in brokers for q in range(per_broker)]


def strategy(clock: FakeClock, enabled: bool = True) -> MQFaultStrategy:
    return MQFaultStrategy(enabled=enabled, clock=clock, rng=random.Random(7))


def test_the_seed_tables() -> None:
    assert LATENCY_MAX_MS == (50, 100, 550, 1000, 2000, 3000, 15000)
    assert NOT_AVAILABLE_MS == (0, 0, 30000, 60000, 120000, 180000, 600000)


@pytest.mark.parametrize(("latency", "isolated_for"), [
    (0, 0), (49, 0), (50, 0), (99, 0), (100, 0), (549, 0), (550, 30000), (999, 30000),
    (1000, 60000), (1999, 60000), (2000, 120000), (2999, 120000), (3000, 180000), (14999, 180000),
    (15000, 600000), (10**9, 600000),
])
def test_latency_to_not_available_duration(latency: int, isolated_for: int) -> None:
    assert MQFaultStrategy().not_available_duration(latency) == isolated_for


@pytest.mark.parametrize(("latency", "isolation", "back_after_ms"), [
    (20, False, 0),
    (600, False, 30000),
    (2500, False, 120000),
    (20, True, 600000),
])
def test_a_broker_comes_back_exactly_when_its_isolation_ends(latency: int, isolation: bool,
                                                             back_after_ms: int) -> None:
    clock = FakeClock()
    s = strategy(clock)
    s.update_fault_item("a", latency, isolation=isolation)
    if back_after_ms:
        assert not s.tolerance.is_available("a")
        clock.advance_ms(back_after_ms - 1)
        assert not s.tolerance.is_available("a")
        clock.advance_ms(1)
    assert s.tolerance.is_available("a")


def test_disabled_strategy_records_nothing_and_round_robins_avoiding_the_last_failure() -> None:
    clock = FakeClock()
    s = strategy(clock, enabled=False)
    s.update_fault_item("a", 5000, isolation=True)
    assert s.tolerance.item("a") is None
    rotation = QueueRotation(queues("a", "b"))
    picked = [s.select_one_queue(rotation, None) for _ in range(4)]
    assert [(m.broker_name, m.queue_id) for m in picked] == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert all(s.select_one_queue(rotation, "a").broker_name == "b" for _ in range(6))


def test_after_a_failure_the_next_choice_avoids_the_failed_broker_even_if_it_looks_available() -> None:
    """The seed's flaw: its first pass *insists* on lastBrokerName. Ours moves on."""
    clock = FakeClock()
    s = strategy(clock)
    rotation = QueueRotation(queues("a", "b", "c"))
    for _ in range(20):
        assert s.select_one_queue(rotation, "b").broker_name != "b"


def test_isolated_brokers_are_skipped_until_their_time_is_up() -> None:
    clock = FakeClock()
    s = strategy(clock)
    rotation = QueueRotation(queues("a", "b"))
    s.update_fault_item("a", 10, isolation=True)
    assert {s.select_one_queue(rotation, None).broker_name for _ in range(10)} == {"b"}
    clock.advance_ms(600000)
    assert {s.select_one_queue(rotation, None).broker_name for _ in range(10)} == {"a", "b"}


def test_slow_broker_is_avoided_for_its_latency_window_only() -> None:
    clock = FakeClock()
    s = strategy(clock)
    rotation = QueueRotation(queues("a", "b"))
    s.update_fault_item("a", 1200, isolation=False)
    assert {s.select_one_queue(rotation, None).broker_name for _ in range(10)} == {"b"}
    clock.advance_ms(60000)
    assert "a" in {s.select_one_queue(rotation, None).broker_name for _ in range(10)}


def test_when_all_are_isolated_pick_one_at_least_takes_the_better_half() -> None:
    clock = FakeClock()
    s = strategy(clock)
    rotation = QueueRotation(queues("a", "b", "c", "d"))
    s.update_fault_item("a", 100, isolation=True)
    s.update_fault_item("b", 200, isolation=True)
    s.update_fault_item("c", 9000, isolation=True)
    s.update_fault_item("d", 8000, isolation=True)
    chosen = [s.select_one_queue(rotation, None) for _ in range(8)]
    assert {m.broker_name for m in chosen} == {"a", "b"}
    assert all(m.queue_id in (0, 1) and m.topic == "T" for m in chosen)


def test_pick_one_at_least_avoids_the_last_failure_when_there_is_a_choice() -> None:
    clock = FakeClock()
    s = strategy(clock)
    rotation = QueueRotation(queues("a", "b"))
    s.update_fault_item("a", 10, isolation=True)
    s.update_fault_item("b", 5000, isolation=True)
    assert {s.select_one_queue(rotation, "a").broker_name for _ in range(6)} == {"b"}


def test_available_brokers_rank_before_isolated_ones() -> None:
    clock = FakeClock()
    t = LatencyFaultTolerance(clock, random.Random(1))
    t.update("slow-but-up", 2000, 0)
    t.update("fast-but-down", 1, 60000)
    assert t.pick_one_at_least() == "slow-but-up"


def test_a_broker_that_left_the_route_is_forgotten() -> None:
    clock = FakeClock()
    s = strategy(clock)
    s.update_fault_item("gone", 1, isolation=False)
    s.update_fault_item("a", 10, isolation=True)
    rotation = QueueRotation(queues("a"))
    mq = s.select_one_queue(rotation, "a")
    assert mq.broker_name == "a"
    assert s.tolerance.item("gone") is None


def test_single_broker_topic_keeps_sending_to_it() -> None:
    clock = FakeClock()
    s = strategy(clock)
    rotation = QueueRotation(queues("a", per_broker=4))
    s.update_fault_item("a", 10, isolation=True)
    assert [s.select_one_queue(rotation, "a").broker_name for _ in range(3)] == ["a", "a", "a"]


def test_mismatched_tables_are_refused() -> None:
    with pytest.raises(ValueError, match="same length"):
        MQFaultStrategy(latency_max_ms=(1, 2), not_available_ms=(0,))
