"""Message trace written by our clients (trace=True) on a real `mq broker` with traceTopicEnable, read back
by `mq admin msg trace` (JSON valid against its schema) and by the mqadmin dialect's queryMsgTraceById."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from support.adminsupport import json_of, mq_here
from support.clientsupport import Cluster, broker_cluster, create_topic, until

from mqtools.client.admin import MQAdmin
from mqtools.client.errors import MQClientError
from mqtools.client.producer import Producer
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.transaction import LocalTransactionState, TransactionProducer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult
from mqtools.common.message import Message, MessageExt

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from broker_cluster(tmp_path_factory.mktemp("trace"), ("broker-a",), traceTopicEnable="true",
                              brokerClusterName="TraceIT")


async def trace_of(cluster: Cluster, msg_id: str, kinds: set[str]) -> dict:
    """`mq admin msg trace -o json` once the trace holds a record of every kind (the clients send traces
    in the background)."""
    async with MQAdmin(cluster.namesrv.addr) as admin:
        await until(lambda: _has(admin, msg_id, kinds), 20, f"a trace of {msg_id} with {kinds}")
    result = await asyncio.to_thread(mq_here, "admin", "msg", "trace", msg_id, "-o", "json",
                                     namesrv=cluster.namesrv.addr)
    return json_of(result, "MessageTrace")


async def _has(admin: MQAdmin, msg_id: str, kinds: set[str]) -> bool:
    try:
        trace = await admin.traces.message_trace(msg_id)
    except MQClientError:  # the trace topic is not routed yet
        return False
    return kinds <= {e.record.type.value for e in trace.entries}


async def test_producer_and_push_consumer_traces_read_by_both_dialects(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    await create_topic(cluster, "TraceTopic", 2)
    async with Producer("PG_TRACE", namesrv=ns, trace=True) as producer:
        sent = await producer.send(Message("TraceTopic", b"traced", properties={"KEYS": "order-7", "TAGS": "TagT"}))
    got: list[MessageExt] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        got.extend(msgs)
        return ConsumeResult.CONSUME_SUCCESS

    consumer = PushConsumer("CG_TRACE", namesrv=ns, trace=True, rebalance_interval=2.0,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe("TraceTopic").register_listener(listener)
    async with consumer:
        await until(lambda: got, 30, "the traced message consumed")
    doc = await trace_of(cluster, sent.msg_id, {"Pub", "SubBefore", "SubAfter"})
    by_type = {r["type"]: r for r in doc["records"]}
    pub, before, after = by_type["Pub"], by_type["SubBefore"], by_type["SubAfter"]
    assert (pub["group"], pub["topic"], pub["tags"], pub["keys"], pub["offsetMsgId"], pub["success"]) == (
        "PG_TRACE", "TraceTopic", "TagT", "order-7", sent.offset_msg_id, True)
    assert pub["storeHost"] == cluster.broker.addr and pub["bodyLength"] == 6 and pub["msgType"] == 0
    assert (before["group"], before["retryTimes"], after["group"], after["success"], after["contextCode"]) == (
        "CG_TRACE", 0, "CG_TRACE", True, 0)
    assert before["requestId"] == after["requestId"]
    dialect = await asyncio.to_thread(mq_here, "admin", "queryMsgTraceById", "-i", sent.msg_id, namesrv=ns)
    assert dialect.returncode == 0, dialect.stderr
    rows = [line.split()[:2] for line in dialect.stdout.splitlines() if line.startswith(("Pub ", "Sub "))]
    assert rows == [["Pub", "PG_TRACE"], ["Sub", "CG_TRACE"]], dialect.stdout


async def test_transaction_end_is_traced(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    await create_topic(cluster, "TraceTx", 1)
    async with TransactionProducer("PG_TRACE_TX", namesrv=ns, trace=True,
                                   execute=lambda m, a: LocalTransactionState.COMMIT,
                                   check=lambda m: LocalTransactionState.COMMIT) as producer:
        done = await producer.send_in_transaction(Message("TraceTx", b"paid"))
    doc = await trace_of(cluster, done.transaction_id, {"Pub", "EndTransaction"})
    by_type = {r["type"]: r for r in doc["records"]}
    assert by_type["Pub"]["msgType"] == 1  # the half message
    end = by_type["EndTransaction"]
    assert (end["transactionState"], end["fromTransactionCheck"], end["transactionId"]) == (
        "COMMIT_MESSAGE", False, done.transaction_id)


def test_a_message_without_trace_is_one_line_exit_1(cluster: Cluster) -> None:
    result = mq_here("admin", "msg", "trace", "C0A8010A00002A9F0000000000000001", namesrv=cluster.namesrv.addr)
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and "no trace of" in result.stderr, result
