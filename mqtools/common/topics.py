"""Well-known topic and group names and the prefixes RocketMQ gives derived topics."""

from __future__ import annotations

AUTO_CREATE_TOPIC_KEY = "TBW102"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
BENCHMARK_TOPIC = "BenchmarkTest"
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
RMQ_SYS_TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
#: Transactional messages' system topics and the check service's progress group (TopicValidator, MixAll).
RMQ_SYS_TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
CID_RMQ_SYS_TRANS = "CID_RMQ_SYS_TRANS"
#: TopicValidator.RMQ_SYS_TRACE_TOPIC: message traces; ACL lets every signed account publish to it
RMQ_SYS_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
DEFAULT_CLUSTER = "DefaultCluster"
DEFAULT_PRODUCER_GROUP = "DEFAULT_PRODUCER"
DEFAULT_CONSUMER_GROUP = "DEFAULT_CONSUMER"
CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"

#: MixAll.REPLY_TOPIC_POSTFIX: every broker keeps `<cluster>_REPLY_TOPIC` for request-reply messages.
REPLY_TOPIC_POSTFIX = "REPLY_TOPIC"

RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"

#: KV namespace whose entries become TopicRouteData.orderTopicConf: an ordered topic's
#: `brokerName:queueNums;...` layout (NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG).
NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"

#: Names the broker registers for itself as topics (RocketMQ does the same).
SYSTEM_TOPICS = frozenset(
    {AUTO_CREATE_TOPIC_KEY, SCHEDULE_TOPIC, BENCHMARK_TOPIC, SELF_TEST_TOPIC, OFFSET_MOVED_EVENT,
     RMQ_SYS_TRANS_HALF_TOPIC}
)


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def is_dlq_topic(topic: str) -> bool:
    return topic.startswith(DLQ_GROUP_TOPIC_PREFIX)


def is_system_topic(topic: str) -> bool:
    return topic in SYSTEM_TOPICS or topic.startswith("rmq_sys_")


#: Consumer groups RocketMQ's brokers keep for themselves (MixAll), and the prefix of its system groups.
SYSTEM_GROUPS = frozenset({TOOLS_CONSUMER_GROUP, "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY",
                           "CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_SYS_RMQ_TRANS"})
SYSTEM_GROUP_PREFIX = "CID_RMQ_SYS_"


def is_system_group(group: str) -> bool:
    return group in SYSTEM_GROUPS or group.startswith(SYSTEM_GROUP_PREFIX)


def reply_topic(cluster: str) -> str:
    return f"{cluster}_{REPLY_TOPIC_POSTFIX}"
