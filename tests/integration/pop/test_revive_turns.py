"""The revive round reads thousands of acks and checkpoints under load; it must let the broker's loop turn
between a few batches of them, or every POP and ACK that arrives meanwhile waits for the whole read."""

from __future__ import annotations

import asyncio

import pytest

from mqtools.server.broker.app import BrokerController
from mqtools.server.broker.pop.records import AckMsg, ack_message
from mqtools.server.broker.pop.revive import BATCHES_PER_TURN, READ_BATCH
from mqtools.server.store.results import PutMessageResult

pytestmark = pytest.mark.timeout(60)

RECORDS = 4_000


async def test_a_revive_round_lets_the_loop_turn_while_it_reads(revive_broker: BrokerController) -> None:
    state = revive_broker.pop.s
    revive = state.revive
    now_ms = state.now_ms()
    for i in range(RECORDS):
        ack = AckMsg(ack_offset=i, start_offset=i, consumer_group="G", topic="T", queue_id=0, pop_time=now_ms)
        put = state.put_record(ack_message(state.revive_topic, 0, ack, now_ms, state.host))
        assert isinstance(put, PutMessageResult) and put.status.name == "PUT_OK"

    turns = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal turns
        while not stop.is_set():
            await asyncio.sleep(0)
            turns += 1

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    start = turns
    await revive.run_once()
    during = turns - start
    stop.set()
    await tick
    ledger = revive.ledgers[0]
    assert ledger.read_offset == RECORDS - 1, "the round read every record"
    # one turn at least per BATCHES_PER_TURN batches; a round that read all in one go gave none
    assert during >= RECORDS // (READ_BATCH * BATCHES_PER_TURN) - 1
