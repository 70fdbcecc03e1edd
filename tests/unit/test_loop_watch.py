"""LoopWatch: a held loop is named with its stack, and its end with the CPU spent meanwhile."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from mqtools.server.loop_watch import MAX_STACKS, HoldJudge, LoopWatch


def test_a_hold_takes_a_stack_each_hold_length_and_ends_with_its_length_and_cpu() -> None:
    judge = HoldJudge(hold_s=1.0)
    assert not judge.look(now=10.5, tick=10.0, cpu_at_tick=2.0)  # not yet held up
    assert judge.look(now=11.05, tick=10.0, cpu_at_tick=2.0)
    assert judge.stack_taken("a")
    assert not judge.look(now=11.5, tick=10.0, cpu_at_tick=2.0)
    assert judge.look(now=12.1, tick=10.0, cpu_at_tick=2.0)
    assert not judge.stack_taken("a")  # the same place: no second line
    assert judge.ended(tick=10.0, cpu=2.5) is None  # no new tick: still held
    assert judge.ended(tick=12.5, cpu=4.2) == pytest.approx((2.5, 2.2))
    assert judge.hold is None and judge.ended(tick=12.6, cpu=4.3) is None


def test_a_stuck_loop_logs_a_bounded_number_of_stacks() -> None:
    judge = HoldJudge(hold_s=1.0)
    logged = 0
    for i in range(1, 40):
        if judge.look(now=float(i), tick=0.0, cpu_at_tick=0.0) and judge.stack_taken(f"stack {i}"):
            logged += 1
    assert logged == MAX_STACKS


def _hold_the_loop(seconds: float) -> None:
    time.sleep(seconds)


def test_a_real_held_loop_is_named_where_it_is_held(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        watch = LoopWatch(hold_s=0.2, tick_s=0.02)
        watch.start()
        try:
            await asyncio.sleep(0.05)
            _hold_the_loop(0.6)  # sleeping, not computing
            await asyncio.sleep(0.2)  # the loop turns: the hold's end is told
        finally:
            watch.stop()

    with caplog.at_level(logging.WARNING, logger="mq.loop"):
        asyncio.run(main())
    lines = [r.getMessage() for r in caplog.records]
    stack = next(line for line in lines if line.startswith("event loop not turned for"))
    assert "_hold_the_loop" in stack and "time.sleep(seconds)" in stack
    ended = next(line for line in lines if line.startswith("event loop held up"))
    held_ms = int(ended.split()[4])
    assert held_ms >= 500 and "waiting, not computing" in ended


def test_a_late_watcher_tells_a_held_interpreter_from_a_process_not_run(caplog: pytest.LogCaptureFixture) -> None:
    """The watching thread woke late: with the process computing meanwhile the interpreter was held (mq's C code
    keeping the GIL), not the machine; it had blamed the machine either way."""
    with caplog.at_level(logging.WARNING, logger="mq.loop"):
        LoopWatch._woke_late(2.0, 1.9)
        LoopWatch._woke_late(2.0, 0.1)
    held, not_run = (r.getMessage() for r in caplog.records)
    assert "interpreter was held" in held and "not scheduled for 2000 ms" in not_run
