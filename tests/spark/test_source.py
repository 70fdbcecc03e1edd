"""The rocketmq data source on a real local SparkSession against a real name server and two brokers."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import time
from collections import Counter
from typing import Any

import pytest
from support.clientsupport import Cluster, create_topic

from mqtools.client.admin.sync import SyncMQAdmin

N = 40


def _stored(cluster: Cluster, topic: str) -> int:
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        return sum(high - low for low, high in admin.queue_offsets.queue_bounds(topic).values())


def _reader(spark: Any, cluster: Cluster, topic: str, **options: str) -> Any:
    read = spark.read.format("rocketmq").option("namesrv", cluster.namesrv.addr).option("topic", topic)
    for key, value in options.items():
        read = read.option(key, value)
    return read.load()


def _write(spark: Any, cluster: Cluster, topic: str, rows: list[tuple[Any, ...]]) -> None:
    schema = "body binary, tags string, keys string, properties map<string,string>"
    (spark.createDataFrame(rows, schema).repartition(2).write.format("rocketmq")
     .option("namesrv", cluster.namesrv.addr).option("topic", topic).mode("append").save())


@pytest.fixture(scope="module")
def written(spark: Any, cluster: Cluster) -> tuple[str, list[tuple[Any, ...]]]:
    """N messages written through the data source, with tags, keys and properties."""
    topic = "SparkRoundTrip"
    asyncio.run(create_topic(cluster, topic, queues=2))
    rows = [(f"body-{i}".encode(), f"Tag{i % 2}", f"key-{i}", {"idx": str(i), "kind": "spark"}) for i in range(N)]
    _write(spark, cluster, topic, rows)
    return topic, rows


def test_write_then_read_back_exactly(spark: Any, cluster: Cluster, written: tuple[str, list[Any]]) -> None:
    topic, rows = written
    assert _stored(cluster, topic) == N
    got = _reader(spark, cluster, topic).collect()
    assert len(got) == N
    by_body = {bytes(r.body): r for r in got}
    assert len(by_body) == N
    for body, tags, keys, props in rows:
        row = by_body[body]
        assert (row.tags, row.keys, row.topic) == (tags, keys, topic)
        assert {k: row.properties[k] for k in props} == props
        assert row.broker in ("broker-a", "broker-b") and row.msg_id and row.store_host.startswith("127.0.0.1")
        assert row.born_timestamp <= row.store_timestamp or row.born_timestamp.year == row.store_timestamp.year
    # subExpression filters on the brokers' tags
    tagged = _reader(spark, cluster, topic, subExpression="Tag1").collect()
    assert sorted(bytes(r.body) for r in tagged) == sorted(b for b, t, _, _ in rows if t == "Tag1")


def test_offset_ranges(spark: Any, cluster: Cluster, written: tuple[str, list[Any]]) -> None:
    topic, _ = written
    everything = _reader(spark, cluster, topic).select("broker", "queue_id", "queue_offset").collect()
    assert _reader(spark, cluster, topic, startingOffsets="latest").count() == 0
    assert _reader(spark, cluster, topic, endingOffsets="earliest").count() == 0
    # JSON: from offset 3 of the fullest queue up to (not including) 7; every other queue read whole (the
    # writer's auto-batches fill some queues more than others)
    counts = Counter((r.broker, r.queue_id) for r in everything)
    (broker, queue), held = counts.most_common(1)[0]
    assert held >= 7
    start = {broker: {str(queue): 3}}
    end = {broker: {str(queue): 7}}
    got = _reader(spark, cluster, topic, startingOffsets=json.dumps(start), endingOffsets=json.dumps(end))
    picked = got.select("broker", "queue_id", "queue_offset").collect()
    chosen = sorted(r.queue_offset for r in picked if (r.broker, r.queue_id) == (broker, queue))
    assert chosen == [3, 4, 5, 6]
    others = [r for r in everything if (r.broker, r.queue_id) != (broker, queue)]
    assert len(picked) == 4 + len(others)


def test_time_range_selects_what_was_stored_after(spark: Any, cluster: Cluster, written: tuple[str, list[Any]]) -> None:
    topic, _ = written
    time.sleep(0.05)
    cut = int(time.time() * 1000)
    time.sleep(0.05)
    later = [(f"late-{i}".encode(), "Late", f"late-{i}", {}) for i in range(6)]
    _write(spark, cluster, topic, later)
    got = _reader(spark, cluster, topic, startingOffsets=str(cut)).collect()
    assert sorted(bytes(r.body) for r in got) == sorted(b for b, _, _, _ in later)
    before = _reader(spark, cluster, topic, endingOffsets=str(cut)).count()
    assert before == N


def test_min_partitions_splits_and_reads_each_once(spark: Any, cluster: Cluster,
                                                    written: tuple[str, list[Any]]) -> None:
    topic, _ = written
    df = _reader(spark, cluster, topic, minPartitions="9", pullBatchSize="3")
    assert df.rdd.getNumPartitions() >= 9
    keys = df.select("broker", "queue_id", "queue_offset").collect()
    assert len(keys) == len(set(keys)) == _stored(cluster, topic)


def test_small_queue_ranges_are_read_by_one_task_unless_min_rows_says_otherwise(
        spark: Any, cluster: Cluster, written: tuple[str, list[Any]]) -> None:
    """A task costs Spark tens of milliseconds: the four queues' few rows are one task by default
    (minRowsPerPartition 10,000), one task a queue with minRowsPerPartition=1; the same rows either way."""
    topic, _ = written

    def keys(df: Any) -> list[Any]:
        return sorted(df.select("broker", "queue_id", "queue_offset").collect())

    together = _reader(spark, cluster, topic)
    apart = _reader(spark, cluster, topic, minRowsPerPartition="1")
    assert together.rdd.getNumPartitions() == 1
    assert apart.rdd.getNumPartitions() == 4  # two queues on each of two brokers
    assert keys(together) == keys(apart) and len(keys(apart)) == _stored(cluster, topic)


def _groups(cluster: Cluster) -> dict[str, set[str]]:
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        return {name: set(admin.groups.subscription_groups(b.addr)) for name, b in cluster.brokers.items()}


def test_reads_pull_as_one_group_that_a_broker_without_auto_creation_must_have(
        spark: Any, cluster: Cluster, written: tuple[str, list[Any]]) -> None:
    """Every read pulls as mq-spark-reader (it commits nothing): four queues read one task a queue, twice, leave that
    one group, not one per queue per read. A broker that does not create groups (autoCreateSubscriptionGroup switched
    off while it runs) fails a read naming a group it lacks at once, saying what to do, instead of retrying for
    pullTimeoutMs; once the group is created the same read gets every row, and once an operator switches the group's
    consuming off, the read fails at once again, saying so."""
    from mqtools.remoting.bodies import SubscriptionGroupConfig

    topic, _ = written
    before = _groups(cluster)
    for _ in range(2):
        assert _reader(spark, cluster, topic, minRowsPerPartition="1").count() == _stored(cluster, topic)
    after = _groups(cluster)
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        read = {mq.broker_name for mq, (low, high) in admin.queue_offsets.queue_bounds(topic).items() if high > low}
    assert read, "the rows are on some broker"
    assert {name: after[name] - before[name] for name in after} == {
        name: {"mq-spark-reader"} - before[name] if name in read else set() for name in after}

    group = "SparkOpsReaders"
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        for broker in cluster.brokers.values():
            admin.brokers.update_broker_config(broker.addr, {"autoCreateSubscriptionGroup": "false"})
        try:
            t0 = time.monotonic()
            with pytest.raises(Exception, match=f"no subscription group {group} and does not create groups .*"
                                                f"mq admin group create {group} -c CLUSTER"):
                _reader(spark, cluster, topic, consumerGroup=group, pullTimeoutMs="60000").count()
            assert time.monotonic() - t0 < 30, "a missing group is not worth retrying"
            for broker in cluster.brokers.values():
                admin.groups.create_subscription_group(SubscriptionGroupConfig(group_name=group), broker_addr=broker.addr)
            assert _reader(spark, cluster, topic, consumerGroup=group).count() == _stored(cluster, topic)
            admin.groups.update_subscription_group(group, {"consume_enable": False})  # an operator stops its reads
            t0 = time.monotonic()
            with pytest.raises(Exception, match=f"subscription group {group} may not consume there "
                                                f"\\(consumeEnable=false\\): enable it \\(mq admin group update {group} "
                                                "--consume\\)"):
                _reader(spark, cluster, topic, consumerGroup=group, pullTimeoutMs="60000").count()
            assert time.monotonic() - t0 < 30, "a group switched off is not worth retrying"
        finally:
            for broker in cluster.brokers.values():
                admin.brokers.update_broker_config(broker.addr, {"autoCreateSubscriptionGroup": "true"})


def test_a_read_stopped_early_ends_its_pulls_with_it(cluster: Cluster, written: tuple[str, list[Any]],
                                                     caplog: pytest.LogCaptureFixture,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A LIMIT stops a partition's batches early: closing them ends the range's pulls and consumer then,
    not when asyncio finds a forgotten generator (it logs "Task was destroyed but it is pending")."""
    from mqtools.spark import reader
    from mqtools.spark.offsets import parse_spec, plan_topic

    topic, _ = written
    monkeypatch.setattr(reader, "ARROW_ROWS", 2)
    ranges = plan_topic(cluster.namesrv.addr, topic, parse_spec("earliest", "earliest"), parse_spec("latest", "latest"))
    batches = reader.read_batches(cluster.namesrv.addr, [max(ranges, key=lambda r: r.size)], batch=2)
    caplog.set_level(logging.ERROR, logger="asyncio")
    assert next(batches).num_rows == 2
    batches.close()
    gc.collect()
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []


def test_a_pull_batch_above_the_brokers_cap_pipelines_at_the_cap(cluster: Cluster,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """pullBatchSize 128 against brokers answering at most 32 (maxTransferCountOnMessageInMemory's default): the
    first answer sets how far apart the pipelined pulls go, so no gap is left for serial pulls to fill."""
    from mqtools.client.sync import SyncProducer
    from mqtools.common.message import Message
    from mqtools.spark import reader
    from mqtools.spark.offsets import parse_spec, plan_topic

    topic = "SparkPullStride"
    asyncio.run(create_topic(cluster, topic, queues=1))
    with SyncProducer("spark-stride-producer", namesrv=cluster.namesrv.addr) as producer:
        for i in range(400):
            producer.send(Message(topic, f"s-{i}".encode()))
    ranges = plan_topic(cluster.namesrv.addr, topic, parse_spec("earliest", "earliest"), parse_spec("latest", "latest"))
    biggest = max(ranges, key=lambda r: r.size)
    assert biggest.size >= 150
    serial = []
    real_pull = reader.RangeReader._pull

    async def counted(self: Any, *args: Any) -> Any:
        serial.append(args[-1])
        return await real_pull(self, *args)

    monkeypatch.setattr(reader.RangeReader, "_pull", counted)
    offsets = [o for b in reader.read_batches(cluster.namesrv.addr, [biggest], batch=128)
               for o in b.column("queue_offset").to_pylist()]
    assert offsets == list(range(biggest.start, biggest.end))
    assert serial == [biggest.start]  # only the first pull, which tells the stride


def test_a_workers_read_tasks_share_one_consumer_and_its_connection(cluster: Cluster,
                                                                  written: tuple[str, list[Any]]) -> None:
    """Two reads in one process, as a Python worker runs its tasks one after the other, pull through one pooled
    consumer: the second connects to no broker (the first's connection to it serves it, and stays open for the next
    task), where each task used to connect, ask the name server for the route and close again."""
    import psutil

    from mqtools.spark import reader
    from mqtools.spark.offsets import parse_spec, plan_topic

    topic, _ = written
    ranges = plan_topic(cluster.namesrv.addr, topic, parse_spec("earliest", "earliest"), parse_spec("latest", "latest"))
    biggest = max(ranges, key=lambda r: r.size)
    port = int(cluster.brokers[biggest.broker].addr.rsplit(":", 1)[1])

    def to_broker() -> set[int]:
        return {c.laddr.port for c in psutil.Process().net_connections("tcp")
                if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED}

    before = to_broker()
    counts, seen = [], []
    for _ in range(2):
        counts.append(sum(b.num_rows for b in reader.read_batches(cluster.namesrv.addr, [biggest],
                                                                   group="SparkPooledReaders")))
        seen.append(to_broker() - before)
    assert counts == [biggest.size] * 2
    assert len(seen[0]) == 1 and seen[1] == seen[0], seen


def test_bad_options_fail_clearly(spark: Any, cluster: Cluster, written: tuple[str, list[Any]]) -> None:
    topic, _ = written
    with pytest.raises(Exception, match="offsets JSON is not valid JSON"):
        _reader(spark, cluster, topic, startingOffsets="{broker-a").count()
    with pytest.raises(Exception, match="TOPIC_NOT_EXIST|No topic route"):
        _reader(spark, cluster, "NoSuchSparkTopic").count()
    with pytest.raises(Exception, match="pullBatchSize must be between 1 and 1024, not 0"):
        _reader(spark, cluster, topic, pullBatchSize="0").count()
    with pytest.raises(Exception, match=r"consumerGroup: the specified group\[a b\] contains illegal characters"):
        _reader(spark, cluster, topic, consumerGroup="a b").count()


def test_a_refused_write_fails_the_task_with_the_code(cluster: Cluster) -> None:
    """The pipelined writer (what each write task runs): a topic that takes no writes fails it with the
    RocketMQ code once the sends in flight have ended."""
    from mqtools.client.admin import MQAdmin
    from mqtools.remoting.bodies import TopicConfig
    from mqtools.spark.writer import SendFailed, write_rows

    async def read_only() -> None:
        async with MQAdmin(cluster.namesrv.addr) as admin:
            for broker in cluster.brokers.values():
                await admin.topics.create_topic(TopicConfig("SparkReadOnly", 2, 2, perm=4), broker_addr=broker.addr)

    asyncio.run(create_topic(cluster, "SparkReadOnly", queues=2))
    asyncio.run(read_only())
    time.sleep(0.5)
    rows = ({"body": f"r-{i}".encode()} for i in range(50))
    with pytest.raises(SendFailed, match=r"send to SparkReadOnly failed after 0 sent: CODE 16 .*forbidden"):
        write_rows(cluster.namesrv.addr, rows, topic="SparkReadOnly", task=0)


def test_plan_data_loss_both_ways() -> None:
    """An offset under a queue's minimum (removed by retention): fail clearly, or skip to the minimum."""
    from mqtools.spark.offsets import DataLossError, parse_spec, plan_ranges

    bounds = {("broker-a", 0): (10, 20), ("broker-a", 1): (0, 5)}
    start = parse_spec(json.dumps({"broker-a": {"0": 4}}), "earliest")
    with pytest.raises(DataLossError, match="below the queue's minimum 10"):
        plan_ranges("T", bounds, start, parse_spec("latest", "latest"))
    ranges = plan_ranges("T", bounds, start, parse_spec("latest", "latest"), fail_on_data_loss=False)
    assert [(r.queue_id, r.start, r.end) for r in ranges] == [(0, 10, 20), (1, 0, 5)]


def test_a_ranges_first_batch_is_its_first_answer_and_the_rest_come_arrow_rows_at_a_time(
        cluster: Cluster, written: tuple[str, list[Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark starts on a task's rows once the first pull is in, not after ARROW_ROWS of them."""
    from mqtools.spark import reader
    from mqtools.spark.offsets import parse_spec, plan_topic

    topic, _ = written
    monkeypatch.setattr(reader, "ARROW_ROWS", 8)
    ranges = plan_topic(cluster.namesrv.addr, topic, parse_spec("earliest", "earliest"), parse_spec("latest", "latest"))
    biggest = max(ranges, key=lambda r: r.size)
    assert biggest.size > 2 * 8 + 3
    sizes = [b.num_rows for b in reader.read_batches(cluster.namesrv.addr, [biggest], batch=3)]
    assert sizes[0] == 3 and sum(sizes) == biggest.size
    # a batch is handed over once it holds ARROW_ROWS, at the end of the answer that filled it
    assert all(8 <= size < 8 + 3 for size in sizes[1:-1]) and 0 < sizes[-1] < 8 + 3, sizes
