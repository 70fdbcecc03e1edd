"""Timer properties where Apache's put hook does or does not see them, through real `mq` processes:

* a batch is never timed (the hook sees the batch, not its messages): timer messages sent in one
  SEND_BATCH_MESSAGE are stored in their topic at once, their timer properties kept; timer properties on
  the batch's own header are appended to each of its messages as any batch property is (4.x's encoding),
  untimed. (Apache 5.5.0's hook would send such a batch to rmq_sys_wheel_timer, but its 5.x batch encoder
  writes no header property into the messages, so the wheel would get them without their real topic or due
  time: read from its source, docs/compatibility.md);
* a transactional message is timed from its commit (the half message is stored as it came; the committed
  message goes through the hook): TIMER_DELAY_SEC counts from the commit, not from the send.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from support.clientsupport import Cluster, broker_cluster, call, create_topic, until

from mqtools.client.producer import Producer
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.transaction import LocalTransactionState, TransactionProducer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult
from mqtools.common import properties as P
from mqtools.common.codec import encode_batch
from mqtools.common.message import Message, MessageExt
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import send_v2_fields

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TIMER_TOPIC = "rmq_sys_wheel_timer"


def now_ms() -> int:
    return int(time.time() * 1000)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from broker_cluster(tmp_path_factory.mktemp("timertx"), ("broker-x",), brokerClusterName="TimerTxIT")


async def max_offset(addr: str, topic: str, queue_id: int = 0) -> int:
    resp = await call(addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue_id)})
    return int(resp.ext_fields.get("offset", 0)) if resp.code == ResponseCode.SUCCESS else 0


async def consume(cluster: Cluster, group: str, topic: str, count: int, timeout: float) -> list[MessageExt]:
    got: list[MessageExt] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        got.extend(msgs)
        return ConsumeResult.CONSUME_SUCCESS

    consumer = PushConsumer(group, namesrv=cluster.namesrv.addr, rebalance_interval=2.0,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic, "*")
    consumer.register_listener(listener)
    await consumer.start()
    try:
        await until(lambda: len(got) >= count, timeout, f"{count} message(s) of {topic}")
    finally:
        await consumer.shutdown()
    return got


async def test_a_batch_of_timer_messages_is_stored_at_once_with_its_properties(cluster: Cluster) -> None:
    topic = "TimerBatch"
    await create_topic(cluster, topic, 1)
    addr = cluster.broker.addr
    wheel_before = await max_offset(addr, TIMER_TOPIC)
    msgs = []
    for i in range(3):
        msg = Message(topic, f"b-{i}".encode())
        msg.delay_time_sec = 600
        msgs.append(msg)
    sent = now_ms()
    async with Producer("PG_TIMER_BATCH", namesrv=cluster.namesrv.addr) as producer:
        await producer.send_batch(msgs)
    assert await max_offset(addr, topic) == 3  # in the topic now, not in ten minutes
    assert await max_offset(addr, TIMER_TOPIC) == wheel_before
    got = await consume(cluster, "CG_TIMER_BATCH", topic, 3, 30)
    assert sorted(bytes(m.body) for m in got) == [b"b-0", b"b-1", b"b-2"]
    for m in got:
        assert m.properties[P.TIMER_DELAY_SEC] == "600" and P.TIMER_OUT_MS not in m.properties
        assert m.store_timestamp < sent + 10_000


async def test_timer_properties_on_a_batch_header_are_kept_untimed(cluster: Cluster) -> None:
    topic = "TimerBatchHeader"
    await create_topic(cluster, topic, 1)
    addr = cluster.broker.addr
    wheel_before = await max_offset(addr, TIMER_TOPIC)
    header = P.properties_to_string({P.TIMER_DELAY_SEC: "600", P.TIMER_DELIVER_MS: str(now_ms() + 600_000)})
    body = encode_batch([Message(topic, f"h-{i}".encode()) for i in range(2)])
    ext = send_v2_fields("PG_TIMER_HEADER", topic, "TBW102", "4", 0, 0, now_ms(), 0, header, batch=True)
    resp = await call(addr, RequestCode.SEND_BATCH_MESSAGE, ext, body)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert await max_offset(addr, topic) == 2 and await max_offset(addr, TIMER_TOPIC) == wheel_before
    got = await consume(cluster, "CG_TIMER_HEADER", topic, 2, 30)
    assert sorted(bytes(m.body) for m in got) == [b"h-0", b"h-1"]
    assert all(m.properties[P.TIMER_DELAY_SEC] == "600" and P.TIMER_OUT_MS not in m.properties for m in got)


async def test_a_transactional_timer_message_is_timed_from_its_commit(cluster: Cluster) -> None:
    topic = "TimerTx"
    await create_topic(cluster, topic, 1)
    committed_at: list[int] = []

    async def execute(msg: Message, arg: object) -> LocalTransactionState:
        await asyncio.sleep(3)  # the local transaction takes 3 s: the delay starts at the commit
        committed_at.append(now_ms())
        return LocalTransactionState.COMMIT

    msg = Message(topic, b"tx-timer")
    msg.delay_time_sec = 3
    async with TransactionProducer("PG_TIMER_TX", namesrv=cluster.namesrv.addr, execute=execute,
                                   check=lambda m: LocalTransactionState.COMMIT) as producer:
        sent = now_ms()
        await producer.send_in_transaction(msg)
    (commit,) = committed_at
    assert await max_offset(cluster.broker.addr, topic) == 0  # went to the wheel, not to the topic
    (got,) = await consume(cluster, "CG_TIMER_TX", topic, 1, 40)
    assert bytes(got.body) == b"tx-timer"
    assert P.TIMER_OUT_MS in got.properties and got.properties[P.REAL_TOPIC] == topic
    assert got.store_timestamp >= commit + 3000 - 20  # 3 s after the commit (at the broker's clock, same host)
    assert got.store_timestamp >= sent + 6000 - 20  # so not 3 s after the send
