"""MQAdmin: the operations `mq admin`, `mq top` and drills are built on, as typed async methods.

Every method speaks plain RocketMQ remoting, so it works against mq servers and Apache RocketMQ alike
(the role of RocketMQ's DefaultMQAdminExt); the one mq-private request (GET_BROKER_LIVE_TABLE) raises
NotAvailable where the server lacks it, and snapshots then carry None for what it would have told.
Cluster-wide writes go to every master of the cluster (and, for topic deletes and write permission,
to every name server), as mqadmin does. Results are the typed models of `models.py`.
"""

from __future__ import annotations

from mqtools.client.admin.acl import AclAdmin
from mqtools.client.admin.cluster import ClusterAdmin
from mqtools.client.admin.dlq import DeadLetterAdmin
from mqtools.client.admin.groups import GroupAdmin
from mqtools.client.admin.ha import HAAdmin
from mqtools.client.admin.messages import MessageAdmin
from mqtools.client.admin.namesrv_probe import NamesrvProbeAdmin
from mqtools.client.admin.offsets import LATEST, OffsetAdmin
from mqtools.client.admin.overview import OverviewAdmin
from mqtools.client.admin.queue_offsets import QueueOffsetAdmin
from mqtools.client.admin.topic_overview import TopicOverviewAdmin
from mqtools.client.admin.topics import TopicAdmin
from mqtools.client.admin.tracking import TrackingAdmin

__all__ = ["LATEST", "MQAdmin"]


class MQAdmin(QueueOffsetAdmin, TopicOverviewAdmin, OverviewAdmin, OffsetAdmin, TrackingAdmin, DeadLetterAdmin,
              HAAdmin, ClusterAdmin, TopicAdmin, GroupAdmin, MessageAdmin, NamesrvProbeAdmin, AclAdmin):
    """Async admin client; `async with MQAdmin("127.0.0.1:9876") as admin: ...`.

    One class per area (cluster, name server, topics, groups, offsets, messages, dead letters, brokers,
    and the views joining them) keeps each module readable; MQAdmin is all of them over one connection pool.
    """
