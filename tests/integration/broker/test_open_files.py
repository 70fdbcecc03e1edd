"""A broker started under a low soft open-file limit raises it to the hard one, as the JVM does Apache's.

Each consume-queue file keeps a descriptor, so a broker with more queues in use than the soft limit (1,024 for a
login shell or a service on most Linux systems) refused every put to a queue that needed a new file.
"""

from __future__ import annotations

import resource
from pathlib import Path

import pytest
from support.mqproc import start_mq, start_namesrv, write_broker_props

from mqtools.client.admin import MQAdmin
from mqtools.client.producer import Producer
from mqtools.common.message import Message
from mqtools.remoting.bodies import MessageQueue, TopicConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SOFT = 128
QUEUES = 300


def open_files_limit(pid: int) -> tuple[int, int]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError("no open-files line")


async def test_a_broker_under_a_low_soft_limit_takes_more_queues_than_it(tmp_path: Path) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 4 * QUEUES:
        pytest.skip(f"the hard open-files limit ({hard}) is below what the test needs")
    namesrv = start_namesrv(tmp_path)
    conf = write_broker_props(tmp_path / "broker.properties", namesrv.addr, tmp_path / "store")
    broker = start_mq(["broker", "start", "-c", str(conf)], timeout=30,
                      prefix=["prlimit", f"--nofile={SOFT}:{hard if hard != resource.RLIM_INFINITY else 'unlimited'}",
                              "--"])
    try:
        assert open_files_limit(broker.pid) == (hard, hard)
        async with MQAdmin(namesrv.addr) as admin:
            await admin.topics.create_topic(TopicConfig("ManyQueues", QUEUES, QUEUES), broker_addr=broker.addr)
            async with Producer("PG_MANY_QUEUES", namesrv=namesrv.addr) as producer:
                for qid in range(QUEUES):
                    result = await producer.send(Message("ManyQueues", b"m"),
                                                 queue=MessageQueue("ManyQueues", "broker-a", qid))
                    assert result.queue_offset == 0, qid
            # what it holds against its limit, for `diagnose broker`: one descriptor per mapped file (the mapping's
            # own; two each, 624 here, before the file's was closed once mapped), and its sockets
            raw = (await admin.brokers.broker_runtime_info(broker.addr)).raw
            assert int(raw["maxOpenFileDescriptors"]) == hard
            assert QUEUES < int(raw["openFileDescriptors"]) < QUEUES + 100
    finally:
        broker.stop()
        namesrv.stop()
