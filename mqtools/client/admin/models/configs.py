"""The configurations the admin API takes and gives back whole: RocketMQ's own classes.

A topic's TopicConfig, a group's SubscriptionGroupConfig, an ACL account's PlainAccessConfig, a
MessageQueue, the ClusterInfo and TopicRouteData a name server answers: RocketMQ's admin API
(DefaultMQAdminExt) hands these to its callers as they are, and so does MQAdmin. The tools name them
from here, the admin API's vocabulary, rather than from the wire layer that encodes them.
"""

from mqtools.remoting.bodies import (
    ClusterInfo,
    MessageQueue,
    PlainAccessConfig,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicRouteData,
    comma_list,
)

__all__ = ["ClusterInfo", "MessageQueue", "PlainAccessConfig", "SubscriptionGroupConfig", "TopicConfig",
           "TopicRouteData", "comma_list"]
