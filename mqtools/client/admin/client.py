"""MQAdmin: the operations `mq admin`, `mq top` and drills are built on, as typed async methods.

Every method speaks plain RocketMQ remoting, so it works against mq servers and Apache RocketMQ alike
(the role of RocketMQ's DefaultMQAdminExt); the one mq-private request (GET_BROKER_LIVE_TABLE) raises
NotAvailable where the server lacks it, and snapshots then carry None for what it would have told.
Cluster-wide writes go to every master of the cluster (and, for topic deletes and write permission,
to every name server), as mqadmin does. Results are the typed models of `models/`.

Each area of the API is a service of its own, and the services are the API: `admin.topics.create_topic(...)`,
`admin.groups.consumer_progress(...)`, each documented where it is written, sharing this object's
connections and plumbing (AdminBase). SyncMQAdmin derives its blocking twins from them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mqtools.client.admin.base import AdminBase
from mqtools.client.admin.offsets import LATEST

if TYPE_CHECKING:
    from mqtools.client.admin.acl import AclAdmin
    from mqtools.client.admin.auth import AuthAdmin
    from mqtools.client.admin.brokers import BrokerAdmin
    from mqtools.client.admin.cluster import ClusterAdmin
    from mqtools.client.admin.consume_modes import ConsumeModeAdmin
    from mqtools.client.admin.controllers import ControllerAdmin
    from mqtools.client.admin.dlq import DeadLetterAdmin
    from mqtools.client.admin.groups import GroupAdmin
    from mqtools.client.admin.ha import HAAdmin
    from mqtools.client.admin.messages import MessageAdmin
    from mqtools.client.admin.namesrv import NamesrvAdmin
    from mqtools.client.admin.namesrv_probe import NamesrvProbeAdmin
    from mqtools.client.admin.offsets import OffsetAdmin
    from mqtools.client.admin.overview import OverviewAdmin
    from mqtools.client.admin.proxies import ProxyAdmin
    from mqtools.client.admin.queue_offsets import QueueOffsetAdmin
    from mqtools.client.admin.timer import TimerAdmin
    from mqtools.client.admin.topic_overview import TopicOverviewAdmin
    from mqtools.client.admin.topics import TopicAdmin
    from mqtools.client.admin.trace import TraceAdmin
    from mqtools.client.admin.tracking import TrackingAdmin
    from mqtools.client.admin.transactions import TransactionAdmin

__all__ = ["LATEST", "SERVICES", "MQAdmin"]

SERVICES: dict[str, str] = {
    "namesrv": "namesrv:NamesrvAdmin", "topics": "topics:TopicAdmin", "groups": "groups:GroupAdmin",
    "brokers": "brokers:BrokerAdmin", "cluster": "cluster:ClusterAdmin", "messages": "messages:MessageAdmin",
    "dlq": "dlq:DeadLetterAdmin", "offsets": "offsets:OffsetAdmin", "tracking": "tracking:TrackingAdmin",
    "traces": "trace:TraceAdmin", "transactions": "transactions:TransactionAdmin",
    "overview": "overview:OverviewAdmin", "topic_views": "topic_overview:TopicOverviewAdmin",
    "queue_offsets": "queue_offsets:QueueOffsetAdmin", "ha": "ha:HAAdmin",
    "namesrv_probes": "namesrv_probe:NamesrvProbeAdmin", "acl": "acl:AclAdmin",
    "controllers": "controllers:ControllerAdmin", "auth": "auth:AuthAdmin", "timer": "timer:TimerAdmin",
    "consume_modes": "consume_modes:ConsumeModeAdmin", "proxies": "proxies:ProxyAdmin"}
"""MQAdmin's area services: attribute -> "module:class" in this package (MQAdmin's annotations say the same
for type checkers; a unit test holds the two to the same names)."""


class MQAdmin(AdminBase):
    """Async admin client; `async with MQAdmin("127.0.0.1:9876") as admin: ...`."""

    namesrv: NamesrvAdmin
    topics: TopicAdmin
    groups: GroupAdmin
    brokers: BrokerAdmin
    cluster: ClusterAdmin
    messages: MessageAdmin
    dlq: DeadLetterAdmin
    offsets: OffsetAdmin
    tracking: TrackingAdmin
    traces: TraceAdmin
    transactions: TransactionAdmin
    overview: OverviewAdmin
    topic_views: TopicOverviewAdmin
    queue_offsets: QueueOffsetAdmin
    ha: HAAdmin
    namesrv_probes: NamesrvProbeAdmin
    acl: AclAdmin
    controllers: ControllerAdmin
    auth: AuthAdmin
    timer: TimerAdmin
    consume_modes: ConsumeModeAdmin
    proxies: ProxyAdmin

    def __getattr__(self, name: str) -> Any:
        """An area service, made (and its module imported) when first used, then kept: a command that lists
        topics does not import the other twenty areas and their models."""
        where = SERVICES.get(name)
        if where is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        module, _, cls = where.partition(":")
        service = getattr(importlib.import_module(f"mqtools.client.admin.{module}"), cls)(self)
        setattr(self, name, service)
        return service
