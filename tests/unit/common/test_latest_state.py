"""LatestStateWriter: one write at a time, changes made meanwhile share the next one, each caller answered
once a write that holds its change has ended, with that write's failure."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest

from mqtools.common.latest_state import LatestStateWriter


class Disk:
    """Snapshots of a counter; each write held until the test lets it go."""

    def __init__(self) -> None:
        self.state = 0
        self.taken: list[int] = []
        self.written: list[int] = []
        self.gate = threading.Semaphore(0)
        self.fail: OSError | None = None

    def take(self) -> Callable[[], None]:
        snapshot = self.state
        self.taken.append(snapshot)

        def job() -> None:
            assert self.gate.acquire(timeout=10)
            if self.fail is not None:
                raise self.fail
            self.written.append(snapshot)

        return job


async def test_changes_made_while_a_write_runs_share_the_next_one() -> None:
    disk = Disk()
    writer = LatestStateWriter(disk.take)
    disk.state = 1
    first = asyncio.ensure_future(writer.write())
    await asyncio.sleep(0)
    later = []
    for n in range(2, 50):
        disk.state = n
        later.append(asyncio.ensure_future(writer.write()))
    await asyncio.sleep(0.01)
    assert disk.taken == [1] and not first.done()
    disk.gate.release()
    await first
    assert not any(task.done() for task in later)  # the second write began only now, with every change in it
    disk.gate.release()
    await asyncio.gather(*later)
    assert disk.taken == [1, 49] and disk.written == [1, 49] and writer.pending is None


async def test_a_failed_write_fails_its_callers_and_the_next_write_goes_ahead() -> None:
    disk = Disk()
    writer = LatestStateWriter(disk.take)
    disk.fail = OSError(28, "No space left on device")
    first = asyncio.ensure_future(writer.write())
    await asyncio.sleep(0)
    queued = asyncio.ensure_future(writer.write())
    disk.gate.release()
    with pytest.raises(OSError, match="No space"):
        await first
    disk.fail = None
    disk.gate.release()
    await queued
    assert disk.written == [0]


async def test_a_cancelled_caller_does_not_cancel_the_write_others_await() -> None:
    disk = Disk()
    writer = LatestStateWriter(disk.take)
    writer.request()
    disk.state = 1
    impatient = asyncio.ensure_future(writer.write())
    patient = asyncio.ensure_future(writer.write())
    await asyncio.sleep(0)
    impatient.cancel()
    await asyncio.sleep(0)
    disk.gate.release()
    disk.gate.release()
    await patient
    assert disk.written == [0, 1] and impatient.cancelled()


async def test_a_snapshot_that_cannot_be_taken_fails_that_write_only() -> None:
    calls = 0

    def take() -> Callable[[], None]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ValueError("cannot render")
        return lambda: None

    writer = LatestStateWriter(take)
    with pytest.raises(ValueError, match="cannot render"):
        await writer.write()
    await writer.write()
    assert calls == 2 and writer.pending is None


async def test_drain_waits_for_the_running_write_and_the_pending_one() -> None:
    disk = Disk()
    writer = LatestStateWriter(disk.take)
    writer.request()
    disk.state = 1
    writer.request()
    drained = asyncio.ensure_future(writer.drain())
    disk.gate.release()
    await asyncio.sleep(0.05)
    assert not drained.done()
    disk.gate.release()
    await drained
    assert disk.written == [0, 1]
