"""`mq spark-load produce`'s progress count (driver.stored_counter, progress.StoredCounter) over an in-memory
transport: each queue's max offset read in the background, so a hung master holds up neither the job's start nor
its end; each queue counted from its own first answer; n/a while a counted queue does not answer; never down."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

import pytest
from unit.client.fake_remoting import FakeRemoting, route_data

from mqtools.client import instance as instance_module
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingConnectError, RemotingTimeoutError
from mqtools.spark import driver
from mqtools.spark.progress import JobProgress, StoredCounter


class Brokers:
    """Max offsets per queue ("broker-a/0": 10); a queue's broker in `hung` waits out the request's timeout, in
    `down` refuses the connection."""

    def __init__(self, highs: dict[str, int]) -> None:
        self.highs = highs
        self.hung: set[str] = set()
        self.down: set[str] = set()

    async def answer(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        broker = addr.split(":")[0]
        if broker in self.hung:
            await asyncio.sleep(timeout)
            raise RemotingTimeoutError(addr, timeout, cmd.opaque)
        if broker in self.down:
            raise RemotingConnectError(addr, "refused")
        assert cmd.code in (RequestCode.GET_MAX_OFFSET, RequestCode.GET_MIN_OFFSET)
        high = self.highs[f"{broker}/{cmd.ext_fields['queueId']}"]
        return cmd.response(ResponseCode.SUCCESS, None,
                            {"offset": str(high if cmd.code == RequestCode.GET_MAX_OFFSET else 0)})


@pytest.fixture
def brokers(monkeypatch: pytest.MonkeyPatch) -> Iterator[Brokers]:
    """Every ClientInstance made (the admin session's) talks to these brokers: topic T, two queues on each."""
    world = Brokers({"broker-a/0": 10, "broker-a/1": 5, "broker-b/0": 100, "broker-b/1": 100})
    monkeypatch.setattr(instance_module, "RemotingClient", lambda *_a, **_k: FakeRemoting(
        {"T": route_data({"broker-a": 2, "broker-b": 2})}, world.answer))
    yield world


def eventually(read: Callable[[], int | None], want: int | None, timeout: float = 5.0) -> int | None:
    deadline = time.monotonic() + timeout
    while (got := read()) != want and time.monotonic() < deadline:
        time.sleep(0.02)
    return got


def test_a_hung_master_holds_up_neither_the_jobs_start_nor_its_end(brokers: Brokers) -> None:
    """One of two masters SIGSTOPped: the count's baseline asked it in line, so the job started only after the admin
    timeout (5 s of a 4-message run), and a read of it in flight when the job ended held the command's end up to
    as long again."""
    brokers.hung.add("broker-b")
    began = time.monotonic()
    with driver.stored_counter("ns:9876", "T", None, True) as counter:
        started = time.monotonic() - began
        assert counter is not None
        brokers.highs["broker-a/0"] += 3
        assert eventually(counter, 3) == 3, "broker-a's stores are counted"
        ending = time.monotonic()
    ended = time.monotonic() - ending
    assert started < 2.0, f"the job started {started:.2f}s late (the admin timeout is 5 s)"
    assert ended < 1.0, f"the count took {ended:.2f}s to close"


def test_each_queue_counts_from_its_first_answer_na_while_one_does_not_answer_never_down(brokers: Brokers) -> None:
    brokers.down.add("broker-b")
    with StoredCounter("ns:9876", "T", poll=0.02) as counter:
        assert counter() == 0
        brokers.highs.update({"broker-a/0": 15, "broker-a/1": 7})
        assert eventually(counter, 7) == 7
        brokers.down.clear()  # back: counted from its first answer, not from zero
        brokers.highs["broker-b/0"] = 130
        time.sleep(0.2)
        brokers.highs["broker-b/0"] = 131
        assert eventually(counter, 8) == 8
        brokers.down.add("broker-a")  # a counted queue does not answer: a sum without it would go down
        assert eventually(counter, None) is None
        brokers.down.clear()
        brokers.highs["broker-a/0"] = 12  # a store that went back (an unclean restart): the count does not go down
        assert eventually(counter, 8) == 8
        brokers.highs["broker-a/1"] = 20
        assert eventually(counter, 18) == 18  # 2 + 15 + 1, each queue from its own baseline


def test_no_route_reads_na_and_the_line_says_so(brokers: Brokers) -> None:
    with StoredCounter("ns:9876", "Unknown", poll=0.02, baseline_wait=0.2) as counter:
        assert counter() is None
    with driver.stored_counter("ns:9876", "T", None, False) as off:
        assert off is None
    assert JobProgress(None, 1, lambda: None, False, "produce T")._messages() == "messages n/a"
    assert JobProgress(None, 1, lambda: 1234, False, "produce T")._messages() == "1,234 messages"
