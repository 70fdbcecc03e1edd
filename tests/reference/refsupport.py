"""Helpers shared by the reference tests: topics and groups made through mq's admin API, on either side."""

from __future__ import annotations

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.remoting.bodies import SubscriptionGroupConfig, TopicConfig

#: Every delay level one second on both brokers, so retries and delayed messages come back fast.
FAST_DELAY_LEVELS = " ".join(["1s"] * 18)
CLUSTER = "RefCluster"
QUEUES = 4


def make_topic(namesrv: str, topic: str, queues: int = QUEUES, *, order: bool = False) -> None:
    """The topic on every master of the cluster, created through the name server's cluster table."""
    with SyncMQAdmin(namesrv) as admin:
        admin.create_topic(TopicConfig(topic, read_queue_nums=queues, write_queue_nums=queues, order=order),
                           cluster=CLUSTER)


def make_group(namesrv: str, group: str, *, retries: int = 16, orderly: bool = False) -> None:
    with SyncMQAdmin(namesrv) as admin:
        admin.create_subscription_group(
            SubscriptionGroupConfig(group, retry_max_times=retries, consume_message_orderly=orderly),
            cluster=CLUSTER)
