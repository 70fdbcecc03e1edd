"""SyncMQAdmin: MQAdmin for scripts and Spark executors, every operation a plain blocking method.

An event loop runs in a daemon thread (the client's LoopThread); each method runs its MQAdmin twin
there and waits. The methods are written out, so signatures, types and completion work as for MQAdmin.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Self, TypeVar

from mqtools.client.admin.base import SetReads
from mqtools.client.admin.client import MQAdmin
from mqtools.client.admin.messages import SEND_GROUP
from mqtools.client.admin.models.acl import AclConfig, AclVersion
from mqtools.client.admin.models.brokers import (
    BrokerConsumeStats,
    BrokerRuntime,
    ClusterSnapshot,
    SendRT,
    TopicGroupStats,
)
from mqtools.client.admin.models.groups import (
    ClientConnection,
    ConsumerProgress,
    ConsumerRunningInfo,
    GroupChange,
    GroupConnections,
    GroupEntry,
    GroupSummary,
    OffsetReset,
    ResetTarget,
)
from mqtools.client.admin.models.ha import (
    DEFAULT_MAX_CATCHUP_S,
    DEFAULT_MAX_DIFF,
    HAReadiness,
    HAStatus,
    ReplicationGroup,
)
from mqtools.client.admin.models.live import NamesrvStatus, TopicOverview
from mqtools.client.admin.models.messages import MessageTrace, MessageTrack, QueueSpan, Resend
from mqtools.client.admin.models.topics import TopicChange, TopicEntry, TopicStatus, TopicUsage
from mqtools.client.admin.models.transactions import BrokerTransactions
from mqtools.client.sync import LoopThread
from mqtools.client.types import PullResult, SendResult
from mqtools.common.message import MessageExt
from mqtools.common.security import ClientSecurity
from mqtools.common.topics import RMQ_SYS_TRACE_TOPIC, TOOLS_CONSUMER_GROUP
from mqtools.remoting.bodies import (
    BrokerLiveTable,
    BrokerStatsData,
    ClusterInfo,
    MessageQueue,
    PlainAccessConfig,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicOffset,
    TopicRouteData,
)
from mqtools.remoting.codes import ResponseCode
from mqtools.remoting.command import RemotingCommand

T = TypeVar("T")


class SyncMQAdmin:
    """Blocking MQAdmin: `with SyncMQAdmin("127.0.0.1:9876") as admin: admin.topic_list()`."""

    def __init__(self, namesrv: str | list[str], *, timeout: float = 5.0,
                 security: ClientSecurity | None = None) -> None:
        self._loop = LoopThread("mq-admin")

        async def make() -> MQAdmin:
            return MQAdmin(namesrv, timeout=timeout, security=security)

        try:
            self._admin = self._loop.run(make())
        except BaseException:
            self._loop.close()
            raise

    @property
    def namesrv_addrs(self) -> list[str]:
        return self._admin.namesrv_addrs

    def close(self) -> None:
        try:
            self._loop.run(self._admin.close())
        finally:
            self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def acl_config(self, broker_addr: str) -> AclConfig:
        return self._loop.run(self._admin.acl_config(broker_addr))

    def acl_configs(self, cluster: str | None = None, broker_addr: str | None = None) -> list[AclConfig]:
        return self._loop.run(self._admin.acl_configs(cluster, broker_addr))

    def acl_version(self, broker_addr: str) -> AclVersion:
        return self._loop.run(self._admin.acl_version(broker_addr))

    def acl_versions(self, cluster: str | None = None, broker_addr: str | None = None) -> list[AclVersion]:
        return self._loop.run(self._admin.acl_versions(cluster, broker_addr))

    def add_write_perm(self, broker_name: str) -> dict[str, int]:
        return self._loop.run(self._admin.add_write_perm(broker_name))

    def broker_config(self, broker_addr: str) -> dict[str, str]:
        return self._loop.run(self._admin.broker_config(broker_addr))

    def broker_consume_stats(self, broker_addr: str, *, order_only: bool = False, timeout: float | None = None) -> BrokerConsumeStats:
        return self._loop.run(self._admin.broker_consume_stats(broker_addr, order_only=order_only, timeout=timeout))

    def broker_live_tables(self) -> dict[str, BrokerLiveTable | None]:
        return self._loop.run(self._admin.broker_live_tables())

    def broker_runtime_info(self, broker_addr: str) -> BrokerRuntime:
        return self._loop.run(self._admin.broker_runtime_info(broker_addr))

    def broker_stats(self, broker_addr: str, stats_name: str, stats_key: str) -> BrokerStatsData:
        return self._loop.run(self._admin.broker_stats(broker_addr, stats_name, stats_key))

    def call(self, addr: str | None, code: int, ext: dict[str, str] | None = None, body: bytes | None = None, *, ok: tuple[int, ...] = (ResponseCode.SUCCESS,), timeout: float | None = None) -> RemotingCommand:
        return self._loop.run(self._admin.call(addr, code, ext, body, ok=ok, timeout=timeout))

    def clean_expired_consume_queue(self, broker_addr: str) -> None:
        return self._loop.run(self._admin.clean_expired_consume_queue(broker_addr))

    def clone_group_offset(self, src_group: str, dest_group: str, topic: str, *, dry_run: bool = False) -> list[OffsetReset]:
        return self._loop.run(self._admin.clone_group_offset(src_group, dest_group, topic, dry_run=dry_run))

    def cluster_info(self) -> ClusterInfo:
        return self._loop.run(self._admin.cluster_info())

    def cluster_snapshot(self, *, runtime: bool = True) -> ClusterSnapshot:
        return self._loop.run(self._admin.cluster_snapshot(runtime=runtime))

    def consumer_connections(self, group: str, broker_addr: str | None = None) -> GroupConnections:
        return self._loop.run(self._admin.consumer_connections(group, broker_addr))

    def consumer_groups(self) -> list[str]:
        return self._loop.run(self._admin.consumer_groups())

    def consumer_progress(self, group: str, topic: str | None = None, *, cluster: str | None = None) -> ConsumerProgress:
        return self._loop.run(self._admin.consumer_progress(group, topic, cluster=cluster))

    def consumer_running_info(self, group: str, client_id: str, *, jstack: bool = False) -> ConsumerRunningInfo:
        return self._loop.run(self._admin.consumer_running_info(group, client_id, jstack=jstack))

    def create_subscription_group(self, config: SubscriptionGroupConfig, *, cluster: str | None = None, broker_addr: str | None = None, exist_ok: bool = True) -> list[str]:
        return self._loop.run(self._admin.create_subscription_group(config, cluster=cluster, broker_addr=broker_addr, exist_ok=exist_ok))

    def create_topic(self, config: TopicConfig, *, cluster: str | None = None, broker_addr: str | None = None, exist_ok: bool = True) -> list[str]:
        return self._loop.run(self._admin.create_topic(config, cluster=cluster, broker_addr=broker_addr, exist_ok=exist_ok))

    def dead_messages(self, group: str) -> list[MessageExt]:
        return self._loop.run(self._admin.dead_messages(group))

    def delete_acl_account(self, access_key: str, *, cluster: str | None = None, broker_addr: str | None = None) -> list[str]:
        return self._loop.run(self._admin.delete_acl_account(access_key, cluster=cluster, broker_addr=broker_addr))

    def delete_kv(self, namespace: str, key: str) -> None:
        return self._loop.run(self._admin.delete_kv(namespace, key))

    def delete_subscription_group(self, group: str, *, cluster: str | None = None, broker_addr: str | None = None, clean_offset: bool = False) -> list[str]:
        return self._loop.run(self._admin.delete_subscription_group(group, cluster=cluster, broker_addr=broker_addr, clean_offset=clean_offset))

    def delete_topic(self, topic: str, cluster: str | None = None) -> list[str]:
        return self._loop.run(self._admin.delete_topic(topic, cluster))

    def find_message(self, topic: str, msg_id: str) -> MessageExt | None:
        return self._loop.run(self._admin.find_message(topic, msg_id))

    def get_kv(self, namespace: str, key: str) -> str | None:
        return self._loop.run(self._admin.get_kv(namespace, key))

    def group_list(self) -> list[GroupEntry]:
        return self._loop.run(self._admin.group_list())

    def group_summaries(self, groups: list[str] | None = None) -> list[GroupSummary]:
        return self._loop.run(self._admin.group_summaries(groups))

    def ha_status(self, broker_addr: str) -> HAStatus:
        return self._loop.run(self._admin.ha_status(broker_addr))

    def ha_ready(self, broker_name: str, *, max_diff: int = DEFAULT_MAX_DIFF, max_catchup_s: float = DEFAULT_MAX_CATCHUP_S, window: float = 2.0) -> HAReadiness:
        return self._loop.run(self._admin.ha_ready(broker_name, max_diff=max_diff, max_catchup_s=max_catchup_s, window=window))

    def ha_replication(self, *, broker_addr: str | None = None, cluster: str | None = None, broker_name: str | None = None, window: float = 2.0) -> list[ReplicationGroup]:
        return self._loop.run(self._admin.ha_replication(broker_addr=broker_addr, cluster=cluster, broker_name=broker_name, window=window))

    def master_replication(self, master: str, slaves: list[str]) -> HAStatus:
        return self._loop.run(self._admin.master_replication(master, slaves))

    def kv_list(self, namespace: str) -> dict[str, str]:
        return self._loop.run(self._admin.kv_list(namespace))

    def master_addrs(self, cluster: str | None = None) -> dict[str, str]:
        return self._loop.run(self._admin.master_addrs(cluster))

    def message_at(self, mq: MessageQueue, offset: int, group: str = TOOLS_CONSUMER_GROUP) -> MessageExt | None:
        return self._loop.run(self._admin.message_at(mq, offset, group))

    def message_queues(self, topic: str) -> list[MessageQueue]:
        return self._loop.run(self._admin.message_queues(topic))

    def open_transactions(self) -> list[BrokerTransactions]:
        return self._loop.run(self._admin.open_transactions())

    def message_trace(self, msg_id: str, trace_topic: str = RMQ_SYS_TRACE_TOPIC) -> MessageTrace:
        return self._loop.run(self._admin.message_trace(msg_id, trace_topic))

    def message_tracks(self, msg: MessageExt) -> list[MessageTrack]:
        return self._loop.run(self._admin.message_tracks(msg))

    def namesrv_probe(self) -> list[NamesrvStatus]:
        return self._loop.run(self._admin.namesrv_probe())

    def namesrv_config(self) -> dict[str, dict[str, str]]:
        return self._loop.run(self._admin.namesrv_config())

    def producer_connections(self, group: str, topic: str) -> list[ClientConnection]:
        return self._loop.run(self._admin.producer_connections(group, topic))

    def pull_messages(self, mq: MessageQueue, offset: int, *, max_nums: int = 32, expression: str = "*", group: str = TOOLS_CONSUMER_GROUP) -> PullResult:
        return self._loop.run(self._admin.pull_messages(mq, offset, max_nums=max_nums, expression=expression, group=group))

    def put_kv(self, namespace: str, key: str, value: str) -> None:
        return self._loop.run(self._admin.put_kv(namespace, key, value))

    def query_by_key(self, topic: str, key: str, *, max_num: int = 64, begin_ms: int = 0, end_ms: int | None = None) -> list[MessageExt]:
        return self._loop.run(self._admin.query_by_key(topic, key, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms))

    def query_by_unique_key(self, topic: str, uniq_key: str, *, begin_ms: int = 0, end_ms: int | None = None) -> list[MessageExt]:
        return self._loop.run(self._admin.query_by_unique_key(topic, uniq_key, begin_ms=begin_ms, end_ms=end_ms))

    def offsets_for_time(self, topic: str, timestamp_ms: int) -> dict[MessageQueue, int]:
        return self._loop.run(self._admin.offsets_for_time(topic, timestamp_ms))

    def queue_bounds(self, topic: str) -> dict[MessageQueue, tuple[int, int]]:
        return self._loop.run(self._admin.queue_bounds(topic))

    def queue_span(self, mq: MessageQueue, *, begin_ms: int | None = None, end_ms: int | None = None) -> QueueSpan:
        return self._loop.run(self._admin.queue_span(mq, begin_ms=begin_ms, end_ms=end_ms))

    def resend_dead(self, group: str, msg_ids: list[str] | None = None) -> list[Resend]:
        return self._loop.run(self._admin.resend_dead(group, msg_ids))

    def committed_offsets(self, group: str, topic: str) -> dict[MessageQueue, int | None]:
        return self._loop.run(self._admin.committed_offsets(group, topic))

    def read_sets(self, sets: Mapping[str, Mapping[int, str]], fn: Callable[[str], Awaitable[T]]) -> SetReads[T]:
        return self._loop.run(self._admin.read_sets(sets, fn))

    def reset_group_to_latest(self, group: str) -> list[OffsetReset]:
        return self._loop.run(self._admin.reset_group_to_latest(group))

    def reset_offset_by_time(self, group: str, topic: str, timestamp_ms: int, *, force: bool = True, dry_run: bool = False, cluster: str | None = None) -> list[OffsetReset]:
        return self._loop.run(self._admin.reset_offset_by_time(group, topic, timestamp_ms, force=force, dry_run=dry_run, cluster=cluster))

    def reset_offsets(self, group: str, topic: str, target: ResetTarget, *, dry_run: bool = False) -> list[OffsetReset]:
        return self._loop.run(self._admin.reset_offsets(group, topic, target, dry_run=dry_run))

    def route_masters(self, topic: str) -> dict[str, str]:
        return self._loop.run(self._admin.route_masters(topic))

    def send_message(self, topic: str, body: bytes, *, tags: str | None = None, keys: str | None = None, broker_name: str | None = None, queue_id: int | None = None) -> SendResult:
        return self._loop.run(self._admin.send_message(topic, body, tags=tags, keys=keys, broker_name=broker_name, queue_id=queue_id))

    def send_rt(self, broker_names: list[str], amount: int, size: int, *, group: str = SEND_GROUP,
                on_send: Callable[[], None] | None = None) -> list[SendRT]:
        return self._loop.run(self._admin.send_rt(broker_names, amount, size, group=group, on_send=on_send))

    def stats_all(self, topic: str | None = None, *, active_only: bool = False) -> list[TopicGroupStats]:
        return self._loop.run(self._admin.stats_all(topic, active_only=active_only))

    def subscription_group(self, group: str) -> GroupEntry:
        return self._loop.run(self._admin.subscription_group(group))

    def subscription_groups(self, broker_addr: str) -> dict[str, SubscriptionGroupConfig]:
        return self._loop.run(self._admin.subscription_groups(broker_addr))

    def topic_catalogue(self, cluster: str | None = None) -> list[TopicEntry]:
        return self._loop.run(self._admin.topic_catalogue(cluster))

    def topic_clusters(self, topic: str) -> list[str]:
        return self._loop.run(self._admin.topic_clusters(topic))

    def topic_configs(self, broker_addr: str) -> dict[str, TopicConfig]:
        return self._loop.run(self._admin.topic_configs(broker_addr))

    def topic_consumed_by(self, topic: str) -> list[str]:
        return self._loop.run(self._admin.topic_consumed_by(topic))

    def topic_list(self) -> list[str]:
        return self._loop.run(self._admin.topic_list())

    def topic_masters(self, topic: str, cluster: str | None = None) -> dict[str, str]:
        return self._loop.run(self._admin.topic_masters(topic, cluster))

    def topic_overview(self, *, stats: bool = True) -> TopicOverview:
        return self._loop.run(self._admin.topic_overview(stats=stats))

    def topic_queues(self, topic: str) -> list[MessageQueue]:
        return self._loop.run(self._admin.topic_queues(topic))

    def topic_route(self, topic: str) -> TopicRouteData:
        return self._loop.run(self._admin.topic_route(topic))

    def topic_stats(self, topic: str, cluster: str | None = None) -> dict[MessageQueue, TopicOffset]:
        return self._loop.run(self._admin.topic_stats(topic, cluster))

    def topic_status(self, topic: str, cluster: str | None = None) -> TopicStatus:
        return self._loop.run(self._admin.topic_status(topic, cluster))

    def topic_usage(self) -> list[TopicUsage]:
        return self._loop.run(self._admin.topic_usage())

    def topics_by_cluster(self, cluster: str) -> list[str]:
        return self._loop.run(self._admin.topics_by_cluster(cluster))

    def update_acl_account(self, account: PlainAccessConfig, *, cluster: str | None = None, broker_addr: str | None = None) -> list[str]:
        return self._loop.run(self._admin.update_acl_account(account, cluster=cluster, broker_addr=broker_addr))

    def update_broker_config(self, broker_addr: str, values: dict[str, str]) -> None:
        return self._loop.run(self._admin.update_broker_config(broker_addr, values))

    def update_global_white_addrs(self, addrs_patterns: list[str], *, cluster: str | None = None, broker_addr: str | None = None) -> list[str]:
        return self._loop.run(self._admin.update_global_white_addrs(addrs_patterns, cluster=cluster, broker_addr=broker_addr))

    def update_namesrv_config(self, values: dict[str, str]) -> list[str]:
        return self._loop.run(self._admin.update_namesrv_config(values))

    def update_subscription_group(self, group: str, changes: Mapping[str, Any], *, cluster: str | None = None, broker_addr: str | None = None) -> list[GroupChange]:
        return self._loop.run(self._admin.update_subscription_group(group, changes, cluster=cluster, broker_addr=broker_addr))

    def update_topic(self, topic: str, *, cluster: str | None = None, broker_addr: str | None = None, read_queue_nums: int | None = None, write_queue_nums: int | None = None, perm: int | None = None, order: bool | None = None) -> list[TopicChange]:
        return self._loop.run(self._admin.update_topic(topic, cluster=cluster, broker_addr=broker_addr, read_queue_nums=read_queue_nums, write_queue_nums=write_queue_nums, perm=perm, order=order))

    def view_message(self, offset_msg_id: str) -> MessageExt:
        return self._loop.run(self._admin.view_message(offset_msg_id))

    def wipe_write_perm(self, broker_name: str) -> dict[str, int]:
        return self._loop.run(self._admin.wipe_write_perm(broker_name))
