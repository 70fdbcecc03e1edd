"""No offset regression after a master comes back (`mq cluster up --preset 2m-2s-async`).

A consumer keeps consuming through a SIGKILL of broker-a's master: it reads the rest from the slave
and commits its offsets there. The master is started again (`mq cluster start broker-a`); before it
serves anyone it takes the slave's newer offsets (mqtools/server/broker/pre_online.py), so the group's
committed offsets on the master are the newer ones and a consumer that continues the group receives
only new messages: nothing twice.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from support.clientsupport import until
from support.presetcluster import PresetCluster, preset_cluster, wait_for

from mqtools.client.admin import MQAdmin
from mqtools.client.producer import Producer
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult
from mqtools.common.message import Message, MessageExt
from mqtools.remoting.bodies import ConsumerOffsetSerializeWrapper, MessageQueue, TopicConfig
from mqtools.remoting.codes import RequestCode

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
TOPIC = "MasterReturn"
GROUP = "CG_MASTER_RETURN"
QUEUES = 4


async def committed(admin: MQAdmin, addr: str) -> dict[int, int]:
    """The group's committed offsets on one broker (GET_ALL_CONSUMER_OFFSET), queue id -> offset."""
    resp = await admin.call(addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
    table = ConsumerOffsetSerializeWrapper.from_json(resp.body or b"{}").offset_table
    return dict(table.get(f"{TOPIC}@{GROUP}") or {})


async def send(namesrv: str, prefix: str, count: int) -> list[str]:
    bodies = [f"{prefix}-{i:04d}" for i in range(count)]
    async with Producer("PG_MASTER_RETURN", namesrv=namesrv) as producer:
        for i, body in enumerate(bodies):
            await producer.send(Message(TOPIC, body.encode()), queue=MessageQueue(TOPIC, "broker-a", i % QUEUES))
    return bodies


def consumer(namesrv: str, got: list[str], pace: float = 0.0) -> PushConsumer:
    async def listener(msgs: list[MessageExt]) -> ConsumeResult:
        if pace:
            await asyncio.sleep(pace)
        got.extend(m.body.decode() for m in msgs)
        return ConsumeResult.CONSUME_SUCCESS

    c = PushConsumer(GROUP, namesrv=namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                     rebalance_interval=1.0, persist_interval=0.5, consume_concurrency=1)
    return c.subscribe(TOPIC).register_listener(listener)


async def replicated(admin: MQAdmin, master: str) -> bool:
    status = await admin.brokers.ha_status(master)
    return bool(status.slaves) and all(s.diff_bytes == 0 for s in status.slaves)


async def test_a_returning_master_serves_the_offsets_committed_to_its_slave(tmp_path: Path) -> None:
    with preset_cluster(tmp_path, "2m-2s-async") as cluster:
        await _scenario(cluster)


async def _scenario(cluster: PresetCluster) -> None:
    master, slave, ns = cluster.addr("broker-a"), cluster.addr("broker-a-s"), cluster.namesrv
    async with MQAdmin(ns) as admin:
        await admin.topics.create_topic(TopicConfig(TOPIC, QUEUES, QUEUES), broker_addr=master)
        # the slave learns topics from its master's metadata every 10 s; it must know this one to serve it
        await until(lambda: _knows(admin, slave), 30, "the topic on the slave")

        got_a: list[str] = []
        first = await send(ns, "before", 40)
        async with consumer(ns, got_a, pace=0.02):
            await until(lambda: _enough(got_a, 40), 30, "the first batch consumed")
            during = await send(ns, "through", 200)
            await until(lambda: replicated(admin, master), 20, "the slave to have every message")
            await until(lambda: _enough(got_a, 80), 30, "part of the second batch consumed")
            await asyncio.to_thread(cluster.kill, "broker-a")
            # the consumer finishes from the slave and commits its offsets there
            await until(lambda: _sums(admin, slave, 240), 60, "offsets committed to the slave")
        on_slave = await committed(admin, slave)
        assert sum(on_slave.values()) == 240

        await asyncio.to_thread(cluster.start, "broker-a")
        on_master = await committed(admin, master)
        assert on_master == on_slave, "the returning master went back to its old offsets"

        got_c: list[str] = []
        async with consumer(ns, got_c):
            await asyncio.sleep(2.0)  # owns its queues, starting at the master's committed offsets
            after = await send(ns, "after", 20)
            await until(lambda: _enough(got_c, 20), 30, "the third batch consumed")
            await asyncio.sleep(1.5)  # anything re-delivered would arrive meanwhile
        twice = {body: n for body, n in Counter(got_a + got_c).items() if n > 1}
        assert not twice, f"delivered twice: {sorted(twice)[:10]} ({len(twice)} in all)"
        assert sorted(got_a) == sorted(first + during)
        assert sorted(got_c) == sorted(after)
        assert wait_for(lambda: cluster.refresh()["broker-a"]["alive"], 10, "broker-a alive")


async def _knows(admin: MQAdmin, addr: str) -> bool:
    return TOPIC in await admin.topics.topic_configs(addr)


async def _enough(got: list[str], n: int) -> bool:
    return len(got) >= n


async def _sums(admin: MQAdmin, addr: str, total: int) -> bool:
    return sum((await committed(admin, addr)).values()) == total
