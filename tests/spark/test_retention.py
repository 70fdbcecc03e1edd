"""failOnDataLoss against real retention: a broker with 1 MiB commitlog files, fileReservedTime=0 and
every hour a delete hour really removes old files, so a queue's minimum offset moves above 0; a read
that asks for offset 0 fails with the queue named (failOnDataLoss=true) or reads exactly what is left
(false)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from support.clientsupport import Cluster, create_topic, until
from support.mqproc import start_broker, start_namesrv

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.client.producer import Producer
from mqtools.common.message import Message

TOPIC = "SparkRetention"
BROKER = "broker-r"
BODY = b"r" * 4096
MESSAGES = 600  # about 2.5 MB: two full 1 MiB files the cleaner may remove, and the current one


@pytest.fixture(scope="module")
def retained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("retention")
    namesrv = start_namesrv(work)
    broker = None
    try:
        broker = start_broker(work, namesrv.addr, BROKER, mappedFileSizeCommitLog=str(1024 * 1024),
                              fileReservedTime="0", deleteWhen=";".join(f"{h:02d}" for h in range(24)),
                              cleanResourceInterval="200")
        yield Cluster(namesrv, {BROKER: broker}, work)
    finally:
        if broker is not None:
            broker.stop()
        namesrv.stop()


def _bounds(cluster: Cluster) -> tuple[int, int]:
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        return next(iter(admin.queue_offsets.queue_bounds(TOPIC).values()))


def _commitlog_files(cluster: Cluster) -> int:
    return sum(1 for _ in (cluster.workdir / BROKER / "commitlog").iterdir())


@pytest.fixture(scope="module")
def trimmed(retained: Cluster) -> tuple[int, int]:
    """The topic (one queue) after retention removed everything it will: (min, max) offsets.

    The cleaner (every 200 ms) never removes the file being written, so once that is the only file left
    and the queue's minimum has moved, the minimum stays where it is; before that, a later pass could
    move it between the fixture's read and the test's (a slow machine sees that race).
    """

    async def fill() -> None:
        await create_topic(retained, TOPIC, queues=1)
        async with Producer("spark-retention", namesrv=retained.namesrv.addr) as producer:
            for i in range(MESSAGES):
                await producer.send(Message(TOPIC, BODY, properties={"KEYS": f"r{i}"}))
        await until(lambda: _commitlog_files(retained) == 1 and _bounds(retained)[0] > 0, 60,
                    "the cleaner to remove every commitlog file but the one being written")

    asyncio.run(fill())
    low, high = _bounds(retained)
    assert 0 < low < high == MESSAGES
    return low, high


def _read(spark: Any, cluster: Cluster, fail_on_data_loss: str) -> Any:
    return (spark.read.format("rocketmq").option("namesrv", cluster.namesrv.addr).option("topic", TOPIC)
            .option("startingOffsets", json.dumps({BROKER: {"0": 0}})).option("failOnDataLoss", fail_on_data_loss)
            .load())


def test_offset_under_retention_fails_naming_the_queue(spark: Any, retained: Cluster, trimmed: tuple[int, int]
                                                        ) -> None:
    with pytest.raises(Exception, match=rf"{TOPIC} {BROKER}:0: offset 0 is below the queue's minimum {trimmed[0]}"):
        _read(spark, retained, "true").count()


def test_offset_under_retention_skips_to_what_is_left(spark: Any, retained: Cluster, trimmed: tuple[int, int]
                                                     ) -> None:
    low, high = trimmed
    rows = _read(spark, retained, "false").select("queue_offset", "keys").collect()
    assert sorted(r.queue_offset for r in rows) == list(range(low, high))
    assert {r.keys for r in rows} == {f"r{i}" for i in range(low, high)}
