"""BrokerFastFailure's arithmetic and its verdict for a send arriving now."""

from __future__ import annotations

import asyncio
import time

from mqtools.server.broker.config import BrokerConfig
from mqtools.server.broker.fast_failure import BrokerFastFailure, LoopLag


def config(enabled: bool, wait_ms: int) -> BrokerConfig:
    return BrokerConfig(broker_fast_failure_enable=enabled, wait_time_mills_in_send_queue=wait_ms)


def test_lag_is_how_late_the_probe_fired_and_the_peak_survives_one_read() -> None:
    lag = LoopLag()
    assert lag.observe(10.0, 10.004) == 4
    assert lag.observe(10.05, 10.35) == 300
    assert lag.observe(10.4, 10.401) == 1
    assert lag.take_peak() == 300 and lag.take_peak() == 1
    assert lag.observe(11.0, 10.999) == 0  # early is not negative


def test_refusal_while_the_probe_is_overdue_by_the_limit_and_only_when_enabled() -> None:
    ff = BrokerFastFailure(config(True, 200))
    assert ff.refusal(5.0) is None  # no probe yet
    ff._due = 10.0
    assert ff.refusal(10.199) is None
    assert ff.refusal(10.25) == ("[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in "
                                 "queue: 250ms, size of queue: 0")
    off = BrokerFastFailure(config(False, 200))
    off._due = 10.0
    assert off.refusal(10.25) is None


def test_a_blocked_loop_shows_in_the_probe() -> None:
    async def run() -> int:
        ff = BrokerFastFailure(config(True, 50))
        await ff.start()
        await asyncio.sleep(0.12)
        time.sleep(0.3)  # noqa: ASYNC251 - the loop is blocked on purpose, as by a long put
        await asyncio.sleep(0.01)
        peak = ff.lag.take_peak()
        await ff.shutdown()
        return peak

    assert asyncio.run(run()) >= 200
