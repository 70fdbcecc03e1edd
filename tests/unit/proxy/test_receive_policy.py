"""How a ReceiveMessage goes out (Apache's ReceiveMessageActivity): FIFO and max attempts from the group's config,
the broker chosen in turn when the request names none, and what happens to popped messages when the client leaves
at the first response. The brokers are faked at the proxy's seam (route lookup, Popper, Metadata.group_policy)."""

from __future__ import annotations

import asyncio
from typing import Any

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
from mqtools.client.instance import ClientInstance
from mqtools.common import properties as P
from mqtools.common.message import MessageExt
from mqtools.proxy.call import Call
from mqtools.proxy.config import ProxyConfig
from mqtools.proxy.consuming import NACK_INVISIBLE_MS
from mqtools.proxy.popping import FOUND, NO_NEW_MSG, PopResult
from mqtools.proxy.receipt import ReceiptHandle, create_handle
from mqtools.proxy.service import MessagingService
from mqtools.proxy.settings import GroupPolicy
from mqtools.remoting.bodies import BrokerData, QueueData, TopicRouteData

CALL = Call("c1", "JAVA", "5.0.7", "127.0.0.1:1", 30.0)


def _service(route: TopicRouteData, policy: GroupPolicy) -> MessagingService:
    service = MessagingService(ProxyConfig(), ClientInstance(["127.0.0.1:9876"]), port=0)

    async def route_of(topic: str) -> TopicRouteData:
        return route

    async def group_policy(group: str, addrs: list[str]) -> GroupPolicy:
        return policy

    service._route = route_of  # type: ignore[method-assign]
    service.metadata.group_policy = group_policy  # type: ignore[method-assign]
    return service


def _route(*brokers: tuple[str, bool]) -> TopicRouteData:
    """A route of (broker name, has a master) brokers, 4 read-write queues each."""
    return TopicRouteData(
        queue_datas=[QueueData(name, 4, 4, 6) for name, _ in brokers],
        broker_datas=[BrokerData("C", name, {0 if master else 1: f"10.0.0.{i}:10911"})
                      for i, (name, master) in enumerate(brokers)])


def _request(broker: str = "") -> spb.ReceiveMessageRequest:
    req = spb.ReceiveMessageRequest(group=pb.Resource(name="G"), batch_size=4, message_queue=pb.MessageQueue(
        topic=pb.Resource(name="T"), id=-1, broker=pb.Broker(name=broker)))
    req.invisible_duration.FromSeconds(30)
    req.long_polling_timeout.FromSeconds(5)
    return req


def _message(offset: int, reconsume_times: int = 0) -> MessageExt:
    handle = create_handle(f"5 1790000000000 60000 2 0 broker-a 3 {offset}", 8042 + offset)
    msg = MessageExt("T", b"x", properties={"POP_CK": handle, P.UNIQ_KEY: f"U{offset}"})
    msg.reconsume_times = reconsume_times
    return msg


async def test_a_receive_pops_with_fifo_and_max_attempts_of_the_groups_config_not_the_clients_report() -> None:
    """A 5.x client reports neither fifo nor a backoff policy: the POP of an orderly group is still an orderly one,
    and a message past the group's retryMaxTimes (2: max attempts 3) goes to the dead letter queue, not to it."""
    service = _service(_route(("broker-a", True)), GroupPolicy(consume_message_orderly=True, retry_max_times=2))
    service.clients.touch("c1").settings = pb.Settings(client_type=pb.SIMPLE_CONSUMER, subscription=pb.Subscription(
        group=pb.Resource(name="G")))
    pops: list[dict[str, Any]] = []
    dead: list[int] = []

    async def pop(**kw: Any) -> PopResult:
        pops.append(kw)
        return PopResult(FOUND, [_message(1, reconsume_times=2), _message(2, reconsume_times=3)])

    async def to_dead_letter(handle: ReceiptHandle, group: str, topic: str, message_id: str) -> tuple[int, str]:
        dead.append(handle.offset)
        return 0, ""

    service.popper.pop = pop  # type: ignore[method-assign]
    service.popper.to_dead_letter = to_dead_letter  # type: ignore[method-assign]
    result, _, _ = await service._receive(_request("broker-a"), CALL)
    assert [p["fifo"] for p in pops] == [True]
    assert dead == [2]
    assert [m.properties[P.UNIQ_KEY] for m in result.messages] == ["U1"]


async def test_a_receive_naming_no_readable_broker_goes_to_each_broker_with_a_master_in_turn() -> None:
    """ReceiveMessageQueueSelector.selectOne(true): receives that name no broker, or one the route cannot read
    from, rotate over the brokers with a master (broker-c has only a slave); a named readable broker is kept."""
    service = _service(_route(("broker-a", True), ("broker-b", True), ("broker-c", False)), GroupPolicy())
    asked: list[str] = []

    async def pop(**kw: Any) -> PopResult:
        asked.append(kw["broker_name"])
        return PopResult(NO_NEW_MSG)

    service.popper.pop = pop  # type: ignore[method-assign]
    for broker in ("", "", "", "broker-x", "", "broker-b", "broker-b"):
        await service._receive(_request(broker), CALL)
    assert asked[:5] == ["broker-a", "broker-b", "broker-a", "broker-b", "broker-a"]
    assert asked[5:] == ["broker-b", "broker-b"]


async def test_a_client_gone_at_the_first_response_has_every_popped_message_made_visible_soon() -> None:
    """The stream closed while its status (the first response) was being written: none of the popped messages
    reached the client, so each is changed to NACK_INVISIBLE_MS."""
    service = MessagingService(ProxyConfig(), ClientInstance(["127.0.0.1:9876"]), port=0)
    changed: list[tuple[int, int]] = []
    done = asyncio.Event()

    async def held(req: spb.ReceiveMessageRequest, call: Call) -> tuple[PopResult, str, str]:
        return PopResult(FOUND, [_message(1), _message(2)]), "T", "G"

    async def change_invisible(handle: ReceiptHandle, group: str, topic: str, invisible_ms: int) -> str:
        changed.append((handle.offset, invisible_ms))
        if len(changed) == 2:
            done.set()
        return handle.text

    service._receive_held = held  # type: ignore[method-assign]
    service.popper.change_invisible = change_invisible  # type: ignore[method-assign]
    responses = service.ReceiveMessage(spb.ReceiveMessageRequest(), CALL)
    first = await responses.__anext__()
    assert first.status.code == pb.OK
    await responses.aclose()
    await asyncio.wait_for(done.wait(), 1)
    assert changed == [(1, NACK_INVISIBLE_MS), (2, NACK_INVISIBLE_MS)]
