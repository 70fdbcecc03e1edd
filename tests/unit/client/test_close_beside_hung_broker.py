"""A client closing while a broker of its routes hangs: the goodbye (UNREGISTER_CLIENT) goes only where the
client said hello (a heartbeat), so a broker it never registered with costs the close nothing.

`mq spark-load produce` with one of two masters SIGSTOPped: every task's producer sent to the other master only,
then its close said goodbye to the hung one and waited out a whole timeout (3 s a task, on the fake here 0.5 s);
a broker knows a client only from its heartbeats and forgets it when the connection closes, and a short-lived
producer (a Spark task, shorter than the 30 s heartbeat period) has sent none."""

from __future__ import annotations

import asyncio

from unit.client.fake_remoting import FakeRemoting, route_data

from mqtools.client.instance import ClientInstance
from mqtools.client.producer import Producer
from mqtools.common.message import Message
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingTimeoutError

A = "broker-a:10911"
B = "broker-b:10911"
TIMEOUT = 0.5


def world(hung: set[str]) -> tuple[FakeRemoting, ClientInstance]:
    """Brokers a and b with two queues each; a request to a `hung` one waits out its timeout, then times out."""

    async def answer(addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        if addr in hung:
            await asyncio.sleep(timeout)
            raise RemotingTimeoutError(addr, timeout, cmd.opaque)
        ext = {"msgId": "id", "queueId": cmd.ext_fields.get("e", "0"), "queueOffset": "1"}
        return cmd.response(ResponseCode.SUCCESS, None, ext)

    remoting = FakeRemoting({"T": route_data({"broker-a": 2, "broker-b": 2})}, answer)
    instance = ClientInstance("namesrv:9876", timeout=TIMEOUT, client_ip="10.0.0.9", instance_name="unit",
                              remoting=remoting)
    return remoting, instance


def goodbyes(remoting: FakeRemoting) -> list[str | None]:
    return sorted(s.addr for s in remoting.broker_requests(RequestCode.UNREGISTER_CLIENT))


async def test_a_producer_that_sent_no_heartbeat_closes_without_waiting_on_a_hung_broker() -> None:
    remoting, instance = world(hung={B})
    loop = asyncio.get_running_loop()
    async with Producer("pg", instance=instance) as producer:
        for _ in range(2):  # the round robin starts at broker-a's queues: nothing goes to the hung one
            await producer.send(Message("T", b"m"))
        closing = loop.time()
    took = loop.time() - closing
    assert [s.addr for s in remoting.broker_requests(RequestCode.SEND_MESSAGE_V2)] == [A, A]
    assert goodbyes(remoting) == [], "no broker was told of this client: none is told it leaves"
    assert took < TIMEOUT / 2, f"the close waited {took:.3f}s on the hung broker"


async def test_a_client_says_goodbye_where_its_heartbeats_went_except_where_a_request_timed_out() -> None:
    hung: set[str] = set()
    remoting, instance = world(hung)
    instance.producer_groups.add("pg")
    await instance.route("T")
    await instance.heartbeat()  # both registered the client
    await instance.unregister(producer_group="pg")
    assert goodbyes(remoting) == [A, B]
    hung.add(B)
    await instance.heartbeat()  # b's times out: the close does not wait for it again
    await instance.unregister(producer_group="pg")
    assert goodbyes(remoting) == [A, A, B]
