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

from mqtools.client.admin.acl import AclAdmin
from mqtools.client.admin.auth import AuthAdmin
from mqtools.client.admin.base import SILENT_FOR, AdminBase
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
from mqtools.client.admin.offsets import LATEST, OffsetAdmin
from mqtools.client.admin.overview import OverviewAdmin
from mqtools.client.admin.proxies import ProxyAdmin
from mqtools.client.admin.queue_offsets import QueueOffsetAdmin
from mqtools.client.admin.timer import TimerAdmin
from mqtools.client.admin.topic_overview import TopicOverviewAdmin
from mqtools.client.admin.topics import TopicAdmin
from mqtools.client.admin.trace import TraceAdmin
from mqtools.client.admin.tracking import TrackingAdmin
from mqtools.client.admin.transactions import TransactionAdmin
from mqtools.common.security import ClientSecurity

__all__ = ["LATEST", "MQAdmin"]


class MQAdmin(AdminBase):
    """Async admin client; `async with MQAdmin("127.0.0.1:9876") as admin: ...`."""

    def __init__(self, namesrv: str | list[str], *, timeout: float = 5.0,
                 security: ClientSecurity | None = None, silent_for: float = SILENT_FOR) -> None:
        super().__init__(namesrv, timeout=timeout, security=security, silent_for=silent_for)
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
        self.auth = AuthAdmin(self)
        self.timer = TimerAdmin(self)
        self.consume_modes = ConsumeModeAdmin(self)
        self.proxies = ProxyAdmin(self)
