"""A check round of the transaction check service on a busy or slow store: its copies never wait for the flush,
it lets the broker's loop turn while it reads and copies, and its memory of ended transactions stays bounded."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from support.inprocbroker import inproc_broker
from support.loopturns import loop_turns

from mqtools.common import properties as P
from mqtools.common.loop import PUTS_PER_TURN
from mqtools.common.message import MessageExtBrokerInner
from mqtools.server.broker.app import BrokerController
from mqtools.server.broker.topic_config import TopicConfig
from mqtools.server.broker.transaction import bridge as bridge_module
from mqtools.server.broker.transaction.bridge import (
    CHECK_MAX_TIME_TOPIC,
    HALF_TOPIC,
    TransactionalMessageBridge,
)
from mqtools.server.broker.transaction.check_service import RECORDS_PER_TURN
from mqtools.server.store.results import PutMessageResult

pytestmark = pytest.mark.timeout(60)

TOPIC = "TxT"
HOUR_MS = 3_600_000


def _inner(i: int, born: int, wait: bool) -> MessageExtBrokerInner:
    props = {P.TRAN_MSG: "true", P.PGROUP: "PG", P.UNIQ_KEY: f"K{i:031d}"}
    if not wait:
        props[P.WAIT] = "false"
    return MessageExtBrokerInner(topic=TOPIC, body=b"x" * 100, properties=props, queue_id=0, born_timestamp=born,
                                 born_host=("127.0.0.1", 1), store_host=("127.0.0.1", 2),
                                 properties_string=P.properties_to_string(props))


def _halves(b: BrokerController, n: int, age_ms: int = 10_000) -> TransactionalMessageBridge:
    """n half messages born `age_ms` ago, put without waiting (the copies' waits are the test's)."""
    b.topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=1, write_queue_nums=1))
    bridge = b.transactions
    born = int(time.time() * 1000) - age_ms
    for i in range(n):
        assert isinstance(bridge.put_half(_inner(i, born, wait=False)), PutMessageResult)
    return bridge


@pytest.mark.parametrize("check_max", [15, 0])
async def test_a_copy_stored_with_a_timed_out_flush_counts_as_stored(tmp_path: Path, check_max: int) -> None:
    """On SYNC_FLUSH each check copy (and each copy past transactionCheckMax) waited for the flush, as its half
    message's properties asked, and a wait that timed out stopped the round without advancing: a new copy every
    round, nobody asked."""
    async with inproc_broker(tmp_path, flush_disk_type="SYNC_FLUSH", transaction_time_out=0,
                             transaction_check_interval=HOUR_MS, transaction_check_max=check_max) as (b, _):
        b.topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=1, write_queue_nums=1))
        put = b.transactions.put_half(_inner(0, int(time.time() * 1000) - 10_000, wait=True))
        assert not isinstance(put, PutMessageResult)
        assert (await put).status.name == "PUT_OK"
        b.store.config.sync_flush_timeout = 0  # every wait for the flush times out from now on
        await asyncio.sleep(0.01)
        done = await b.transaction_check.check_once()
        assert b.transactions.progress(HALF_TOPIC) == 1
        if check_max:
            assert (done.unasked, b.transactions.max_offset(HALF_TOPIC)) == (1, 2)
            copy = b.transactions.half_at(1)
            assert copy is not None and P.WAIT not in copy.properties  # the stored copy keeps the half's properties
        else:
            assert done.discarded == 1 and b.store.get_max_offset_in_queue(CHECK_MAX_TIME_TOPIC, 0) == 1


async def test_a_round_reading_many_ended_transactions_lets_the_loop_turn(tmp_path: Path) -> None:
    """150,000 transactions ended between two rounds held the loop 1.9 s in one round."""
    n = 4 * RECORDS_PER_TURN
    async with inproc_broker(tmp_path, transaction_check_interval=HOUR_MS) as (b, _):
        bridge = _halves(b, n)
        for i in range(n):
            half = bridge.half_at(i)
            assert half is not None and isinstance(bridge.put_op(half), PutMessageResult)
        async with loop_turns() as turns:
            done = await b.transaction_check.check_once()
        assert done.checked + done.unasked == 0 and bridge.progress(HALF_TOPIC) == n
        assert turns.count >= 2 * n // RECORDS_PER_TURN - 1  # n ops and n half messages read


async def test_a_round_copying_many_open_transactions_lets_the_loop_turn(tmp_path: Path) -> None:
    n = 10 * PUTS_PER_TURN
    async with inproc_broker(tmp_path, transaction_check_interval=HOUR_MS, transaction_time_out=0) as (b, _):
        bridge = _halves(b, n)
        await asyncio.sleep(0.01)  # a round stops at a half message stored in the millisecond it began
        async with loop_turns() as turns:
            done = await b.transaction_check.check_once()
        assert done.unasked == n and bridge.max_offset(HALF_TOPIC) == 2 * n
        assert turns.count >= n // PUTS_PER_TURN - 1


async def test_the_memory_of_ended_transactions_is_bounded_as_it_grows(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """It was trimmed only at a round's end: every transaction ended between two rounds was kept until then."""
    limit = 50
    monkeypatch.setattr(bridge_module, "ENDED_MEMORY", limit)
    async with inproc_broker(tmp_path, transaction_check_interval=HOUR_MS) as (b, _):
        bridge = _halves(b, 3 * limit)
        for i in range(3 * limit):
            half = bridge.half_at(i)
            assert half is not None
            bridge.put_op(half)
            assert len(bridge.ended) <= limit
        assert 3 * limit - 1 in bridge.ended  # the newest are kept, by their half message's queue offset
