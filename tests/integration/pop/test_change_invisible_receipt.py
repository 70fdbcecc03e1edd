"""CHANGE_MESSAGE_INVISIBLETIME trusts nothing in the receipt it can check: an offset the group has not popped is
refused (mq restores POP offsets from the checkpoints at start, so a checkpoint for it moved the group past the
messages before it: they were never delivered), and the new checkpoint's pop time is the broker's clock, never the
receipt's (a pop time far ahead made a checkpoint no revive reaches, and an answer past Java's long range)."""

from __future__ import annotations

from pathlib import Path

from support.inprocbroker import inproc_broker

from mqtools.common.javanum import LONG_MAX
from mqtools.common.message import MessageExtBrokerInner
from mqtools.remoting.bodies import TopicConfig
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand

TOPIC, GROUP = "PopReceipt", "CG_POP_RECEIPT"


def pop(n: int) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.POP_MESSAGE, {
        "consumerGroup": GROUP, "topic": TOPIC, "queueId": "-1", "maxMsgNums": str(n), "invisibleTime": "60000",
        "pollTime": "0", "bornTime": "0", "initMode": "0"})


def change(offset: int, pop_time: int) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, {
        "consumerGroup": GROUP, "topic": TOPIC, "queueId": "0", "extraInfo": f"0 {pop_time} 60000 0 0 b1 0 {offset}",
        "offset": str(offset), "invisibleTime": "1000"})


async def test_a_change_for_an_offset_not_popped_is_refused_and_moves_nothing_at_restart(tmp_path: Path) -> None:
    async with inproc_broker(tmp_path, broker_name="b1") as (broker, client):
        broker.topics.update(TopicConfig(TOPIC, read_queue_nums=1, write_queue_nums=1))
        for i in range(10):
            broker.store.put_message_inline(MessageExtBrokerInner(topic=TOPIC, body=b"m%d" % i, queue_id=0))
        popped = await client.invoke(broker.broker_addr, pop(1), 3)
        assert popped.code == ResponseCode.SUCCESS
        forged = await client.invoke(broker.broker_addr, change(9, broker.pop.s.now_ms()), 3)
        assert forged.code == ResponseCode.NO_MESSAGE and "not popped" in (forged.remark or "")
    async with inproc_broker(tmp_path, broker_name="b1") as (broker, client):
        assert broker.offsets.query_offset(GROUP, TOPIC, 0) == 1  # was 10: offsets 1..8 never delivered
        again = await client.invoke(broker.broker_addr, pop(32), 3)
        assert again.code == ResponseCode.SUCCESS and again.ext_fields["startOffsetInfo"].endswith(" 1")


async def test_the_new_checkpoint_takes_the_broker_s_time_not_the_receipt_s(tmp_path: Path) -> None:
    async with inproc_broker(tmp_path, broker_name="b1") as (broker, client):
        revive = broker.pop.s.revive
        await revive.shutdown()
        broker.topics.update(TopicConfig(TOPIC, read_queue_nums=1, write_queue_nums=1))
        broker.store.put_message_inline(MessageExtBrokerInner(topic=TOPIC, body=b"x", queue_id=0))
        assert (await client.invoke(broker.broker_addr, pop(1), 3)).code == ResponseCode.SUCCESS
        before = broker.pop.s.now_ms()
        for forged in (LONG_MAX, before + 365 * 86_400_000):
            answer = await client.invoke(broker.broker_addr, change(0, forged), 3)
            assert answer.code == ResponseCode.SUCCESS, answer.remark
            assert before <= int(answer.ext_fields["popTime"]) <= broker.pop.s.now_ms() + 1
        await revive.run_once()
        due = [ck.revive_time for ledger in revive.ledgers.values() for ck in ledger.pending.values()]
        assert due and all(t <= broker.pop.s.now_ms() + 60_000 + 1 for t in due), due
