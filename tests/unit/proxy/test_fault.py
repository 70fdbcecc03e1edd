"""The proxy's send fault tolerance (sendLatencyEnable, startDetectorEnable) on a fake clock."""

from __future__ import annotations

import pytest

from mqtools.client.fault import QueueRotation
from mqtools.proxy.config import ProxyConfig, ProxyConfigError
from mqtools.proxy.fault import SendFaultStrategy, not_available_ms
from mqtools.remoting.bodies import MessageQueue


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000.0

    def __call__(self) -> float:
        return self.ms


def rotation(*brokers: str) -> QueueRotation:
    return QueueRotation([MessageQueue("T", b, q) for b in brokers for q in range(2)])


def brokers_of(strategy: SendFaultStrategy, rot: QueueRotation, n: int) -> list[str]:
    return [strategy.select(rot).broker_name for _ in range(n)]


@pytest.mark.parametrize(("latency", "out_for"), [
    (0, 0), (549, 0), (550, 2000), (1799, 2000), (1800, 5000), (3000, 6000), (5000, 10000), (14999, 10000),
    (15000, 30000)])
def test_apache_5_tables(latency: int, out_for: int) -> None:
    assert not_available_ms(latency) == out_for


def test_off_it_takes_queues_in_turn_whatever_happened() -> None:
    clock = Clock()
    strategy = SendFaultStrategy(enabled=False, clock_ms=clock)
    strategy.update("a", 3000, failed=True)
    assert strategy.items == {}
    assert brokers_of(strategy, rotation("a", "b"), 4) == ["a", "a", "b", "b"]


def test_a_failed_broker_is_left_until_a_send_to_it_succeeds() -> None:
    clock = Clock()
    strategy = SendFaultStrategy(enabled=True, clock_ms=clock)
    rot = rotation("a", "b")
    strategy.update("a", 3000, failed=True)
    assert not strategy.available("a") and not strategy.reachable("a")
    assert set(brokers_of(strategy, rot, 8)) == {"b"}
    clock.ms += 10_000  # available again, but not reachable: b still passes both filters
    assert strategy.available("a") and set(brokers_of(strategy, rot, 8)) == {"b"}
    strategy.update("a", 20, failed=False)
    assert sorted(set(brokers_of(strategy, rot, 8))) == ["a", "b"]


def test_with_every_broker_out_the_fallbacks_go_in_apaches_order() -> None:
    clock = Clock()
    strategy = SendFaultStrategy(enabled=True, clock_ms=clock)
    rot = rotation("a", "b")
    strategy.update("a", 3000, failed=True)   # out 10 s, unreachable
    strategy.update("b", 1000, failed=False)  # out 2 s, reachable
    assert set(brokers_of(strategy, rot, 4)) == {"b"}  # no broker is both: reachable ones
    clock.ms += 2000  # b available and reachable
    assert set(brokers_of(strategy, rot, 4)) == {"b"}
    strategy.update("b", 3000, failed=True)
    clock.ms += 10_000  # both available, neither reachable: available ones, in turn
    assert sorted(set(brokers_of(strategy, rot, 8))) == ["a", "b"]


def test_a_shorter_isolation_does_not_cut_a_longer_one_short() -> None:
    clock = Clock()
    strategy = SendFaultStrategy(enabled=True, clock_ms=clock)
    strategy.update("a", 3000, failed=True)
    strategy.update("a", 600, failed=False)  # 2 s, less than the 10 s left
    clock.ms += 5000
    assert not strategy.available("a") and strategy.reachable("a")
    clock.ms += 5000
    assert strategy.available("a")


def test_the_detector_asks_each_broker_once_per_interval_and_an_answer_makes_it_reachable() -> None:
    clock = Clock()
    strategy = SendFaultStrategy(enabled=True, detect_interval_ms=2000, clock_ms=clock)
    strategy.update("a", 3000, failed=True)
    strategy.update("b", 10, failed=False)
    assert strategy.due_for_detection() == ["a", "b"]
    clock.ms += 1999
    assert strategy.due_for_detection() == []
    clock.ms += 1
    assert strategy.due_for_detection() == ["a", "b"]
    strategy.detected("a")
    assert strategy.reachable("a") and not strategy.available("a")
    strategy.forget("b")
    strategy.detected("b")
    assert list(strategy.items) == ["a"]


def test_the_keys_load_from_an_apache_proxy_file() -> None:
    config = ProxyConfig()
    config.apply({"sendLatencyEnable": "true", "startDetectorEnable": True, "detectTimeout": 500,
                  "detectInterval": "1000"})
    assert (config.send_latency_enable, config.start_detector_enable, config.detect_timeout,
            config.detect_interval) == (True, True, 500, 1000)
    assert config.extra == {}
    with pytest.raises(ProxyConfigError, match="detectTimeout"):
        ProxyConfig().apply({"detectTimeout": 0})


def test_a_change_of_reachability_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    strategy = SendFaultStrategy(enabled=True, clock_ms=clock)
    with caplog.at_level("WARNING", logger="mqtools.proxy.fault"):
        strategy.update("a", 10, failed=False)
        strategy.update("a", 3000, failed=True)
        strategy.update("a", 3000, failed=True)
        strategy.detected("a")
        strategy.detected("a")
        strategy.update("a", 10, failed=False)
    assert [r.getMessage() for r in caplog.records] == [
        "a is unreachable: sends go to the other brokers until it answers",
        "a answers the detector: it takes sends again once its isolation ends"]
