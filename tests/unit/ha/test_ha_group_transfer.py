"""Group transfer: one ack releases many waiters; deadlines with a fake clock; isSlaveOK."""

from __future__ import annotations

import asyncio

import pytest

from mqtools.server.ha.group_transfer import (
    GroupTransfer,
    GroupTransferService,
    Replicated,
    ReplicationProgress,
)


def test_one_ack_releases_every_covered_waiter() -> None:
    group = GroupTransfer()
    waiters = [group.submit(end, deadline=100.0) for end in (300, 100, 200, 400)]
    released = group.release(250)
    assert [w.end_offset for w in released] == [100, 200]
    assert len(group) == 2
    assert [w.end_offset for w in group.release(1000)] == [300, 400]
    assert all(w.done for w in waiters)


def test_deadlines_expire_with_a_fake_clock() -> None:
    group = GroupTransfer()
    group.submit(100, deadline=5.0)
    group.submit(200, deadline=3.0)
    assert group.next_deadline() == 3.0
    assert group.expire(now=2.9) == []
    assert [w.end_offset for w in group.expire(now=3.0)] == [200]
    assert group.next_deadline() == 5.0
    assert [w.end_offset for w in group.release(150)] == [100]
    assert group.next_deadline() is None
    assert group.expire(now=99.0) == []


def test_released_waiter_does_not_expire_and_vice_versa() -> None:
    group = GroupTransfer()
    group.submit(100, deadline=1.0)
    group.submit(200, deadline=1.0)
    group.release(100)
    assert [w.end_offset for w in group.expire(2.0)] == [200]
    assert group.release(10_000) == []


def test_released_waiters_leave_the_deadline_order_at_once() -> None:
    """A broker taking thousands of sends a second acked in time: the deadline heap must not keep every released
    waiter until its deadline (the service no longer looks at it per submit when its timer comes first anyway)."""
    group = GroupTransfer()
    for end in range(1, 1001):
        group.submit(end, deadline=100.0 + end)
        group.release(end)
    assert group._by_deadline == [] and group.next_deadline() is None


def test_progress_is_max_over_slaves_and_never_decreases() -> None:
    progress = ReplicationProgress(fallbehind_max=1000)
    assert progress.on_ack(500)
    assert not progress.on_ack(300)
    assert progress.push2slave_max_offset == 500
    assert progress.fall_behind(800) == 300


def test_slave_ok_needs_a_connection_and_a_small_gap() -> None:
    progress = ReplicationProgress(fallbehind_max=1000)
    progress.on_ack(500)
    assert not progress.is_slave_ok(600)
    progress.connection_count = 1
    assert progress.is_slave_ok(1499)
    assert not progress.is_slave_ok(1500)



async def wait(service: GroupTransferService, end_offset: int, timeout: float) -> Replicated:
    """when_replicated awaited, as a SYNC_MASTER put's answer waits on it."""
    future: asyncio.Future[Replicated] = asyncio.get_running_loop().create_future()
    service.when_replicated(end_offset, timeout, future.set_result)
    return await future

async def test_service_releases_many_waits_with_one_ack() -> None:
    service = GroupTransferService(ReplicationProgress())
    tasks = [asyncio.create_task(wait(service, end, timeout=30.0)) for end in (10, 20, 30, 40)]
    await asyncio.sleep(0)
    assert service.pending() == 4
    service.notify_ack(30)
    await asyncio.sleep(0)
    assert [t.done() for t in tasks] == [True, True, True, False]
    assert all(t.result() is Replicated.ACKED for t in tasks[:3])
    service.notify_ack(40)
    assert await tasks[3] is Replicated.ACKED
    assert service.pending() == 0


async def test_service_times_out_without_ack() -> None:
    service = GroupTransferService(ReplicationProgress())
    slow = asyncio.create_task(wait(service, 100, timeout=0.05))
    fast_ok = asyncio.create_task(wait(service, 50, timeout=10.0))
    assert await slow is Replicated.TIMED_OUT
    service.notify_ack(60)
    assert await fast_ok is Replicated.ACKED


async def test_already_acked_offset_returns_immediately() -> None:
    service = GroupTransferService(ReplicationProgress())
    service.notify_ack(100)
    assert await wait(service, 100, timeout=0.0) is Replicated.ACKED


async def test_shutdown_fails_pending_waits() -> None:
    service = GroupTransferService(ReplicationProgress())
    task = asyncio.create_task(wait(service, 100, timeout=30.0))
    await asyncio.sleep(0)
    service.shutdown()
    assert await task is Replicated.TIMED_OUT


async def test_waits_end_at_once_when_no_slave_is_left() -> None:
    """The last slave connection closes: puts waiting for it are answered now, not at their deadline."""
    service = GroupTransferService(ReplicationProgress())
    tasks = [asyncio.create_task(wait(service, end, timeout=30.0)) for end in (10, 20)]
    await asyncio.sleep(0)
    service.no_slave_left()
    assert [await t for t in tasks] == [Replicated.NO_SLAVE, Replicated.NO_SLAVE]
    assert service.pending() == 0
    later = asyncio.create_task(wait(service, 30, timeout=30.0))
    await asyncio.sleep(0)
    service.notify_ack(30)
    assert await later is Replicated.ACKED


async def test_a_failing_callback_is_logged_and_the_others_released_with_it_still_run(
        caplog: pytest.LogCaptureFixture) -> None:
    service = GroupTransferService(ReplicationProgress())
    heard: list[tuple[int, Replicated]] = []

    def failing(outcome: Replicated) -> None:
        raise RuntimeError("a broken answer")

    service.when_replicated(10, 30.0, lambda outcome: heard.append((10, outcome)))
    service.when_replicated(20, 30.0, failing)
    service.when_replicated(30, 30.0, lambda outcome: heard.append((30, outcome)))
    service.notify_ack(30)
    assert heard == [(10, Replicated.ACKED), (30, Replicated.ACKED)] and service.pending() == 0
    assert any("offset 20 failed" in r.getMessage() and r.exc_info for r in caplog.records)


async def test_the_service_calls_back_with_what_its_outcomes_map_each_end_to() -> None:
    """The HA services' PutMessageStatus: the store's callback is registered as it is, with no wrapper a put."""
    outcomes = {Replicated.ACKED: "ok", Replicated.TIMED_OUT: "late", Replicated.NO_SLAVE: "alone"}
    service = GroupTransferService(ReplicationProgress(), outcomes=outcomes)
    acked, late = (asyncio.create_task(wait(service, end, timeout=t)) for end, t in ((10, 30.0), (20, 0.01)))
    await asyncio.sleep(0)
    service.notify_ack(10)
    assert (await acked, await late) == ("ok", "late")
    assert await wait(service, 5, timeout=1.0) == "ok"  # acked already
    alone = asyncio.create_task(wait(service, 30, timeout=30.0))
    await asyncio.sleep(0)
    service.no_slave_left()
    assert await alone == "alone"
