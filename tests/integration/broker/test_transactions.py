"""Transactional messages on a real `mq broker`, with our TransactionProducer: commit, rollback and the
broker's check of what stays open; a SIGKILLed broker; END_TRANSACTION requests that do not fit.

The broker checks fast here: a half message is asked about 1 s after it was born, every 0.2 s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.adminsupport import json_of, mq_here
from support.clientsupport import Cluster, broker_cluster, call, create_topic, until
from support.mqproc import start_broker

from mqtools.client.admin import MQAdmin
from mqtools.client.producer import Producer
from mqtools.client.pull_consumer import PullConsumer
from mqtools.client.transaction import LocalTransactionState, TransactionProducer
from mqtools.client.types import PullStatus
from mqtools.common import properties as P
from mqtools.common.ids import decode_offset_msg_id
from mqtools.common.message import Message, MessageExt
from mqtools.common.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_MASK
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.transaction import COMMIT, ROLLBACK, EndTransactionRequestHeader

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

FAST_CHECKS = {"transactionTimeOut": "1000", "transactionCheckInterval": "200", "brokerClusterName": "TxIT"}
COMMITTED, ROLLED_BACK, OPEN = LocalTransactionState.COMMIT, LocalTransactionState.ROLLBACK, LocalTransactionState.UNKNOWN


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from broker_cluster(tmp_path_factory.mktemp("tx"), ("broker-a",), **FAST_CHECKS)


async def stored(namesrv: str, topic: str) -> list[MessageExt]:
    """Every message of the topic's queues, in queue order."""
    out: list[MessageExt] = []
    async with PullConsumer("CG_TX_READER", namesrv=namesrv) as consumer:
        for mq in await consumer.fetch_queues(topic):
            offset = 0
            while True:
                result = await consumer.pull(mq, "*", offset, 32)
                if result.status is not PullStatus.FOUND:
                    break
                out += result.messages
                offset = result.next_begin_offset
    return out


async def total(namesrv: str, topic: str) -> int:
    async with MQAdmin(namesrv) as admin:
        return sum(o.max_offset for o in (await admin.topics.topic_stats(topic)).values())


async def open_transactions(cluster: Cluster, group: str) -> list[dict]:
    result = await asyncio.to_thread(mq_here, "admin", "txn", "list", "-g", group, "-o", "json",
                                     namesrv=cluster.namesrv.addr)
    return json_of(result, "OpenTransactions")["transactions"]


def by_body(table: dict[bytes, LocalTransactionState]):
    def answer(msg: Message, *_: object) -> LocalTransactionState:
        return table[msg.body]
    return answer


async def test_commit_rollback_and_checked_outcomes(cluster: Cluster) -> None:
    """Committed and checked-then-committed messages reach the topic once each, with Apache's stored form (RocketMQ
    5's: the transaction id in __transactionId__); rolled back and checked-then-rolled-back ones never; the check
    asks only about the open ones."""
    await create_topic(cluster, "TxTopic", 2)
    executed = {b"commit": COMMITTED, b"rollback": ROLLED_BACK, b"open-commit": OPEN, b"open-rollback": OPEN}
    checks: list[bytes] = []

    def check(msg: MessageExt) -> LocalTransactionState:
        checks.append(msg.body)
        assert msg.topic == "TxTopic" and msg.properties[P.PGROUP] == "PG_TX"
        assert msg.properties[P.TRANSACTION_ID] == msg.properties[P.UNIQ_KEY]  # stamped as RocketMQ 5's broker does
        return COMMITTED if msg.body == b"open-commit" else ROLLED_BACK

    async with TransactionProducer("PG_TX", namesrv=cluster.namesrv.addr, execute=by_body(executed),
                                   check=check) as producer:
        results = [await producer.send_in_transaction(Message("TxTopic", body)) for body in executed]
        assert [r.state for r in results] == list(executed.values())
        await until(lambda: {b"open-commit", b"open-rollback"} <= set(checks), 20, "both open transactions checked")
        await until(lambda: _count_is(cluster, "TxTopic", 2), 10, "the checked commit stored")
    assert set(checks) == {b"open-commit", b"open-rollback"}
    got = await stored(cluster.namesrv.addr, "TxTopic")
    assert sorted(m.body for m in got) == [b"commit", b"open-commit"]
    for m in got:
        assert m.sys_flag & TRANSACTION_MASK == TRANSACTION_COMMIT_TYPE
        assert m.properties[P.TRAN_MSG] == "true" and m.properties[P.REAL_TOPIC] == "TxTopic"
        assert m.properties[P.TRANSACTION_ID] == m.properties[P.UNIQ_KEY]
    halves = {r.send.msg_id: decode_offset_msg_id(r.send.offset_msg_id)[1] for r in results}
    prepared = {m.body: (m.prepared_transaction_offset, halves[m.properties[P.UNIQ_KEY]]) for m in got}
    assert prepared[b"commit"][0] == prepared[b"commit"][1]  # the half message it came from
    assert prepared[b"open-commit"][0] > prepared[b"open-commit"][1]  # the copy the check asked about


async def test_end_transaction_that_does_not_fit_is_refused_and_changes_nothing(cluster: Cluster) -> None:
    await create_topic(cluster, "TxRefused", 1)
    await create_topic(cluster, "TxPlain", 1)
    async with Producer("PG_PLAIN", namesrv=cluster.namesrv.addr) as plain:
        not_half = decode_offset_msg_id((await plain.send(Message("TxPlain", b"plain"))).offset_msg_id)[1]
    async with TransactionProducer("PG_TX_BAD", namesrv=cluster.namesrv.addr, execute=lambda m, a: OPEN,
                                   check=lambda m: OPEN, send_timeout=5) as producer:
        half = (await producer.send_in_transaction(Message("TxRefused", b"held"))).send
    addr = cluster.broker.addr
    offset = decode_offset_msg_id(half.offset_msg_id)[1]

    async def end(kind: int = COMMIT, **changes: object) -> tuple[int, str]:
        fields = {"producer_group": "PG_TX_BAD", "tran_state_table_offset": half.queue_offset,
                      "commit_log_offset": offset, "commit_or_rollback": kind, "msg_id": half.msg_id}
        fields.update(changes)
        resp = await call(addr, RequestCode.END_TRANSACTION, EndTransactionRequestHeader(**fields).to_ext())
        return resp.code, resp.remark or ""

    assert await end(commit_log_offset=not_half) == (ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
    assert await end(commit_log_offset=-5) == (ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
    assert await end(commit_log_offset=2**62) == (ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
    assert (await end(commit_log_offset=offset + 1))[0] == ResponseCode.SYSTEM_ERROR
    assert await end(producer_group="PG_OTHER") == (ResponseCode.SYSTEM_ERROR, "The producer group wrong")
    assert await end(tran_state_table_offset=half.queue_offset + 7) == (
        ResponseCode.SYSTEM_ERROR, "The transaction state table offset wrong")
    assert await total(cluster.namesrv.addr, "TxRefused") == 0
    listed = await open_transactions(cluster, "PG_TX_BAD")
    assert [(t["topic"], t["msgId"], t["brokerName"]) for t in listed] == [("TxRefused", half.msg_id, "broker-a")]
    assert await end(ROLLBACK) == (ResponseCode.SUCCESS, "")
    assert await open_transactions(cluster, "PG_TX_BAD") == []
    code, remark = await end(COMMIT)
    assert code == ResponseCode.SYSTEM_ERROR and "already ended" in remark, remark
    assert await total(cluster.namesrv.addr, "TxRefused") == 0


async def test_a_killed_broker_keeps_what_ended_and_asks_again_about_what_did_not(tmp_path: Path) -> None:
    """SIGKILL after a commit, a rollback and an open transaction whose producer is gone: after the
    restart the committed message is there once, the rolled-back one never, and the open one is asked
    about again, of the producer group's next producer."""
    gen = broker_cluster(tmp_path, ("broker-a",), **FAST_CHECKS)
    cluster = next(gen)
    try:
        await create_topic(cluster, "TxKill", 1)
        executed = {b"commit": COMMITTED, b"rollback": ROLLED_BACK, b"open": OPEN}
        async with TransactionProducer("PG_TX_KILL", namesrv=cluster.namesrv.addr, execute=by_body(executed),
                                       check=lambda m: OPEN) as producer:
            for body in executed:
                await producer.send_in_transaction(Message("TxKill", body))
        cluster.broker.kill()
        cluster.brokers["broker-a"] = start_broker(tmp_path, cluster.namesrv.addr, "broker-a", **FAST_CHECKS)
        checks: list[bytes] = []

        def check(msg: MessageExt) -> LocalTransactionState:
            checks.append(msg.body)
            return COMMITTED

        async with TransactionProducer("PG_TX_KILL", namesrv=cluster.namesrv.addr, execute=by_body(executed),
                                       check=check):
            await until(lambda: checks, 30, "the open transaction asked about after the restart")
            await until(lambda: _count_is(cluster, "TxKill", 2), 10, "the checked commit stored")
        assert sorted(m.body for m in await stored(cluster.namesrv.addr, "TxKill")) == [b"commit", b"open"]
        assert set(checks) == {b"open"}
    finally:
        gen.close()


async def _count_is(cluster: Cluster, topic: str, count: int) -> bool:
    return await total(cluster.namesrv.addr, topic) == count
