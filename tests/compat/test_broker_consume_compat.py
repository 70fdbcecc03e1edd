"""The real C++ RocketMQ client (rocketmq==0.4.4) consuming through `mq namesrv` + `mq broker`.

Every C++ producer/consumer runs in its own subprocess (CPP_SCRIPT below, run by
cppclient.CppClient): a crash or hang in librocketmq cannot take pytest down, and two
consumers of one group must be two processes anyway (the C++ client's id is ip@pid, so two
consumers in one process would be one member).
The consumer script prints one JSON line per delivery; the test closes its stdin to stop it.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.clientsupport import Cluster, broker_cluster, call, create_topic, until
from support.cppclient import SEND_SYNC, CppClient
from support.mqproc import MqProcess

from mqtools.remoting.bodies import ConsumerListBody
from mqtools.remoting.codes import RequestCode, ResponseCode

pytestmark = [pytest.mark.compat, pytest.mark.timeout(150)]

#: Short delays so a retry (level 3 + reconsumeTimes) comes back after a second, not 10 s.
DELAY_LEVELS = "1s 1s 1s 1s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s"

CPP_SCRIPT = SEND_SYNC + r'''
import json, sys, threading
from rocketmq.client import Message, Producer, PushConsumer
from rocketmq.ffi import dll, MSG_CALLBACK_FUNC
from rocketmq.exceptions import ffi_check
from rocketmq.client import RecvMessage

mode, ns = sys.argv[1], sys.argv[2]
if mode == "produce":
    topic, prefix, count = sys.argv[3], sys.argv[4], int(sys.argv[5])
    producer = Producer("PG_CPP_COMPAT")
    producer.set_namesrv_addr(ns)
    producer.start()
    for i in range(count):
        msg = Message(topic)
        msg.set_keys(f"{prefix}-{i}")
        msg.set_tags("compat")
        msg.set_body(f"{prefix}-{i}")
        result = send_sync(producer, msg)
        print(json.dumps({"sent": f"{prefix}-{i}", "status": int(result.status)}), flush=True)
    producer.shutdown()
    sys.exit(0)

topic, group, fail_first = sys.argv[3], sys.argv[4], sys.argv[5] == "1"
orderly = len(sys.argv) > 6 and sys.argv[6] == "orderly"
lock = threading.Lock()  # every line goes out under it, the main thread's too (see cppclient.SCRIPT)

def on_message(consumer, handle):
    # The wrapper's subscribe() ignores a callback's return value, so register a raw callback
    # that answers the C API directly: 0 CONSUME_SUCCESS, 1 RECONSUME_LATER.
    msg = RecvMessage(handle)
    rc = msg.reconsume_times
    with lock:
        print(json.dumps({"body": msg.body.decode(), "rc": rc, "queue": msg.queue_id,
                          "offset": msg.queue_offset}), flush=True)
    return 1 if fail_first and rc == 0 else 0

consumer = PushConsumer(group, orderly=orderly)
consumer.set_namesrv_addr(ns)
ffi_check(dll.Subscribe(consumer._handle, topic.encode(), b"*"))
callback = MSG_CALLBACK_FUNC(on_message)
register = dll.RegisterMessageCallbackOrderly if orderly else dll.RegisterMessageCallback
ffi_check(register(consumer._handle, callback))
consumer.start()
with lock:
    print(json.dumps({"started": True}), flush=True)
sys.stdin.read()
consumer.shutdown()
with lock:
    print(json.dumps({"stopped": True}), flush=True)
'''


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    yield from broker_cluster(tmp_path, ["broker-compat"], brokerClusterName="CompatCluster",
                              messageDelayLevel=DELAY_LEVELS)


def consume(namesrv: MqProcess, topic: str, group: str, home: Path, *flags: str) -> CppClient:
    """A C++ push consumer; flags: "1" fails each first delivery, then optionally "orderly"."""
    return CppClient(["consume", namesrv.addr, topic, group, *(flags or ("0",))], home, CPP_SCRIPT)


async def consumer_ids(broker: MqProcess, group: str) -> list[str]:
    resp = await call(broker.addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group})
    return ConsumerListBody.from_json(resp.body).consumer_id_list if resp.code == ResponseCode.SUCCESS else []


def produce(namesrv: MqProcess, topic: str, prefix: str, count: int, home: Path) -> list[str]:
    producer = CppClient(["produce", namesrv.addr, topic, prefix, str(count)], home, CPP_SCRIPT)
    assert producer.wait(60) == 0, producer.events
    sent = [e["sent"] for e in producer.events if e.get("status") == 0]
    assert len(sent) == count, producer.events
    return sent


async def joined(broker: MqProcess, group: str, members: int, what: str, settle: float = 2) -> None:
    """Wait until the group has `members` consumers, then `settle` seconds for their rebalance."""
    async def enough() -> bool:
        return len(await consumer_ids(broker, group)) >= members

    await until(enough, 40, what)
    await asyncio.sleep(settle)


async def committed_total(broker: MqProcess, group: str, topic: str, queues: int) -> int:
    total = 0
    for queue_id in range(queues):
        resp = await call(broker.addr, RequestCode.QUERY_CONSUMER_OFFSET,
                          {"consumerGroup": group, "topic": topic, "queueId": str(queue_id),
                           "setZeroIfNotFound": "false"})
        if resp.code == ResponseCode.SUCCESS:
            total += int(resp.ext_fields["offset"])
    return total


async def test_two_push_consumers_split_queues_and_get_each_message_once(cluster) -> None:
    namesrv, broker, home = cluster.namesrv, cluster.broker, cluster.workdir
    topic, group, count = "CompatSplit", "CG_SPLIT", 40
    await create_topic(cluster, topic, queues=4, timeout=40)
    consumers = [consume(namesrv, topic, group, home) for _ in range(2)]
    try:
        await joined(broker, group, 2, "two consumers in the group", settle=3)
        sent = produce(namesrv, topic, "split", count, home)

        await until(lambda: sum(len(c.bodies) for c in consumers) >= count, 60, f"{count} deliveries")
        await asyncio.sleep(3)  # a duplicate would show up here
    finally:
        for c in consumers:
            c.stop()
    received = Counter(b for c in consumers for b in c.bodies)
    assert sorted(received) == sorted(sent)
    assert set(received.values()) == {1}, {b: n for b, n in received.items() if n > 1}
    assert all(c.bodies for c in consumers), "the queues were not split between the two consumers"
    queues = [{e["queue"] for e in c.events if "body" in e} for c in consumers]
    assert not queues[0] & queues[1], f"both consumers consumed queues {queues[0] & queues[1]}"


async def test_reconsume_later_comes_back_through_the_retry_topic(cluster) -> None:
    namesrv, broker, home = cluster.namesrv, cluster.broker, cluster.workdir
    topic, group = "CompatRetry", "CG_RETRY"
    await create_topic(cluster, topic, queues=2, timeout=40)
    consumer = consume(namesrv, topic, group, home, "1")
    try:
        await joined(broker, group, 1, "the consumer")
        sent = produce(namesrv, topic, "retry", 3, home)

        await until(lambda: sum(1 for e in consumer.events if e.get("rc", 0) >= 1) >= len(sent), 60,
                    "re-deliveries through %RETRY%")
    finally:
        consumer.stop()
    first = Counter(e["body"] for e in consumer.events if e.get("rc") == 0)
    again = Counter(e["body"] for e in consumer.events if e.get("rc") == 1)
    assert set(first) == set(sent) and set(again) == set(sent)
    route = await call(namesrv.addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": f"%RETRY%{group}"})
    assert route.code == ResponseCode.SUCCESS


async def test_restarted_consumer_resumes_from_committed_offset(cluster) -> None:
    namesrv, broker, home = cluster.namesrv, cluster.broker, cluster.workdir
    topic, group, queues = "CompatResume", "CG_RESUME", 2
    await create_topic(cluster, topic, queues=queues, timeout=40)
    first = consume(namesrv, topic, group, home)
    try:
        await joined(broker, group, 1, "the consumer")
        batch1 = produce(namesrv, topic, "before", 10, home)

        await until(lambda: len(first.bodies) >= len(batch1), 60, "the first batch")

        async def committed() -> bool:
            return await committed_total(broker, group, topic, queues) >= len(batch1)

        await until(committed, 30, "the consumer's offset commits to reach the broker")
    finally:
        first.stop(timeout=40)  # its exit code is librocketmq's business; the offsets are already committed
    assert sorted(first.bodies) == sorted(batch1), first.events
    batch2 = produce(namesrv, topic, "after", 10, home)
    second = consume(namesrv, topic, group, home)
    try:
        try:
            await until(lambda: len(second.bodies) >= len(batch2), 60, "the second batch")
        except AssertionError as exc:  # say what the broker holds and everything the consumer printed
            held = await committed_total(broker, group, topic, queues)
            raise AssertionError(f"{exc}; the group's committed offsets add up to {held}; the restarted "
                                 f"consumer saw {second.events}; other output {second.noise}") from None
        await asyncio.sleep(2)
    finally:
        second.stop()
    assert sorted(second.bodies) == sorted(batch2), f"the restarted consumer re-read or skipped: {second.events}"


async def test_orderly_consumer_locks_queues_and_gets_each_queue_in_order(cluster) -> None:
    """The C++ orderly consumer only consumes queues it locked with LOCK_BATCH_MQ on the broker."""
    namesrv, broker, home = cluster.namesrv, cluster.broker, cluster.workdir
    topic, group, count = "CompatOrderly", "CG_ORDERLY", 20
    await create_topic(cluster, topic, queues=2, timeout=40)
    consumer = consume(namesrv, topic, group, home, "0", "orderly")
    try:
        await joined(broker, group, 1, "the orderly consumer")
        sent = produce(namesrv, topic, "ordered", count, home)

        await until(lambda: len(consumer.bodies) >= count, 60, f"{count} orderly deliveries")
        await asyncio.sleep(1)
    finally:
        consumer.stop()
    assert sorted(consumer.bodies) == sorted(sent)
    for queue_id in (0, 1):
        offsets = [e["offset"] for e in consumer.events if e.get("queue") == queue_id and "body" in e]
        assert offsets == sorted(offsets) and len(offsets) == len(set(offsets))
    # librocketmq logs each lock our broker granted it (its orderly consumer polls until then)
    log_text = "".join(p.read_text(errors="replace") for p in (home / "logs").rglob("*rocketmq-cpp.log*"))
    for queue_id in (0, 1):
        assert f"lock success of mq:MessageQueue [topic={topic}, brokerName=broker-compat, queueId={queue_id}]" \
            in log_text


async def test_reset_offset_by_timestamp_rewinds_an_online_cpp_consumer(cluster) -> None:
    """INVOKE_BROKER_TO_RESET_OFFSET pushes RESET_CONSUMER_CLIENT_OFFSET in the C++ list form."""
    namesrv, broker, home = cluster.namesrv, cluster.broker, cluster.workdir
    topic, group, queues = "CompatReset", "CG_RESET", 2
    await create_topic(cluster, topic, queues=queues, timeout=40)
    consumer = consume(namesrv, topic, group, home)
    try:
        await joined(broker, group, 1, "the consumer")
        sent = produce(namesrv, topic, "rewind", 10, home)

        await until(lambda: len(consumer.bodies) >= len(sent), 60, "the first pass")

        async def committed() -> bool:
            return await committed_total(broker, group, topic, queues) >= len(sent)

        await until(committed, 30, "the commits")
        ext = {"topic": topic, "group": group, "timestamp": "0", "isForce": "true"}
        resp = await call(broker.addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext)
        assert resp.code == ResponseCode.SUCCESS, resp.remark

        await until(lambda: len(consumer.bodies) >= 2 * len(sent), 60, "the rewound second pass")
    finally:
        consumer.stop()
    assert Counter(consumer.bodies) == Counter({body: 2 for body in sent})
