"""A checkpoint record nobody's POP wrote: anyone allowed to send to the revive topic can put one there, as in
Apache. One claiming more messages than its offset diffs name once made every revive round fail before it committed
(no popped message of the broker came back again, restarts included); one claiming half a billion messages built a
list of them on the broker's loop. Such a record is skipped with a warning and the rest is revived."""

from __future__ import annotations

import logging

import pytest

from mqtools.common.message import MessageExtBrokerInner
from mqtools.remoting.bodies import TopicConfig
from mqtools.remoting.pop import pop_retry_topic_v1
from mqtools.server.broker.app import BrokerController
from mqtools.server.broker.pop.records import PopCheckPoint, ck_message
from mqtools.server.store.results import PutMessageResult

pytestmark = pytest.mark.timeout(60)

TOPIC, GROUP = "PopPoison", "CG_POP_POISON"


async def test_a_malformed_checkpoint_is_skipped_and_the_others_are_revived(
        revive_broker: BrokerController, caplog: pytest.LogCaptureFixture) -> None:
    broker = revive_broker
    state = broker.pop.s
    broker.topics.update(TopicConfig(TOPIC, read_queue_nums=1, write_queue_nums=1))
    put = await broker.store.put_message(MessageExtBrokerInner(topic=TOPIC, body=b"popped, never acked", queue_id=0))
    assert put.status.name == "PUT_OK"
    popped = state.now_ms() - 10_000  # its invisible time is long past

    def record(qid: int, ck: PopCheckPoint) -> None:
        written = state.put_record(ck_message(state.revive_topic, qid, ck, state.now_ms(), state.host))
        assert isinstance(written, PutMessageResult) and written.status.name == "PUT_OK"

    for qid in range(state.revive_queue_num):  # ahead of the good one, in every revive queue
        record(qid, PopCheckPoint(TOPIC, GROUP, 0, 0, popped - 1, 1000, 2, "b1", queue_offset_diff=[0]))
        record(qid, PopCheckPoint(TOPIC, GROUP, 0, 0, popped - 2, 1000, 500_000_000, "b1"))
    record(0, PopCheckPoint(TOPIC, GROUP, 0, 0, popped, 1000, 1, "b1", queue_offset_diff=[0]))

    with caplog.at_level(logging.WARNING):
        assert await state.revive.run_once() == 1
    assert broker.store.get_max_offset_in_queue(pop_retry_topic_v1(TOPIC, GROUP), 0) == 1
    assert "checkpoint of 2 messages with 1 offset diffs" in caplog.text
    assert "checkpoint of 500000000 messages" in caplog.text
    assert not [ck for ledger in state.revive.ledgers.values() for ck in ledger.pending.values()]
