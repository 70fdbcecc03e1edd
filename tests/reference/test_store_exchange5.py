"""RocketMQ 5's store records, proven by the other side: a broker stopped with timer messages pending and
POP messages popped but not acknowledged, then started as the other implementation on the same store
(Apache 5.5.0 on mq's, mq on Apache 5.5.0's). Every timer message comes out in its topic, none before its
time and none twice (the wheel, its log and checkpoint read as written); every unacknowledged POP message
comes back once after its invisible time with reconsumeTimes 1 (the checkpoints and acks of the revive
topic read as written), and no acknowledged one does. A FIFO batch popped and half acknowledged still holds its
queue on the other side (config/consumerOrderInfo.json read as written), which takes the receipt from before the
switch and then gives out the next message for the first time.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import apache
import pytest
from refsupport import name
from support.clientsupport import until
from support.mqproc import start_broker

from mqtools.client.admin import MQAdmin
from mqtools.client.pop_consumer import PopConsumer, PopStatus
from mqtools.client.producer import Producer
from mqtools.client.pull_consumer import PullConsumer
from mqtools.client.types import PullStatus
from mqtools.common import properties as P
from mqtools.common.message import Message, MessageExt
from mqtools.remoting.bodies import MessageQueue, TopicConfig
from mqtools.remoting.pop import POP_CK

pytestmark = pytest.mark.timeout(300)

FILE_SIZE = apache.COMMITLOG_FILE_SIZE
TIMERS = 8
#: The first timer is due this long after it is sent: some fall due while no broker runs, some after the
#: other side started (Apache's JVM takes seconds, twice that on a slow machine).
FIRST_DUE_MS = 6_000
#: 8 timers 4 s apart span 34 s: Apache 5.5's clean stop takes about 20 s (its shutdown joins the POP revive
#: services one after the other), and the last ones must still fall due after the other side has started.
STEP_MS = 4_000
#: Time Apache 5.5 is given to stop on SIGTERM: its store is only the one it leaves once its shutdown hook has
#: saved the timer checkpoint (at the default 20 s it was SIGKILLed near the end of its shutdown, now and then
#: before that save, and a timer it had delivered came a second time from mq).
APACHE5_STOP_S = 90.0
POPPED = 10
INVISIBLE_MS = 12_000
#: reviveQueueNum: the revive topic's queues (8 on both brokers by default).
REVIVE_QUEUES = 8
#: The FIFO batch's invisible time: past the write, the writer's stop (Apache's up to APACHE5_STOP_S) and the
#: reader's start, on a slow machine, so that only the acknowledgement given after the switch frees the queue.
FIFO_INVISIBLE_MS = 300_000


@dataclass
class Written:
    timer_topic: str
    pop_topic: str
    group: str
    due: dict[str, int]
    """Timer message body -> the delivery time it asked for."""
    unacked: set[str]
    fifo_topic: str
    fifo_group: str
    fifo_held: MessageExt
    """The FIFO batch's message left unacknowledged."""


def body(msg: MessageExt) -> str:
    return bytes(msg.body).decode()


async def write(namesrv: str, cluster: str, broker: str) -> Written:
    timer_topic, pop_topic, group = name("XTIMER"), name("XPOP"), name("CG_XPOP")
    fifo_topic, fifo_group = name("XFIFO"), name("CG_XFIFO")
    async with MQAdmin(namesrv) as admin:
        for topic in (timer_topic, pop_topic):
            await admin.topics.create_topic(TopicConfig(topic, read_queue_nums=2, write_queue_nums=2), cluster=cluster)
        await admin.topics.create_topic(TopicConfig(fifo_topic, read_queue_nums=1, write_queue_nums=1), cluster=cluster)
    base = int(time.time() * 1000)
    due = {f"t-{i}": base + FIRST_DUE_MS + i * STEP_MS for i in range(TIMERS)}
    async with Producer(name("PG_X"), namesrv=namesrv) as producer:
        for text, at in due.items():
            await producer.send(Message(timer_topic, text.encode(), properties={P.TIMER_DELIVER_MS: str(at)}))
        for i in range(POPPED):
            await producer.send(Message(pop_topic, f"p-{i}".encode()))
        for i in range(3):
            await producer.send(Message(fifo_topic, f"f-{i}".encode()))
    async with PopConsumer(fifo_group, namesrv=namesrv) as consumer:
        batch: list[MessageExt] = []
        while not batch:
            batch = (await consumer.pop(fifo_topic, 2, FIFO_INVISIBLE_MS, 2000, broker_name=broker, order=True)).messages
        assert [body(m) for m in batch] == ["f-0", "f-1"]
        await consumer.ack(batch[1])  # f-0 is still being processed
    async with PopConsumer(group, namesrv=namesrv) as consumer:
        got: list[MessageExt] = []
        while len(got) < POPPED:
            result = await consumer.pop(pop_topic, POPPED - len(got), INVISIBLE_MS, 2000, broker_name=broker)
            got.extend(result.messages)
        unacked = set()
        for msg in got:
            if int(body(msg)[2:]) % 2 == 0:
                await consumer.ack(msg)
            else:
                unacked.add(body(msg))
        await records_stored(consumer, cluster, broker, got, POPPED - len(unacked))
    return Written(timer_topic, pop_topic, group, due, unacked, fifo_topic, fifo_group, batch[0])


async def records_stored(consumer: PopConsumer, cluster: str, broker: str, got: list[MessageExt], acks: int) -> None:
    """Until the broker's revive topic holds a checkpoint per (pop, queue) and a record per ack: Apache 5.5's
    AckMessageProcessor may answer before its put of the ack record completes, and a broker stopped meanwhile
    leaves the ack out of the store (then every popped message comes back, on either side)."""
    from mqtools.client.client_api import queue_offset
    from mqtools.remoting.codes import RequestCode

    checkpoints = {tuple(m.properties[POP_CK].split(" ")[:2]) + (m.queue_id,) for m in got}
    revive = f"rmq_sys_REVIVE_LOG_{cluster}"

    async def stored() -> bool:
        offsets = [await queue_offset(consumer.instance, MessageQueue(revive, broker, qid), RequestCode.GET_MAX_OFFSET)
                   for qid in range(REVIVE_QUEUES)]
        return sum(offsets) >= len(checkpoints) + acks

    await until(stored, 30, f"{len(checkpoints)} checkpoints and {acks} acks in {revive}")


async def pull_all(reader: PullConsumer, topic: str) -> list[MessageExt]:
    """Every message the topic's queues hold now."""
    out: list[MessageExt] = []
    for mq in await reader.fetch_queues(topic):
        offset = 0
        while (result := await reader.pull(mq, "*", offset)).status is PullStatus.FOUND:
            out.extend(result.messages)
            offset = result.next_begin_offset
    return out


async def check(namesrv: str, broker: str, w: Written) -> None:
    async with PopConsumer(w.fifo_group, namesrv=namesrv) as consumer:
        held = await consumer.pop(w.fifo_topic, 32, 60_000, 1000, broker_name=broker, order=True)
        assert held.status is PopStatus.POLLING_NOT_FOUND, f"a held FIFO batch given out: {[body(m) for m in held.messages]}"
        await consumer.ack(w.fifo_held)  # the receipt from before the switch
        after = await consumer.pop(w.fifo_topic, 32, 60_000, 5000, broker_name=broker, order=True)
        assert [(body(m), m.reconsume_times) for m in after.messages] == [("f-2", 0)]
    async with PullConsumer(name("CG_XREAD"), namesrv=namesrv) as reader:
        delivered: list[MessageExt] = []

        async def all_due() -> bool:
            delivered[:] = await pull_all(reader, w.timer_topic)
            return {body(m) for m in delivered} >= set(w.due)

        await until(all_due, 90, f"the {TIMERS} timer messages in {w.timer_topic}")
    counts = Counter(body(m) for m in delivered)
    assert counts == Counter(dict.fromkeys(w.due, 1)), counts
    early = {body(m): (m.store_timestamp, w.due[body(m)]) for m in delivered if m.store_timestamp < w.due[body(m)]}
    assert not early, f"delivered before their time (stored at, due): {early}"

    async with PopConsumer(w.group, namesrv=namesrv) as consumer:
        back: list[MessageExt] = []

        async def unacked_back() -> bool:
            result = await consumer.pop(w.pop_topic, 32, 60_000, 1000, broker_name=broker)
            back.extend(result.messages)
            return len(back) >= len(w.unacked)

        await until(unacked_back, 90, f"the {len(w.unacked)} unacknowledged POP messages again")
        rest = await consumer.pop(w.pop_topic, 32, 60_000, 2500, broker_name=broker)
        assert rest.status is PopStatus.POLLING_NOT_FOUND, [body(m) for m in rest.messages]
    assert sorted(body(m) for m in back) == sorted(w.unacked)
    assert {m.reconsume_times for m in back} == {1}


async def test_apache5_serves_timers_and_pops_mq_left(ref_root: Path, mq_single: str) -> None:
    root = ref_root / "x5-by-mq"
    root.mkdir()
    cluster, broker = "X5Mq", "broker-x5m"
    writer = start_broker(root, mq_single, broker, brokerClusterName=cluster, mappedFileSizeCommitLog=FILE_SIZE)
    store = root / broker
    try:
        written = await write(mq_single, cluster, broker)
    finally:
        stopped = writer.stop()
    assert stopped == 0, f"mq's broker did not stop cleanly ({stopped}): the store would not be the one it leaves"
    reader = apache.start_broker(root, mq_single, "apache-5", name=broker, cluster=cluster,
                                 storePathRootDir=str(store), storePathCommitLog=str(store / "commitlog"),
                                 mappedFileSizeCommitLog=FILE_SIZE)
    try:
        await check(mq_single, broker, written)
    finally:
        reader.kill()


async def test_mq_serves_timers_and_pops_apache5_left(ref_root: Path, mq_single: str) -> None:
    root = ref_root / "x5-by-apache"
    cluster, broker = "X5Ap", "broker-x5a"
    writer = apache.start_broker(root, mq_single, "apache-5", name=broker, cluster=cluster,
                                 mappedFileSizeCommitLog=FILE_SIZE)
    store = writer.workdir / "store"
    try:
        written = await write(mq_single, cluster, broker)
    finally:
        stopped = writer.stop(APACHE5_STOP_S)
    assert stopped == apache.TERMINATED, f"Apache did not stop cleanly ({stopped}): a SIGKILL leaves its last checkpoints"
    reader = start_broker(root, mq_single, broker, brokerClusterName=cluster, mappedFileSizeCommitLog=FILE_SIZE,
                          storePathRootDir=str(store))
    try:
        await check(mq_single, broker, written)
    finally:
        reader.stop()
