"""BrokerFastFailure's arithmetic and its verdict for a send arriving now."""

from __future__ import annotations

import asyncio
import time

from mqtools.server.broker.config import BrokerConfig
from mqtools.server.broker.fast_failure import BrokerFastFailure, SendWait


def config(enabled: bool, wait_ms: int) -> BrokerConfig:
    return BrokerConfig(broker_fast_failure_enable=enabled, wait_time_mills_in_send_queue=wait_ms)


def test_a_sends_wait_is_how_overdue_the_probe_was_and_the_peak_survives_one_read() -> None:
    wait = SendWait()
    assert wait.observe(None, 5.0) == 0  # no probe yet
    assert wait.observe(10.0, 10.004) == 4
    assert wait.observe(10.05, 10.35) == 300
    assert wait.observe(10.4, 10.401) == 1
    assert wait.take_peak() == 300 and wait.take_peak() == 0
    assert wait.observe(11.0, 10.999) == 0  # before the probe was due is no wait


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


def test_a_blocked_loop_shows_in_the_wait_of_a_send_handled_after_it_and_only_then() -> None:
    async def run() -> tuple[int, int, str | None]:
        ff = BrokerFastFailure(config(True, 50))
        await ff.start()
        await asyncio.sleep(0.12)
        time.sleep(0.3)  # noqa: ASYNC251 - the loop is blocked on purpose, as by a long put
        await asyncio.sleep(0.01)
        idle = ff.wait.take_peak()  # the stall, with no send waiting through it
        time.sleep(0.3)  # noqa: ASYNC251
        busy = ff.refusal()  # a send that arrived during this one
        peak = ff.wait.take_peak()
        await ff.shutdown()
        return idle, peak, busy

    idle, peak, busy = asyncio.run(run())
    assert idle == 0 and peak >= 250 and busy is not None and "[TIMEOUT_CLEAN_QUEUE]" in busy
