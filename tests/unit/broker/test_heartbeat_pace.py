"""HeartbeatPace: a controller-mode broker names the heartbeat gaps that bring it close to its controllers'
timeout (the period plus a third of the timeout), and no other."""

import pytest

from mqtools.server.broker.replicas_manager import HeartbeatPace


def test_only_a_gap_past_the_period_and_a_third_of_the_timeout_is_named() -> None:
    pace = HeartbeatPace(1000, 3000)  # the drills' settings: named past 2,000 ms
    assert pace.beat(10.0) is None  # the first has no gap
    assert pace.beat(11.0) is None
    assert pace.beat(12.9) is None  # 1,900 ms: late, not yet close
    assert pace.beat(15.4) == pytest.approx(2500.0)
    assert pace.beat(16.4) is None  # on time again
    assert HeartbeatPace(1000, 10_000).beat(0.0) is None  # Apache's 10 s timeout: named past 4,333 ms
    slow = HeartbeatPace(1000, 10_000)
    slow.beat(0.0)
    assert slow.beat(4.3) is None and slow.beat(8.7) == pytest.approx(4400.0)
