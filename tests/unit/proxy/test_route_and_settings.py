"""QueryRoute / QueryAssignment answers (cluster mode: every broker at the proxy's endpoints) and the settings
the proxy answers on a client's Telemetry stream."""

from __future__ import annotations

import pytest

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.proxy.config import ProxyConfig
from mqtools.proxy.route import accept_types, assignments, proxy_endpoints, route_queues
from mqtools.proxy.settings import GroupPolicy, answer
from mqtools.remoting.bodies import BrokerData, QueueData, TopicRouteData

TOPIC = pb.Resource(name="Orders")
PROXY = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=8081)])


def route(*queue_datas: QueueData, slave: bool = False) -> TopicRouteData:
    brokers = []
    for qd in queue_datas:
        addrs = {0: f"10.0.0.1:{10911 + len(brokers)}"}
        if slave:
            addrs[1] = f"10.0.0.2:{10911 + len(brokers)}"
        brokers.append(BrokerData("C", qd.broker_name, addrs))
    return TopicRouteData(list(queue_datas), brokers)


def test_every_queue_is_answered_at_the_proxys_endpoints_with_the_brokers_name() -> None:
    queues = route_queues(TOPIC, route(QueueData("broker-a", 4, 4, 6), QueueData("broker-b", 2, 2, 6)), PROXY, "NORMAL")
    assert [(q.broker.name, q.id) for q in queues] == [("broker-a", i) for i in range(4)] + [("broker-b", 0),
                                                                                             ("broker-b", 1)]
    assert all(q.broker.endpoints == PROXY and q.broker.id == 0 for q in queues)
    assert all(q.permission == pb.READ_WRITE and list(q.accept_message_types) == [pb.NORMAL] for q in queues)
    assert all(q.topic.name == "Orders" for q in queues)


def test_queues_split_by_permission_as_apache_splits_them() -> None:
    queues = route_queues(TOPIC, route(QueueData("broker-a", 4, 2, 6)), PROXY, "FIFO")
    assert [(q.id, q.permission) for q in queues] == [(0, pb.READ), (1, pb.READ), (2, pb.READ_WRITE),
                                                      (3, pb.READ_WRITE)]
    read_only = route_queues(TOPIC, route(QueueData("broker-a", 2, 2, 4)), PROXY, "FIFO")
    assert [q.permission for q in read_only] == [pb.READ, pb.READ]
    none = route_queues(TOPIC, route(QueueData("broker-a", 3, 2, 0)), PROXY, "FIFO")
    assert [q.permission for q in none] == [pb.NONE] * 3
    assert list(queues[0].accept_message_types) == [pb.FIFO]


def test_each_broker_id_gets_its_queues() -> None:
    queues = route_queues(TOPIC, route(QueueData("broker-a", 2, 2, 6), slave=True), PROXY, "MIXED")
    assert sorted((q.broker.id, q.id) for q in queues) == [(0, 0), (0, 1), (1, 0), (1, 1)]


@pytest.mark.parametrize(("kind", "types"), [
    ("NORMAL", [pb.NORMAL]), ("FIFO", [pb.FIFO]), ("DELAY", [pb.DELAY]), ("TRANSACTION", [pb.TRANSACTION]),
    ("MIXED", [pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION]), ("UNSPECIFIED", [pb.MESSAGE_TYPE_UNSPECIFIED]),
])
def test_accepted_message_types_come_from_the_topic_type(kind: str, types: list[int]) -> None:
    assert accept_types(kind) == types


def test_assignment_is_one_queue_per_readable_master_or_every_queue_for_fifo() -> None:
    data = route(QueueData("broker-a", 3, 3, 6), QueueData("broker-b", 2, 2, 2))
    plain = assignments(TOPIC, data, PROXY, fifo=False)
    assert [(a.message_queue.broker.name, a.message_queue.id) for a in plain] == [("broker-a", -1)]
    fifo = assignments(TOPIC, data, PROXY, fifo=True)
    assert [a.message_queue.id for a in fifo] == [0, 1, 2]
    assert all(a.message_queue.broker.endpoints == PROXY for a in fifo)


def test_endpoints_are_the_clients_access_point_with_the_grpc_port_or_the_advertised_host() -> None:
    asked = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host="10.9.9.9", port=1234)])
    assert proxy_endpoints(asked, "", 8081).addresses[0] == pb.Address(host="10.9.9.9", port=8081)
    named = proxy_endpoints(asked, "proxy.example", 9000)
    assert named.scheme == pb.DOMAIN_NAME and named.addresses[0] == pb.Address(host="proxy.example", port=9000)


def test_producer_settings_answer_carries_the_proxys_retry_policy_and_limits() -> None:
    reported = pb.Settings(client_type=pb.PRODUCER)
    reported.publishing.topics.add(name="Orders")
    reported.request_timeout.FromSeconds(3)
    out = answer(reported, ProxyConfig(max_message_size=1024), None)
    assert out.client_type == pb.PRODUCER and [t.name for t in out.publishing.topics] == ["Orders"]
    assert out.backoff_policy.max_attempts == 3
    assert out.backoff_policy.exponential_backoff.initial.ToMilliseconds() == 10
    assert out.backoff_policy.exponential_backoff.max.ToMilliseconds() == 1000
    assert out.backoff_policy.exponential_backoff.multiplier == 2
    assert out.publishing.max_body_size == 1024 and out.publishing.validate_message_type
    assert out.request_timeout.ToSeconds() == 3
    assert not out.metric.on


def test_consumer_settings_answer_carries_polling_fifo_and_the_groups_retry_policy() -> None:
    reported = pb.Settings(client_type=pb.SIMPLE_CONSUMER)
    reported.subscription.group.name = "G"
    out = answer(reported, ProxyConfig(), GroupPolicy(consume_message_orderly=True, retry_max_times=5))
    assert out.subscription.receive_batch_size == 32
    assert out.subscription.long_polling_timeout.ToSeconds() == 20
    assert out.subscription.fifo
    assert out.backoff_policy.max_attempts == 6
    assert [d.ToMilliseconds() for d in out.backoff_policy.customized_backoff.next][:4] == [1000, 5000, 10000, 30000]
    default = answer(reported, ProxyConfig(), None)
    assert not default.subscription.fifo and default.backoff_policy.max_attempts == 17
