"""QueryRoute and QueryAssignment answers, built from a topic's remoting route (RouteActivity, cluster mode).

In cluster mode every broker of the route is answered at the proxy's own endpoints (the ones the client used to
reach it: ProxyTopicRouteData), so the client sends everything to the proxy; the broker's name stays, and it is
how the proxy finds the real broker again. Queues are split by permission as Apache splits them (read-only,
write-only, read-write, none), once per broker id in the route.
"""

from __future__ import annotations

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.common.perm import is_readable, is_writeable
from mqtools.remoting.bodies import QueueData, TopicRouteData

#: TopicMessageType names (the topic attribute `message.type`) -> the message types its queues accept.
ACCEPT_TYPES: dict[str, list[int]] = {
    "NORMAL": [pb.NORMAL],
    "FIFO": [pb.FIFO],
    "DELAY": [pb.DELAY],
    "TRANSACTION": [pb.TRANSACTION],
    "MIXED": [pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION],
}
MIXED, NORMAL = "MIXED", "NORMAL"


def accept_types(topic_message_type: str) -> list[int]:
    return ACCEPT_TYPES.get(topic_message_type, [pb.MESSAGE_TYPE_UNSPECIFIED])


def permission(perm: int) -> int:
    readable, writeable = is_readable(perm), is_writeable(perm)
    if readable and writeable:
        return pb.READ_WRITE
    if readable:
        return pb.READ
    if writeable:
        return pb.WRITE
    return pb.NONE


def _queues(qd: QueueData, topic: pb.Resource, broker: pb.Broker, types: list[int]) -> list[pb.MessageQueue]:
    """genMessageQueueFromQueueData: read-only, then write-only, then read-write, then no-permission ids."""
    r = w = rw = n = 0
    readable, writeable = is_readable(qd.perm), is_writeable(qd.perm)
    if readable and writeable:
        rw = min(qd.write_queue_nums, qd.read_queue_nums)
        r, w = qd.read_queue_nums - rw, qd.write_queue_nums - rw
    elif writeable:
        w = qd.write_queue_nums
    elif readable:
        r = qd.read_queue_nums
    else:
        n = max(1, qd.write_queue_nums, qd.read_queue_nums)
    out: list[pb.MessageQueue] = []
    for count, perm in ((r, pb.READ), (w, pb.WRITE), (rw, pb.READ_WRITE), (n, pb.NONE)):
        for _ in range(count):
            out.append(pb.MessageQueue(topic=topic, id=len(out), permission=perm, broker=broker,
                                       accept_message_types=types))
    return out


def _broker(name: str, broker_id: int, endpoints: pb.Endpoints) -> pb.Broker:
    return pb.Broker(name=name, id=broker_id, endpoints=endpoints)


def route_queues(topic: pb.Resource, data: TopicRouteData, endpoints: pb.Endpoints,
                 topic_message_type: str) -> list[pb.MessageQueue]:
    """QueryRoute's message queues: every queue of every broker id, at the proxy's endpoints."""
    ids = {bd.broker_name: sorted(bd.broker_addrs) for bd in data.broker_datas}
    types = accept_types(topic_message_type)
    out: list[pb.MessageQueue] = []
    for qd in data.queue_datas:
        if qd.broker_name not in ids:
            break  # RouteActivity stops at the first queue data without its broker data
        for broker_id in ids[qd.broker_name]:
            out.extend(_queues(qd, topic, _broker(qd.broker_name, broker_id, endpoints), types))
    return out


def assignments(topic: pb.Resource, data: TopicRouteData, endpoints: pb.Endpoints, fifo: bool) -> list[pb.Assignment]:
    """QueryAssignment: a readable broker's master as one queue (id -1: the broker picks), or, for a FIFO group,
    each of its read queues."""
    masters = {bd.broker_name for bd in data.broker_datas if 0 in bd.broker_addrs}
    out: list[pb.Assignment] = []
    for qd in data.queue_datas:
        if not (is_readable(qd.perm) and qd.read_queue_nums > 0 and qd.broker_name in masters):
            continue
        broker = _broker(qd.broker_name, 0, endpoints)
        perm = permission(qd.perm)
        ids = range(qd.read_queue_nums) if fifo else (-1,)
        out.extend(pb.Assignment(message_queue=pb.MessageQueue(topic=topic, id=i, permission=perm, broker=broker))
                   for i in ids)
    return out


def readable_masters(data: TopicRouteData) -> list[str]:
    """The brokers a receive can POP from: readable queues of the topic and a master (POP is served by the master
    only), sorted as Apache's read selector sorts its broker queues."""
    masters = {bd.broker_name for bd in data.broker_datas if 0 in bd.broker_addrs}
    return sorted({qd.broker_name for qd in data.queue_datas
                   if is_readable(qd.perm) and qd.read_queue_nums > 0 and qd.broker_name in masters})


def proxy_endpoints(requested: pb.Endpoints, advertised_host: str, port: int, *,
                    requested_ports: bool = False) -> pb.Endpoints:
    """The endpoints answered for every broker: the client's own access point (convertToAddressList, with the
    proxy's gRPC port, or each address's own port with `requested_ports`), or the configured advertised host."""
    if advertised_host:
        scheme = pb.IPv6 if ":" in advertised_host else (
            pb.DOMAIN_NAME if any(c.isalpha() for c in advertised_host) else pb.IPv4)
        return pb.Endpoints(scheme=scheme, addresses=[pb.Address(host=advertised_host, port=port)])
    return pb.Endpoints(scheme=requested.scheme, addresses=[
        pb.Address(host=a.host, port=a.port if requested_ports and a.port else port) for a in requested.addresses])
