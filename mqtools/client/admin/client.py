"""MQAdmin: the operations `mq admin`, `mq top` and drills are built on, as typed async methods.

Every method speaks plain RocketMQ remoting, so it works against mq servers and Apache RocketMQ alike
(the role of RocketMQ's DefaultMQAdminExt); the one mq-private request (GET_BROKER_LIVE_TABLE) raises
NotAvailable where the server lacks it, and snapshots then carry None for what it would have told.
Cluster-wide writes go to every master of the cluster (and, for topic deletes and write permission,
to every name server), as mqadmin does. Results are the typed models of `models/`.

MQAdmin is a facade: each area of the API is a service of its own (`admin.topics`, `admin.groups`, ...,
each documented where it is written), sharing this object's connections and plumbing (AdminBase); the
methods below hand each call to its area, so callers need not know which area holds what.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mqtools.client.admin.acl import AclAdmin
from mqtools.client.admin.base import AdminBase
from mqtools.client.admin.brokers import BrokerAdmin
from mqtools.client.admin.cluster import ClusterAdmin
from mqtools.client.admin.controllers import ControllerAdmin
from mqtools.client.admin.dlq import DeadLetterAdmin
from mqtools.client.admin.groups import GroupAdmin
from mqtools.client.admin.ha import HAAdmin
from mqtools.client.admin.messages import SEND_GROUP, MessageAdmin
from mqtools.client.admin.models.ha import (
    DEFAULT_MAX_CATCHUP_S,
    DEFAULT_MAX_DIFF,
)
from mqtools.client.admin.namesrv import NamesrvAdmin
from mqtools.client.admin.namesrv_probe import NamesrvProbeAdmin
from mqtools.client.admin.offsets import LATEST, OffsetAdmin
from mqtools.client.admin.overview import OverviewAdmin
from mqtools.client.admin.queue_offsets import QueueOffsetAdmin
from mqtools.client.admin.topic_overview import TopicOverviewAdmin
from mqtools.client.admin.topics import TopicAdmin
from mqtools.client.admin.trace import TraceAdmin
from mqtools.client.admin.tracking import TrackingAdmin
from mqtools.client.admin.transactions import TransactionAdmin
from mqtools.common.security import ClientSecurity
from mqtools.common.topics import RMQ_SYS_TRACE_TOPIC, TOOLS_CONSUMER_GROUP

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping
    from typing import Any

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
        HAReadiness,
        HAStatus,
        ReplicationGroup,
    )
    from mqtools.client.admin.models.live import NamesrvStatus, TopicOverview
    from mqtools.client.admin.models.messages import MessageTrace, MessageTrack, QueueSpan, Resend
    from mqtools.client.admin.models.topics import TopicChange, TopicEntry, TopicStatus, TopicUsage
    from mqtools.client.admin.models.transactions import BrokerTransactions
    from mqtools.client.types import PullResult, SendResult
    from mqtools.common.message import MessageExt
    from mqtools.remoting.bodies import (
        BrokerLiveTable,
        BrokerStatsData,
        MessageQueue,
        PlainAccessConfig,
        SubscriptionGroupConfig,
        TopicConfig,
        TopicOffset,
        TopicRouteData,
    )

__all__ = ["LATEST", "MQAdmin"]


class MQAdmin(AdminBase):
    """Async admin client; `async with MQAdmin("127.0.0.1:9876") as admin: ...`."""

    def __init__(self, namesrv: str | list[str], *, timeout: float = 5.0,
                 security: ClientSecurity | None = None) -> None:
        super().__init__(namesrv, timeout=timeout, security=security)
        self.namesrv = NamesrvAdmin(self)
        self.topics = TopicAdmin(self)
        self.groups = GroupAdmin(self)
        self.brokers = BrokerAdmin(self)
        self.cluster = ClusterAdmin(self)
        self.messages = MessageAdmin(self)
        self.dlq = DeadLetterAdmin(self)
        self.offsets = OffsetAdmin(self)
        self.tracking = TrackingAdmin(self)
        self.traces = TraceAdmin(self)
        self.transactions = TransactionAdmin(self)
        self.overview = OverviewAdmin(self)
        self.topic_views = TopicOverviewAdmin(self)
        self.queue_offsets = QueueOffsetAdmin(self)
        self.ha = HAAdmin(self)
        self.namesrv_probes = NamesrvProbeAdmin(self)
        self.acl = AclAdmin(self)
        self.controllers = ControllerAdmin(self)

    async def put_kv(self, namespace: str, key: str, value: str) -> None:
        return await self.namesrv.put_kv(namespace, key, value)

    async def get_kv(self, namespace: str, key: str) -> str | None:
        return await self.namesrv.get_kv(namespace, key)

    async def delete_kv(self, namespace: str, key: str) -> None:
        return await self.namesrv.delete_kv(namespace, key)

    async def kv_list(self, namespace: str) -> dict[str, str]:
        return await self.namesrv.kv_list(namespace)

    async def wipe_write_perm(self, broker_name: str) -> dict[str, int]:
        return await self.namesrv.wipe_write_perm(broker_name)

    async def add_write_perm(self, broker_name: str) -> dict[str, int]:
        return await self.namesrv.add_write_perm(broker_name)

    async def namesrv_config(self) -> dict[str, dict[str, str]]:
        return await self.namesrv.namesrv_config()

    async def update_namesrv_config(self, values: dict[str, str]) -> list[str]:
        return await self.namesrv.update_namesrv_config(values)

    async def topic_list(self) -> list[str]:
        return await self.topics.topic_list()

    async def topics_by_cluster(self, cluster: str) -> list[str]:
        return await self.topics.topics_by_cluster(cluster)

    async def topic_route(self, topic: str) -> TopicRouteData:
        return await self.topics.topic_route(topic)

    async def topic_clusters(self, topic: str) -> list[str]:
        return await self.topics.topic_clusters(topic)

    async def topic_catalogue(self, cluster: str | None = None) -> list[TopicEntry]:
        return await self.topics.topic_catalogue(cluster)

    async def create_topic(self, config: TopicConfig, *, cluster: str | None = None,
                           broker_addr: str | None = None, exist_ok: bool = True) -> list[str]:
        return await self.topics.create_topic(
            config, cluster=cluster, broker_addr=broker_addr, exist_ok=exist_ok)

    async def update_topic(self, topic: str, *, cluster: str | None = None, broker_addr: str | None = None,
                           read_queue_nums: int | None = None, write_queue_nums: int | None = None,
                           perm: int | None = None, order: bool | None = None) -> list[TopicChange]:
        return await self.topics.update_topic(
            topic, cluster=cluster, broker_addr=broker_addr, read_queue_nums=read_queue_nums,
            write_queue_nums=write_queue_nums, perm=perm, order=order)

    async def delete_topic(self, topic: str, cluster: str | None = None) -> list[str]:
        return await self.topics.delete_topic(topic, cluster)

    async def topic_configs(self, broker_addr: str) -> dict[str, TopicConfig]:
        return await self.topics.topic_configs(broker_addr)

    async def topic_stats(self, topic: str, cluster: str | None = None) -> dict[MessageQueue, TopicOffset]:
        return await self.topics.topic_stats(topic, cluster)

    async def topic_masters(self, topic: str, cluster: str | None = None) -> dict[str, str]:
        return await self.topics.topic_masters(topic, cluster)

    async def topic_consumed_by(self, topic: str) -> list[str]:
        return await self.topics.topic_consumed_by(topic)

    async def create_subscription_group(self, config: SubscriptionGroupConfig, *, cluster: str | None = None,
                                        broker_addr: str | None = None, exist_ok: bool = True) -> list[str]:
        return await self.groups.create_subscription_group(
            config, cluster=cluster, broker_addr=broker_addr, exist_ok=exist_ok)

    async def update_subscription_group(self, group: str, changes: Mapping[str, Any], *, cluster: str | None = None,
                                        broker_addr: str | None = None) -> list[GroupChange]:
        return await self.groups.update_subscription_group(
            group, changes, cluster=cluster, broker_addr=broker_addr)

    async def delete_subscription_group(self, group: str, *, cluster: str | None = None,
                                        broker_addr: str | None = None, clean_offset: bool = False) -> list[str]:
        return await self.groups.delete_subscription_group(
            group, cluster=cluster, broker_addr=broker_addr, clean_offset=clean_offset)

    async def subscription_groups(self, broker_addr: str) -> dict[str, SubscriptionGroupConfig]:
        return await self.groups.subscription_groups(broker_addr)

    async def group_list(self) -> list[GroupEntry]:
        return await self.groups.group_list()

    async def subscription_group(self, group: str) -> GroupEntry:
        return await self.groups.subscription_group(group)

    async def consumer_progress(self, group: str, topic: str | None = None, *,
                                cluster: str | None = None) -> ConsumerProgress:
        return await self.groups.consumer_progress(group, topic, cluster=cluster)

    async def consumer_connections(self, group: str, broker_addr: str | None = None) -> GroupConnections:
        return await self.groups.consumer_connections(group, broker_addr)

    async def consumer_running_info(self, group: str, client_id: str, *, jstack: bool = False) -> ConsumerRunningInfo:
        return await self.groups.consumer_running_info(group, client_id, jstack=jstack)

    async def producer_connections(self, group: str, topic: str) -> list[ClientConnection]:
        return await self.groups.producer_connections(group, topic)

    async def broker_runtime_info(self, broker_addr: str) -> BrokerRuntime:
        return await self.brokers.broker_runtime_info(broker_addr)

    async def broker_config(self, broker_addr: str) -> dict[str, str]:
        return await self.brokers.broker_config(broker_addr)

    async def update_broker_config(self, broker_addr: str, values: dict[str, str]) -> None:
        return await self.brokers.update_broker_config(broker_addr, values)

    async def ha_status(self, broker_addr: str) -> HAStatus:
        return await self.brokers.ha_status(broker_addr)

    async def broker_stats(self, broker_addr: str, stats_name: str, stats_key: str) -> BrokerStatsData:
        return await self.brokers.broker_stats(broker_addr, stats_name, stats_key)

    async def broker_consume_stats(self, broker_addr: str, *, order_only: bool = False,
                                   timeout: float | None = None) -> BrokerConsumeStats:
        return await self.brokers.broker_consume_stats(broker_addr, order_only=order_only, timeout=timeout)

    async def clean_expired_consume_queue(self, broker_addr: str) -> None:
        return await self.brokers.clean_expired_consume_queue(broker_addr)

    async def broker_live_tables(self) -> dict[str, BrokerLiveTable | None]:
        return await self.cluster.broker_live_tables()

    async def cluster_snapshot(self, *, runtime: bool = True) -> ClusterSnapshot:
        return await self.cluster.cluster_snapshot(runtime=runtime)

    async def view_message(self, offset_msg_id: str) -> MessageExt:
        return await self.messages.view_message(offset_msg_id)

    async def query_by_key(self, topic: str, key: str, *, max_num: int = 64, begin_ms: int = 0,
                           end_ms: int | None = None) -> list[MessageExt]:
        return await self.messages.query_by_key(topic, key, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms)

    async def query_by_unique_key(self, topic: str, uniq_key: str, *, begin_ms: int = 0,
                                  end_ms: int | None = None) -> list[MessageExt]:
        return await self.messages.query_by_unique_key(topic, uniq_key, begin_ms=begin_ms, end_ms=end_ms)

    async def message_at(self, mq: MessageQueue, offset: int, group: str = TOOLS_CONSUMER_GROUP) -> MessageExt | None:
        return await self.messages.message_at(mq, offset, group)

    async def find_message(self, topic: str, msg_id: str) -> MessageExt | None:
        return await self.messages.find_message(topic, msg_id)

    async def message_queues(self, topic: str) -> list[MessageQueue]:
        return await self.messages.message_queues(topic)

    async def queue_span(self, mq: MessageQueue, *, begin_ms: int | None = None,
                         end_ms: int | None = None) -> QueueSpan:
        return await self.messages.queue_span(mq, begin_ms=begin_ms, end_ms=end_ms)

    async def pull_messages(self, mq: MessageQueue, offset: int, *, max_nums: int = 32, expression: str = "*",
                            group: str = TOOLS_CONSUMER_GROUP) -> PullResult:
        return await self.messages.pull_messages(
            mq, offset, max_nums=max_nums, expression=expression, group=group)

    def read_span(self, mq: MessageQueue, begin: int, end: int, *, expression: str = "*",
                        group: str = TOOLS_CONSUMER_GROUP, limit: int | None = None, exact: bool = True
                        ) -> AsyncIterator[PullResult]:
        return self.messages.read_span(
            mq, begin, end, expression=expression, group=group, limit=limit, exact=exact)

    async def send_message(self, topic: str, body: bytes, *, tags: str | None = None, keys: str | None = None,
                           broker_name: str | None = None, queue_id: int | None = None) -> SendResult:
        return await self.messages.send_message(
            topic, body, tags=tags, keys=keys, broker_name=broker_name, queue_id=queue_id)

    async def send_rt(self, broker_names: list[str], amount: int, size: int, *, group: str = SEND_GROUP,
                      on_send: Callable[[], None] | None = None) -> list[SendRT]:
        return await self.messages.send_rt(broker_names, amount, size, group=group, on_send=on_send)

    async def message_trace(self, msg_id: str, trace_topic: str = RMQ_SYS_TRACE_TOPIC) -> MessageTrace:
        return await self.traces.message_trace(msg_id, trace_topic)

    async def open_transactions(self) -> list[BrokerTransactions]:
        return await self.transactions.open_transactions()

    async def dead_messages(self, group: str) -> list[MessageExt]:
        return await self.dlq.dead_messages(group)

    async def resend_dead(self, group: str, msg_ids: list[str] | None = None) -> list[Resend]:
        return await self.dlq.resend_dead(group, msg_ids)

    async def committed_offsets(self, group: str, topic: str) -> dict[MessageQueue, int | None]:
        return await self.offsets.committed_offsets(group, topic)

    async def reset_group_to_latest(self, group: str) -> list[OffsetReset]:
        return await self.offsets.reset_group_to_latest(group)

    async def reset_offset_by_time(self, group: str, topic: str, timestamp_ms: int, *, force: bool = True,
                                   dry_run: bool = False, cluster: str | None = None) -> list[OffsetReset]:
        return await self.offsets.reset_offset_by_time(
            group, topic, timestamp_ms, force=force, dry_run=dry_run, cluster=cluster)

    async def reset_offsets(self, group: str, topic: str, target: ResetTarget, *,
                            dry_run: bool = False) -> list[OffsetReset]:
        return await self.offsets.reset_offsets(group, topic, target, dry_run=dry_run)

    async def clone_group_offset(self, src_group: str, dest_group: str, topic: str, *,
                                 dry_run: bool = False) -> list[OffsetReset]:
        return await self.offsets.clone_group_offset(src_group, dest_group, topic, dry_run=dry_run)

    async def message_tracks(self, msg: MessageExt) -> list[MessageTrack]:
        return await self.tracking.message_tracks(msg)

    async def stats_all(self, topic: str | None = None, *, active_only: bool = False) -> list[TopicGroupStats]:
        return await self.tracking.stats_all(topic, active_only=active_only)

    async def topic_status(self, topic: str, cluster: str | None = None) -> TopicStatus:
        return await self.overview.topic_status(topic, cluster)

    async def topic_usage(self) -> list[TopicUsage]:
        return await self.overview.topic_usage()

    async def consumer_groups(self) -> list[str]:
        return await self.overview.consumer_groups()

    async def group_summaries(self, groups: list[str] | None = None) -> list[GroupSummary]:
        return await self.overview.group_summaries(groups)

    async def topic_overview(self, *, stats: bool = True) -> TopicOverview:
        return await self.topic_views.topic_overview(stats=stats)

    async def topic_queues(self, topic: str) -> list[MessageQueue]:
        return await self.queue_offsets.topic_queues(topic)

    async def queue_bounds(self, topic: str) -> dict[MessageQueue, tuple[int, int]]:
        return await self.queue_offsets.queue_bounds(topic)

    async def offsets_for_time(self, topic: str, timestamp_ms: int) -> dict[MessageQueue, int]:
        return await self.queue_offsets.offsets_for_time(topic, timestamp_ms)

    async def ha_replication(self, *, broker_addr: str | None = None, cluster: str | None = None,
                             broker_name: str | None = None, window: float = 2.0) -> list[ReplicationGroup]:
        return await self.ha.ha_replication(
            broker_addr=broker_addr, cluster=cluster, broker_name=broker_name, window=window)

    async def master_replication(self, master: str, slaves: list[str]) -> HAStatus:
        return await self.ha.master_replication(master, slaves)

    async def ha_ready(self, broker_name: str, *, max_diff: int = DEFAULT_MAX_DIFF,
                       max_catchup_s: float = DEFAULT_MAX_CATCHUP_S, window: float = 2.0) -> HAReadiness:
        return await self.ha.ha_ready(
            broker_name, max_diff=max_diff, max_catchup_s=max_catchup_s, window=window)

    async def namesrv_probe(self) -> list[NamesrvStatus]:
        return await self.namesrv_probes.namesrv_probe()

    async def acl_config(self, broker_addr: str) -> AclConfig:
        return await self.acl.acl_config(broker_addr)

    async def acl_configs(self, cluster: str | None = None, broker_addr: str | None = None) -> list[AclConfig]:
        return await self.acl.acl_configs(cluster, broker_addr)

    async def acl_version(self, broker_addr: str) -> AclVersion:
        return await self.acl.acl_version(broker_addr)

    async def acl_versions(self, cluster: str | None = None, broker_addr: str | None = None) -> list[AclVersion]:
        return await self.acl.acl_versions(cluster, broker_addr)

    async def update_acl_account(self, account: PlainAccessConfig, *, cluster: str | None = None,
                                 broker_addr: str | None = None) -> list[str]:
        return await self.acl.update_acl_account(account, cluster=cluster, broker_addr=broker_addr)

    async def delete_acl_account(self, access_key: str, *, cluster: str | None = None,
                                 broker_addr: str | None = None) -> list[str]:
        return await self.acl.delete_acl_account(access_key, cluster=cluster, broker_addr=broker_addr)

    async def update_global_white_addrs(self, addrs_patterns: list[str], *, cluster: str | None = None,
                                        broker_addr: str | None = None) -> list[str]:
        return await self.acl.update_global_white_addrs(
            addrs_patterns, cluster=cluster, broker_addr=broker_addr)
