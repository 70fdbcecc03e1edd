"""The revive round reads thousands of acks and checkpoints under load; it must let the broker's loop turn
between a few batches of them, or every POP and ACK that arrives meanwhile waits for the whole read."""

from __future__ import annotations

import pytest
from support.loopturns import loop_turns

from mqtools.common.loop import PUTS_PER_TURN
from mqtools.common.message import MessageExtBrokerInner
from mqtools.remoting.bodies import TopicConfig
from mqtools.server.broker.app import BrokerController
from mqtools.server.broker.pop.ledger import CARRY_BEHIND
from mqtools.server.broker.pop.records import REVIVE_GROUP, AckMsg, PopCheckPoint, ack_message, ck_message
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

    async with loop_turns() as turns:
        await revive.run_once()
    during = turns.count
    ledger = revive.ledgers[0]
    assert ledger.read_offset == RECORDS - 1, "the round read every record"
    # one turn at least per BATCHES_PER_TURN batches; a round that read all in one go gave none
    assert during >= RECORDS // (READ_BATCH * BATCHES_PER_TURN) - 1


async def test_a_slave_made_master_catches_up_letting_the_loop_turn(revive_broker: BrokerController) -> None:
    """A slave promoted in controller mode reads the revive queues from its progress on the next round: every
    record since, read in one pass on the loop (200,000 took 1.07 s)."""
    state = revive_broker.pop.s
    revive = state.revive
    now_ms = state.now_ms()
    for i in range(RECORDS):
        ack = AckMsg(ack_offset=i, start_offset=i, consumer_group="G", topic="T", queue_id=0, pop_time=now_ms)
        assert isinstance(state.put_record(ack_message(state.revive_topic, 0, ack, now_ms, state.host)),
                          PutMessageResult)
    revive.ledgers = {}  # as a slave's round leaves them; the next round as master takes over
    async with loop_turns() as turns:
        await revive.run_once()
    assert revive.ledgers[0].read_offset == RECORDS - 1
    assert turns.count >= RECORDS // (READ_BATCH * BATCHES_PER_TURN) - 1


async def test_a_revive_round_putting_back_many_messages_lets_the_loop_turn(revive_broker: BrokerController) -> None:
    """A put under ASYNC_FLUSH never suspends: 160,000 messages due at once held the loop for 1.7 s."""
    state = revive_broker.pop.s
    revive_broker.topics.update(TopicConfig("PopTurns", read_queue_nums=1, write_queue_nums=1))
    revive_broker.groups.find("CG_TURNS")
    checkpoints, per = 20, 32
    for _ in range(checkpoints * per):
        revive_broker.store.put_message_inline(MessageExtBrokerInner(topic="PopTurns", body=b"x", queue_id=0))
    popped = state.now_ms() - 10_000
    for i in range(checkpoints):
        ck = PopCheckPoint("PopTurns", "CG_TURNS", 0, i * per, popped, 1000, per, "b1",
                           queue_offset_diff=list(range(per)))
        state.put_record(ck_message(state.revive_topic, 0, ck, state.now_ms(), state.host))
    async with loop_turns() as turns:
        revived = await state.revive.run_once()
    assert revived == checkpoints * per
    assert turns.count >= revived // PUTS_PER_TURN - 1


async def test_a_long_invisible_checkpoint_is_carried_and_the_progress_moves_past_it(
        revive_broker: BrokerController) -> None:
    """A POP invisible for two days held the revive progress at its record: each start read every record since
    (200,000 in 1 s of blocked loop), and a record older than the commitlog's retention would be gone."""
    state = revive_broker.pop.s
    revive = state.revive
    now_ms = state.now_ms()
    far = PopCheckPoint("T", "G", 0, 0, now_ms, 2 * 86_400_000, 2, "b1", queue_offset_diff=[0, 1])
    state.put_record(ck_message(state.revive_topic, 0, far, now_ms, state.host))
    state.put_record(ack_message(state.revive_topic, 0, AckMsg(1, 0, "G", "T", 0, now_ms, "b1"), now_ms, state.host))
    for i in range(CARRY_BEHIND + 1):
        ack = AckMsg(ack_offset=i, start_offset=i, consumer_group="O", topic="T", queue_id=0, pop_time=now_ms)
        state.put_record(ack_message(state.revive_topic, 0, ack, now_ms, state.host))
    await revive.run_once()  # carries it
    await revive.run_once()  # reads it where it was carried
    progress = revive_broker.offsets.query_offset(REVIVE_GROUP, state.revive_topic, 0)
    assert progress > CARRY_BEHIND
    revive.ledgers = {}  # taken over from the stored progress, as after a restart
    await revive.run_once()
    (pending,) = revive.ledgers[0].pending.values()
    assert (pending.start_offset, pending.revive_time) == (0, far.revive_time)
    assert revive.ledgers[0].unacked(pending) == [0]  # the ack before the carry is kept in its bits
