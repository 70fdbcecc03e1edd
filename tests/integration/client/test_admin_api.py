"""MQAdmin against real `mq namesrv` + two `mq broker` processes (cluster ClientIT)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from support.clientsupport import Cluster, create_topic, until

from mqtools.client.admin import MQAdmin, SyncMQAdmin
from mqtools.client.errors import (
    ConsumerNotOnlineError,
    MQBrokerError,
    MQClientError,
    NoPermissionError,
    SubscriptionGroupNotExistError,
    TopicNotExistError,
    UnreachableError,
)
from mqtools.client.producer import Producer
from mqtools.client.pull_consumer import PullConsumer
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult
from mqtools.common.message import Message, MessageExt
from mqtools.common.perm import PERM_WRITE
from mqtools.common.topics import NAMESPACE_ORDER_TOPIC_CONFIG
from mqtools.remoting.bodies import MessageQueue, SubscriptionGroupConfig, TopicConfig, TopicRouteData
from mqtools.remoting.codes import ResponseCode

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]
CLUSTER = "ClientIT"


@pytest.fixture
async def admin(cluster: Cluster) -> AsyncIterator[MQAdmin]:
    async with MQAdmin(cluster.namesrv.addr) as a:
        yield a


async def send(cluster: Cluster, topic: str, count: int, prefix: str, **props: str) -> list:
    async with Producer(f"PG_{topic}", namesrv=cluster.namesrv.addr) as producer:
        return [await producer.send(Message(topic, f"{prefix}-{i}".encode(), properties=dict(props)))
                for i in range(count)]


async def test_cluster_view_and_live_table(cluster: Cluster, admin: MQAdmin) -> None:
    info = await admin.cluster_info()
    assert info.cluster_addr_table[CLUSTER] == {"broker-a", "broker-b"}
    masters = await admin.master_addrs(CLUSTER)
    assert masters == {name: proc.addr for name, proc in cluster.brokers.items()}
    live = (await admin.cluster.broker_live_tables())[cluster.namesrv.addr]
    assert live is not None and {e.broker_addr for e in live.brokers} == set(masters.values())
    assert all(e.cluster_name == CLUSTER and e.broker_id == 0 for e in live.brokers)
    snapshot = await admin.cluster.cluster_snapshot()
    assert snapshot.live_table_available and snapshot.clusters == {CLUSTER: ["broker-a", "broker-b"]}
    assert [(b.broker_name, b.broker_id, b.addr) for b in snapshot.brokers] == [
        (name, 0, masters[name]) for name in ("broker-a", "broker-b")]
    for row in snapshot.brokers:
        beat = row.heartbeats[cluster.namesrv.addr]
        assert beat is not None and row.heartbeat_age_ms is not None
        assert 0 <= row.heartbeat_age_ms < beat.timeout_ms and beat.expires_in_ms == beat.timeout_ms - beat.age_ms
        assert row.runtime is not None and row.error is None and row.runtime.commitlog_max_offset is not None
    with pytest.raises(MQClientError, match="cluster Nope not found"):
        await admin.master_addrs("Nope")


async def test_topic_create_stats_delete_on_every_master(cluster: Cluster, admin: MQAdmin) -> None:
    addrs = await admin.topics.create_topic(TopicConfig("AdminTopic", 3, 3), cluster=CLUSTER)
    assert sorted(addrs) == sorted(p.addr for p in cluster.brokers.values())

    async def routed() -> bool:
        try:
            return len((await admin.topics.topic_route("AdminTopic")).queue_datas) == 2
        except MQBrokerError:
            return False

    await until(routed, 20, "AdminTopic routed to both brokers")
    assert "AdminTopic" in await admin.topics.topic_list()
    assert "AdminTopic" in await admin.topics.topics_by_cluster(CLUSTER)
    for addr in addrs:
        assert (await admin.topics.topic_configs(addr))["AdminTopic"].write_queue_nums == 3
    await send(cluster, "AdminTopic", 12, "s")
    stats = await admin.topics.topic_stats("AdminTopic")
    assert len(stats) == 6 and sum(o.max_offset for o in stats.values()) == 12
    assert [mq.queue_id for mq in stats][:3] == [0, 1, 2]

    assert sorted(await admin.topics.delete_topic("AdminTopic", CLUSTER)) == sorted(addrs)
    with pytest.raises(TopicNotExistError) as err:
        await admin.topics.topic_route("AdminTopic")
    assert err.value.code == ResponseCode.TOPIC_NOT_EXIST
    assert "AdminTopic" not in await admin.topics.topic_list()
    for addr in addrs:
        assert "AdminTopic" not in await admin.topics.topic_configs(addr)


async def test_ordered_topic_records_its_layout_in_kv(cluster: Cluster, admin: MQAdmin) -> None:
    await admin.topics.create_topic(TopicConfig("AdminOrdered", 2, 2, order=True), cluster=CLUSTER)
    assert await admin.namesrv.get_kv(NAMESPACE_ORDER_TOPIC_CONFIG, "AdminOrdered") == "broker-a:2;broker-b:2"
    await admin.topics.delete_topic("AdminOrdered", CLUSTER)
    assert await admin.namesrv.get_kv(NAMESPACE_ORDER_TOPIC_CONFIG, "AdminOrdered") is None


async def test_kv_config_round_trip(admin: MQAdmin) -> None:
    await admin.namesrv.put_kv("AdminNS", "k1", "v1")
    await admin.namesrv.put_kv("AdminNS", "k2", "v2")
    assert await admin.namesrv.get_kv("AdminNS", "k1") == "v1"
    assert await admin.namesrv.kv_list("AdminNS") == {"k1": "v1", "k2": "v2"}
    await admin.namesrv.delete_kv("AdminNS", "k1")
    assert await admin.namesrv.get_kv("AdminNS", "k1") is None
    assert await admin.namesrv.kv_list("NoSuchNS") == {}


async def test_wipe_and_add_write_permission(cluster: Cluster, admin: MQAdmin) -> None:
    await create_topic(cluster, "AdminPerm", 2)

    def perm_of(route: TopicRouteData, broker: str) -> int:
        return next(q.perm for q in route.queue_datas if q.broker_name == broker)

    wiped = await admin.namesrv.wipe_write_perm("broker-a")
    assert list(wiped.topics) == [cluster.namesrv.addr] and wiped.topics[cluster.namesrv.addr] >= 1
    assert wiped.failed == {} and wiped.error() is None
    route = await admin.topics.topic_route("AdminPerm")
    assert not perm_of(route, "broker-a") & PERM_WRITE and perm_of(route, "broker-b") & PERM_WRITE
    added = await admin.namesrv.add_write_perm("broker-a")
    assert added.topics[cluster.namesrv.addr] >= 1
    assert perm_of(await admin.topics.topic_route("AdminPerm"), "broker-a") & PERM_WRITE


async def test_subscription_groups(cluster: Cluster, admin: MQAdmin) -> None:
    config = SubscriptionGroupConfig("CG_ADMIN_SUB", retry_max_times=3, consume_broadcast_enable=False)
    await admin.groups.create_subscription_group(config, cluster=CLUSTER)
    for proc in cluster.brokers.values():
        got = (await admin.groups.subscription_groups(proc.addr))["CG_ADMIN_SUB"]
        assert got.retry_max_times == 3 and got.consume_broadcast_enable is False
    await admin.groups.delete_subscription_group("CG_ADMIN_SUB", broker_addr=cluster.brokers["broker-a"].addr)
    assert "CG_ADMIN_SUB" not in await admin.groups.subscription_groups(cluster.brokers["broker-a"].addr)
    assert "CG_ADMIN_SUB" in await admin.groups.subscription_groups(cluster.brokers["broker-b"].addr)
    with pytest.raises(MQClientError, match="exactly one"):
        await admin.groups.delete_subscription_group("CG_ADMIN_SUB")


async def test_consumer_progress_connections_and_reset_by_time(cluster: Cluster, admin: MQAdmin) -> None:
    await create_topic(cluster, "AdminReset", 2)
    await send(cluster, "AdminReset", 10, "early")
    await asyncio.sleep(0.05)
    middle = int(time.time() * 1000)
    await asyncio.sleep(0.05)
    await send(cluster, "AdminReset", 10, "late")

    got: list[MessageExt] = []
    consumer = PushConsumer("CG_ADMIN_RESET", namesrv=cluster.namesrv.addr, rebalance_interval=2.0,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe("AdminReset").register_listener(lambda msgs: got.extend(msgs) or ConsumeResult.CONSUME_SUCCESS)
    async with consumer:
        await until(lambda: len(got) >= 20, 30, "20 messages consumed")
        online = await admin.groups.consumer_connections("CG_ADMIN_RESET")
        assert [c.client_id for c in online.connections] == [consumer.instance.client_id]
        assert online.subscriptions == {"AdminReset": "*", "%RETRY%CG_ADMIN_RESET": "*"} and online.message_model == "CLUSTERING"
        assert "CG_ADMIN_RESET" in (await admin.topics.topic_consumed_by("AdminReset")).groups
        # our PushConsumer answers GET_CONSUMER_RUNNING_INFO as RocketMQ's clients do (relayed by a broker)
        info = await admin.groups.consumer_running_info("CG_ADMIN_RESET", consumer.instance.client_id)
        assert set(info.queues) == set(consumer.owned_queues) and info.orderly is False
        assert info.subscriptions == online.subscriptions and info.properties["messageModel"] == "CLUSTERING"
        held = [info.process_queues[mq] for mq in info.queues if mq.topic == "AdminReset"]
        assert len(held) == 4 and all(pq.locked and pq.last_pull_ms for pq in held)
        assert sum(1 for pq in held if pq.last_consume_ms) >= 1 and all(pq.cached == 0 for pq in held)
        with pytest.raises(MQBrokerError, match="The Consumer <CG_ADMIN_RESET> <nobody@1> not online"):
            await admin.groups.consumer_running_info("CG_ADMIN_RESET", "nobody@1")
    progress = await admin.groups.consumer_progress("CG_ADMIN_RESET", "AdminReset")
    assert len(progress.queues) == 4 and progress.total_diff == 0
    assert sum(q.consumer_offset or 0 for q in progress.queues) == 20
    assert all(q.last_timestamp_ms for q in progress.queues if q.consumer_offset)
    with pytest.raises(ConsumerNotOnlineError):
        await admin.groups.consumer_connections("CG_ADMIN_RESET")

    plan = await admin.offsets.reset_offset_by_time("CG_ADMIN_RESET", "AdminReset", middle, dry_run=True)
    assert len(plan) == 4 and sum(r.old or 0 for r in plan) == 20 and sum(r.new for r in plan) == 10
    unchanged = await admin.groups.consumer_progress("CG_ADMIN_RESET", "AdminReset")
    assert sum(q.consumer_offset or 0 for q in unchanged.queues) == 20

    done = await admin.offsets.reset_offset_by_time("CG_ADMIN_RESET", "AdminReset", middle)
    assert [(r.queue, r.old, r.new) for r in done] == [(r.queue, r.old, r.new) for r in plan]
    after = await admin.groups.consumer_progress("CG_ADMIN_RESET", "AdminReset")
    assert sum(q.consumer_offset or 0 for q in after.queues) == 10 and after.total_diff == 10


async def test_producer_connections(cluster: Cluster, admin: MQAdmin) -> None:
    await create_topic(cluster, "AdminProd", 1)
    async with Producer("PG_ADMIN_CONN", namesrv=cluster.namesrv.addr) as producer:
        await producer.send(Message("AdminProd", b"x"))
        await producer.instance.heartbeat()
        conns = (await admin.groups.producer_connections("PG_ADMIN_CONN", "AdminProd")).clients
        assert [c.client_id for c in conns] == [producer.instance.client_id]
        assert conns[0].language == "PYTHON"


async def test_query_messages_by_id_key_unique_key_and_offset(cluster: Cluster, admin: MQAdmin) -> None:
    await create_topic(cluster, "AdminQuery", 2)
    results = await send(cluster, "AdminQuery", 6, "q", KEYS="order-42 shared")
    first = results[0]
    by_id = await admin.messages.view_message(first.offset_msg_id)
    assert by_id.body == b"q-0" and by_id.topic == "AdminQuery"
    by_key = await admin.messages.query_by_key("AdminQuery", "order-42")
    assert sorted(m.body for m in by_key.messages) == sorted(f"q-{i}".encode() for i in range(6))
    assert by_key.unreachable == []
    assert (await admin.messages.query_by_key("AdminQuery", "no-such-key")).messages == []
    by_uniq = await admin.messages.query_by_unique_key("AdminQuery", results[3].msg_id)
    assert [m.body for m in by_uniq.messages] == [b"q-3"]
    at = await admin.messages.message_at(first.queue, first.queue_offset)
    assert at is not None and at.body == b"q-0"
    assert await admin.messages.message_at(MessageQueue("AdminQuery", first.queue.broker_name, 0), 10_000) is None
    with pytest.raises(MQClientError, match="not an offset message id"):
        await admin.messages.view_message("zz")


async def test_broker_runtime_config_stats_and_ha(cluster: Cluster, admin: MQAdmin) -> None:
    addr = cluster.brokers["broker-a"].addr
    runtime = await admin.brokers.broker_runtime_info(addr)
    assert runtime.put_total_today_now is not None and runtime.commitlog_max_offset is not None
    assert runtime.version_desc and runtime.boot_timestamp_ms and runtime.broker_active is True
    config = await admin.brokers.broker_config(addr)
    assert config["brokerName"] == "broker-a" and config["brokerClusterName"] == CLUSTER
    await admin.brokers.update_broker_config(addr, {"maxMessageSize": "1048576"})
    assert (await admin.brokers.broker_config(addr))["maxMessageSize"] == "1048576"
    with pytest.raises(NoPermissionError) as err:
        await admin.brokers.update_broker_config(addr, {"brokerConfigPath": "/tmp/x"})
    assert err.value.code == ResponseCode.NO_PERMISSION and err.value.remark
    ha = await admin.brokers.ha_status(addr)
    assert ha.is_master and ha.slaves == [] and ha.client is None and ha.in_sync_slaves == 0
    await create_topic(cluster, "AdminStats", 1)
    await send(cluster, "AdminStats", 3, "st")
    stats = await admin.brokers.broker_stats(cluster.brokers["broker-a"].addr, "TOPIC_PUT_NUMS", "AdminStats")
    b_stats = await admin.brokers.broker_stats(cluster.brokers["broker-b"].addr, "TOPIC_PUT_NUMS", "AdminStats")
    assert stats.stats_minute.sum + b_stats.stats_minute.sum == 3


async def test_auto_create_subscription_group_switched_at_runtime_applies_to_the_next_pull(
        cluster: Cluster, admin: MQAdmin) -> None:
    """autoCreateSubscriptionGroup set by UPDATE_BROKER_CONFIG applies to the next lookup, as Apache's does: a pull of
    a group the broker lacks is refused while it is off, and creates the group once it is on again."""
    addr = cluster.brokers["broker-a"].addr
    await create_topic(cluster, "AdminAutoGroup", 1)
    mq = MessageQueue("AdminAutoGroup", "broker-a", 0)
    await admin.brokers.update_broker_config(addr, {"autoCreateSubscriptionGroup": "false"})
    try:
        async with PullConsumer("AdminNoSuchGroup", namesrv=cluster.namesrv.addr) as consumer:
            with pytest.raises(SubscriptionGroupNotExistError):
                await consumer.pull(mq, None, 0)
            assert "AdminNoSuchGroup" not in await admin.groups.subscription_groups(addr)
    finally:
        await admin.brokers.update_broker_config(addr, {"autoCreateSubscriptionGroup": "true"})
    async with PullConsumer("AdminNoSuchGroup", namesrv=cluster.namesrv.addr) as consumer:
        await consumer.pull(mq, None, 0)
    assert "AdminNoSuchGroup" in await admin.groups.subscription_groups(addr)


async def test_unreachable_broker_is_a_clear_error(admin: MQAdmin) -> None:
    with pytest.raises(UnreachableError, match="127.0.0.1:1"):
        await admin.brokers.broker_runtime_info("127.0.0.1:1")


def test_blocking_facade(cluster: Cluster) -> None:
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        assert set(admin.master_addrs(CLUSTER)) == {"broker-a", "broker-b"}
        assert admin.namesrv_addrs == [cluster.namesrv.addr]
