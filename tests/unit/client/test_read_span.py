"""MQAdmin.read_span, the one loop every 'read a queue span' command uses, over a queue held in memory."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from mqtools.client.admin import MQAdmin
from mqtools.client.types import PullResult, PullStatus
from mqtools.common.message import MessageExt
from mqtools.remoting.bodies import MessageQueue

MQ = MessageQueue("T", "broker-a", 0)


def queue_of(size: int, *, filtered: frozenset[int] = frozenset(), end_status: PullStatus | None = None
             ) -> tuple[Callable[..., Awaitable[PullResult]], list[tuple[int, int]]]:
    """Pull answers of a queue of `size` messages; offsets in `filtered` do not match the expression."""
    calls: list[tuple[int, int]] = []

    async def pull(mq: MessageQueue, offset: int, *, max_nums: int = 32, expression: str = "*",
                   group: str = "", broker_id: int = 0) -> PullResult:
        calls.append((offset, max_nums))
        if offset >= size:
            return PullResult(end_status or PullStatus.NO_NEW_MSG, offset, 0, size)
        upto = min(size, offset + max_nums)
        found = [MessageExt("T", b"", queue_offset=i) for i in range(offset, upto) if i not in filtered]
        return PullResult(PullStatus.FOUND if found else PullStatus.NO_MATCHED_MSG, upto, 0, size, found)

    return pull, calls


async def read(admin: MQAdmin, begin: int, end: int, **kwargs: object) -> list[PullResult]:
    return [r async for r in admin.messages.read_span(MQ, begin, end, **kwargs)]  # type: ignore[arg-type]


@pytest.fixture
async def admin() -> MQAdmin:
    return MQAdmin("127.0.0.1:9876")


async def test_an_exact_span_reads_every_offset_once_and_nothing_past_its_end(admin: MQAdmin,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pull, calls = queue_of(100)
    monkeypatch.setattr(admin.messages, "pull_messages", pull)
    results = await read(admin, 10, 75)
    assert [m.queue_offset for r in results for m in r.messages] == list(range(10, 75))
    assert calls == [(10, 32), (42, 32), (74, 1)]  # no pull asks for more than the span holds


async def test_a_limit_stops_the_span_early(admin: MQAdmin, monkeypatch: pytest.MonkeyPatch) -> None:
    pull, calls = queue_of(100)
    monkeypatch.setattr(admin.messages, "pull_messages", pull)
    results = await read(admin, 0, 100, limit=40)
    assert sum(len(r.messages) for r in results) == 40 and calls == [(0, 32), (32, 8)]


async def test_unmatched_batches_move_on_and_an_ending_status_is_yielded_last(admin: MQAdmin,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pull, _ = queue_of(40, filtered=frozenset(range(32)))
    monkeypatch.setattr(admin.messages, "pull_messages", pull)
    results = await read(admin, 0, 50, exact=False)
    assert [r.status for r in results] == [PullStatus.NO_MATCHED_MSG, PullStatus.FOUND, PullStatus.NO_NEW_MSG]
    assert [m.queue_offset for m in results[1].messages] == list(range(32, 40))


async def test_an_answer_that_does_not_move_on_ends_the_span(admin: MQAdmin, monkeypatch: pytest.MonkeyPatch) -> None:
    async def stuck(mq: MessageQueue, offset: int, **_: object) -> PullResult:
        return PullResult(PullStatus.NO_MATCHED_MSG, offset, 0, 10)

    monkeypatch.setattr(admin.messages, "pull_messages", stuck)
    assert len(await read(admin, 0, 10)) == 1
