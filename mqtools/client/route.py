"""Topic routes as the client uses them: publish and subscribe queue lists, broker addresses."""

from __future__ import annotations

from dataclasses import dataclass, field

from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.perm import is_readable, is_writeable
from mqtools.remoting.bodies import MessageQueue, TopicRouteData


@dataclass(slots=True)
class TopicRoute:
    topic: str
    data: TopicRouteData
    publish: list[MessageQueue] = field(default_factory=list)
    subscribe: list[MessageQueue] = field(default_factory=list)
    broker_addrs: dict[str, dict[int, str]] = field(default_factory=dict)

    @classmethod
    def build(cls, topic: str, data: TopicRouteData) -> TopicRoute:
        addrs = {bd.broker_name: dict(bd.broker_addrs) for bd in data.broker_datas}
        return cls(topic, data, publish_queues(topic, data, addrs), subscribe_queues(topic, data), addrs)

    @property
    def brokers(self) -> list[str]:
        return sorted(self.broker_addrs)

    @property
    def headless(self) -> bool:
        """Some broker group with writable queues of this topic has no master in the route."""
        return any(is_writeable(qd.perm) and MASTER_ID not in self.broker_addrs.get(qd.broker_name, {})
                   for qd in self.data.queue_datas)


def publish_queues(topic: str, data: TopicRouteData, addrs: dict[str, dict[int, str]]) -> list[MessageQueue]:
    """Writable queues of brokers whose master is known (a send needs the master).

    An ordered topic's `orderTopicConf` ("broker-a:4;broker-b:4") fixes the queue list instead,
    so sharding keys keep mapping to the same queues.
    """
    if data.order_topic_conf:
        queues = []
        for item in data.order_topic_conf.split(";"):
            name, _, nums = item.partition(":")
            if name and nums.isdigit():
                queues.extend(MessageQueue(topic, name, i) for i in range(int(nums)))
        return queues
    queues = []
    for qd in sorted(data.queue_datas, key=lambda q: q.broker_name):
        if is_writeable(qd.perm) and MASTER_ID in addrs.get(qd.broker_name, {}):
            queues.extend(MessageQueue(topic, qd.broker_name, i) for i in range(qd.write_queue_nums))
    return queues


def subscribe_queues(topic: str, data: TopicRouteData) -> list[MessageQueue]:
    queues = []
    for qd in sorted(data.queue_datas, key=lambda q: q.broker_name):
        if is_readable(qd.perm):
            queues.extend(MessageQueue(topic, qd.broker_name, i) for i in range(qd.read_queue_nums))
    return queues


def with_default_queue_nums(data: TopicRouteData, default_queue_nums: int) -> TopicRouteData:
    """The TBW102 route adapted for a new topic: each broker offers at most `default_queue_nums`."""
    queue_datas = []
    for qd in data.queue_datas:
        nums = min(default_queue_nums, qd.read_queue_nums)
        queue_datas.append(type(qd)(qd.broker_name, nums, nums, qd.perm, qd.topic_sys_flag))
    return TopicRouteData(queue_datas, data.broker_datas, data.filter_server_table, data.order_topic_conf)
