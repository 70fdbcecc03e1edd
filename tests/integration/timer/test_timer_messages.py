"""Timer messages (RIP-43) through real `mq` processes: delivery times honoured (never early, all
delivered), past times delivered now, bad values refused as Apache refuses them, the admin codes, and a
broker SIGKILLed with timers pending that delivers every one after its restart."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest
from support.clientsupport import Cluster, broker_cluster, call, create_topic, until
from support.mqproc import MqProcess, start_mq

from mqtools.client.producer import Producer
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult
from mqtools.common import properties as P
from mqtools.common.codec import decode_stored
from mqtools.common.message import Message, MessageExt
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import PullMessageRequestHeader, SendMessageRequestHeader
from mqtools.server.store.timer.timer_checkpoint import TimerCheckpoint

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PRECISION_MS = 1000


def now_ms() -> int:
    return int(time.time() * 1000)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    yield from broker_cluster(tmp_path_factory.mktemp("timer"), ("broker-t",), brokerClusterName="TimerIT")


def check_on_time(msg: MessageExt, *, late_bound: bool = True) -> None:
    """Stored in its topic no earlier than asked (and no earlier than its tick's end), and, unless a
    broker was down meanwhile, not much later."""
    out = int(msg.properties[P.TIMER_OUT_MS])
    assert msg.store_timestamp >= out + PRECISION_MS, msg.properties
    if P.TIMER_DELIVER_MS in msg.properties:
        asked = int(msg.properties[P.TIMER_DELIVER_MS])
        assert msg.store_timestamp >= asked, (msg.store_timestamp, asked)
        if late_bound:  # generous: a slow machine is late, never early
            assert msg.store_timestamp - asked <= PRECISION_MS + 10_000


async def test_delivery_times_are_honoured_and_past_ones_delivered_now(cluster: Cluster) -> None:
    topic = "TimerTopic"
    await create_topic(cluster, topic, 2)
    got: list[tuple[MessageExt, int]] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        got.extend((m, now_ms()) for m in msgs)
        return ConsumeResult.CONSUME_SUCCESS

    consumer = PushConsumer(
        "CG_TIMER",
        namesrv=cluster.namesrv.addr,
        rebalance_interval=2.0,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    consumer.subscribe(topic, "*")
    consumer.register_listener(listener)
    await consumer.start()
    try:
        rng = random.Random(44)
        async with Producer("PG_TIMER", namesrv=cluster.namesrv.addr) as producer:
            sent_at = now_ms()
            for i in range(12):
                msg = Message(topic, f"at-{i}".encode())
                msg.deliver_time_ms = now_ms() + rng.randint(1000, 3000)
                await producer.send(msg)
            by_sec = Message(topic, b"sec")
            by_sec.delay_time_sec = 2
            await producer.send(by_sec)
            by_ms = Message(topic, b"ms")
            by_ms.delay_time_ms = 1500
            await producer.send(by_ms)
            past = Message(topic, b"past")
            past.deliver_time_ms = now_ms() - 5000
            await producer.send(past)
        await until(lambda: len(got) >= 15, 60, "all 15 timer messages consumed")
        bodies = sorted(m.body for m, _ in got)
        assert bodies == sorted([f"at-{i}".encode() for i in range(12)] + [b"sec", b"ms", b"past"])
        for msg, received in got:
            if msg.body == b"past":
                assert P.TIMER_OUT_MS not in msg.properties  # never went through the wheel
                assert msg.store_timestamp < sent_at + 1000 + 10_000
                continue
            check_on_time(msg)
            assert received >= int(msg.properties[P.TIMER_OUT_MS]) + PRECISION_MS
            assert msg.properties[P.REAL_TOPIC] == topic  # as Apache's written-back message keeps it
        sec = next(m for m, _ in got if m.body == b"sec")
        assert sec.store_timestamp >= sent_at + 2000
    finally:
        await consumer.shutdown()


async def send_raw(addr: str, topic: str, body: bytes, props: dict[str, str]):
    header = SendMessageRequestHeader(
        producer_group="PG_TIMER_RAW",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=1,
        queue_id=0,
        sys_flag=0,
        born_timestamp=now_ms(),
        flag=0,
        properties=P.properties_to_string(props),
    )
    return await call(addr, RequestCode.SEND_MESSAGE, header.to_ext(), body)


async def test_bad_timer_values_are_refused_as_apache_does(cluster: Cluster) -> None:
    addr = cluster.broker.addr
    resp = await send_raw(addr, "TimerBad", b"x", {P.TIMER_DELIVER_MS: "tomorrow"})
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL
    assert resp.remark.startswith(
        "timer message illegal, the delay time should not be bigger than the max delay 259200000ms"
    )
    resp = await send_raw(addr, "TimerBad", b"x", {P.TIMER_DELAY_SEC: str(3 * 24 * 3600 + 60)})
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL
    resp = await send_raw(
        addr, "TimerBad", b"x", {P.TIMER_DELIVER_MS: str(now_ms() - 1), P.TIMER_DEL_UNIQKEY: "TimerBad+X"}
    )
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL


async def test_timer_admin_codes_and_runtime_info(cluster: Cluster) -> None:
    addr = cluster.broker.addr
    resp = await send_raw(addr, "TimerAdmin", b"x", {P.TIMER_DELAY_SEC: "600"})
    assert resp.code == ResponseCode.SUCCESS, resp.remark

    async def checkpoint() -> TimerCheckpoint | None:
        r = await call(addr, RequestCode.GET_TIMER_CHECK_POINT)
        assert r.code == ResponseCode.SUCCESS and len(r.body) == 56
        cp = TimerCheckpoint.decode(r.body)
        return cp if cp.master_timer_queue_offset >= 1 else None

    cp = await until(checkpoint, 30, "the checkpoint to count the enqueued message")
    assert abs(cp.last_read_time_ms - now_ms()) < 30_000 and cp.data_version.counter >= 1
    r = await call(addr, RequestCode.GET_TIMER_METRICS)
    assert r.code == ResponseCode.SUCCESS
    metrics = json.loads(r.body)
    assert metrics["timingCount"]["TimerAdmin"]["count"] == 1 and "counter" in metrics["dataVersion"]
    r = await call(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    table = json.loads(r.body)["table"]
    assert int(table["timerCongestNum"]) >= 1 and int(table["timerOffsetBehind"]) == 0
    assert {"timerReadBehind", "timerEnqueueTps", "timerDequeueTps"} <= set(table)


# ---------------------------------------------------------------- SIGKILL


def start_lone_broker(root: Path) -> MqProcess:
    props = root / "broker.properties"
    props.write_text(
        f"brokerName=broker-timer-kill\nlistenPort=0\nbrokerIP1=127.0.0.1\n"
        f"storePathRootDir={root / 'store'}\nmappedFileSizeCommitLog={8 * 1024 * 1024}\n"
    )
    return start_mq(["broker", "start", "-c", str(props)], timeout=30)


async def pull_all(addr: str, topic: str) -> list[MessageExt]:
    out: list[MessageExt] = []
    while True:
        header = PullMessageRequestHeader(
            consumer_group="CG_TIMER_KILL",
            topic=topic,
            queue_id=0,
            queue_offset=len(out),
            max_msg_nums=32,
            sys_flag=4,
            commit_offset=0,
            suspend_timeout_millis=0,
            sub_version=0,
            subscription="*",
        )
        resp = await call(addr, RequestCode.PULL_MESSAGE, header.to_ext())
        if resp.code != ResponseCode.SUCCESS or not resp.body:
            return out
        body, pos = memoryview(resp.body), 0
        while pos < len(body):
            msg = decode_stored(body, pos)
            out.append(msg)
            pos += msg.store_size


async def test_sigkill_with_timers_pending_loses_none_delivers_none_early(tmp_path: Path) -> None:
    topic = "TimerKill"
    broker = start_lone_broker(tmp_path)
    try:
        base = now_ms()
        expected = set()
        for i in range(20):
            body = f"k-{i}".encode()
            resp = await send_raw(broker.addr, topic, body, {P.TIMER_DELIVER_MS: str(base + 1000 + i * 470)})
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            expected.add(body)
        # killed once the first are out and the rest (up to 10 s ahead) are pending in the wheel
        first = await until(lambda: pull_all(broker.addr, topic), 30, "the first timer message delivered")
        assert len(first) < len(expected)
        broker.kill()
        broker = start_lone_broker(tmp_path)

        async def everything() -> list[MessageExt] | None:
            msgs = await pull_all(broker.addr, topic)
            return msgs if {m.body for m in msgs} >= expected else None

        delivered = await until(everything, 60, "every timer message delivered after the restart")
        assert {m.body for m in delivered} == expected
        for msg in delivered:  # some twice (delivered, then again from the last checkpoint): at least once
            check_on_time(msg, late_bound=False)
    finally:
        broker.stop()
