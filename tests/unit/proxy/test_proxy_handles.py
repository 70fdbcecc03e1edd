"""What the proxy does with receipt handles: auto renewal (Apache's DefaultReceiptHandleManager) and finding the
broker a handle names (ClusterMessageService.resolveBrokerAddrInReceiptHandle); and the status of an ack with no
entries. The brokers are faked at the proxy's seam (Popper.change_invisible, ClientInstance.fetch_route/invoke)."""

from __future__ import annotations

import asyncio
import time

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
from mqtools.client.errors import RequestTimeoutError, broker_error
from mqtools.client.instance import ClientInstance
from mqtools.common.perm import PERM_INHERIT
from mqtools.proxy.call import Call
from mqtools.proxy.config import ProxyConfig
from mqtools.proxy.errors import Code, ProxyError, status_of
from mqtools.proxy.popping import Popper
from mqtools.proxy.receipt import ReceiptHandle
from mqtools.proxy.renewal import MAX_RENEW_RETRY_TIMES, Renewals
from mqtools.proxy.service import MessagingService
from mqtools.remoting.bodies import BrokerData, QueueData, TopicRouteData
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand

CALL = Call("client-1", "PYTHON", "5.1.2", "127.0.0.1:1", 30.0)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _handle(broker: str, offset: int, *, retrieved: int, invisible: int = 60_000) -> ReceiptHandle:
    return ReceiptHandle.decode(f"{offset} {retrieved} {invisible} 2 0 {broker} 3 {offset} 8042")


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_renewals_on_a_hung_broker_hold_up_neither_the_other_brokers_nor_the_sweep() -> None:
    """Three handles of a SIGSTOPped broker (their renewals wait for their 3 s timeouts) and one of a healthy
    broker, all due: the healthy one is renewed at once and the sweep returns without waiting for the others."""
    service = MessagingService(ProxyConfig(), ClientInstance(["127.0.0.1:9876"]), port=0)
    answer = asyncio.Event()
    renewed: list[str] = []

    async def change_invisible(handle: ReceiptHandle, group: str, topic: str, invisible_ms: int) -> str:
        if handle.broker_name == "broker-hung":
            await answer.wait()
        renewed.append(handle.broker_name)
        return _handle(handle.broker_name, handle.offset, retrieved=_now_ms()).text

    service.popper.change_invisible = change_invisible  # type: ignore[method-assign]
    due = _now_ms() - 55_000  # 5 s of invisible time left
    for n in range(3):
        service.renewals.add("client-1", "G", "T", f"H{n}", _handle("broker-hung", n, retrieved=due))
    service.renewals.add("client-1", "G", "T", "OK", _handle("broker-b", 9, retrieved=due))
    await asyncio.wait_for(service.sweep(), 1)
    await _settle()
    assert renewed == ["broker-b"]
    assert (await service.renewals.take("client-1", "G", "OK", _handle("broker-b", 9, retrieved=due))).retrieve_time > due
    await service.sweep()  # the hung renewals are still in flight: none is sent a second time
    answer.set()
    await _settle()
    assert sorted(renewed) == ["broker-b", "broker-hung", "broker-hung", "broker-hung"]


async def test_a_renewal_that_times_out_is_tried_again_up_to_max_renew_retry_times() -> None:
    """Apache keeps a handle whose renewal failed without an answer (timeout, unreachable) and tries it at the next
    sweeps; once it failed maxRenewRetryTimes (3) times in a row the handle is dropped untried. A success between
    resets the count."""
    now = [1_000_000]
    renewals = Renewals(clock_ms=lambda: now[0])
    renewals.add("c", "G", "T", "M1", ReceiptHandle.decode(f"5 {now[0]} 5000 2 0 broker-a 3 7"))
    renewals.add("c", "G", "T", "M2", ReceiptHandle.decode(f"5 {now[0]} 5000 2 0 broker-a 3 8"))
    asked: list[str] = []
    succeed = {"M2": [False, False, True, False, False, False]}

    async def renew(handle: ReceiptHandle, group: str, topic: str, invisible: int) -> str:
        key = "M1" if handle.offset == 7 else "M2"
        asked.append(key)
        if key == "M2" and succeed["M2"].pop(0):
            return f"5 {now[0]} 5000 2 0 broker-a 3 8"
        raise RequestTimeoutError("wait response from broker-a timeout")

    results = []
    for _ in range(MAX_RENEW_RETRY_TIMES + 1):
        results.append(sum(await asyncio.gather(*renewals.renew_due(renew))))
    assert results == [0, 0, 1, 0]
    assert asked.count("M1") == MAX_RENEW_RETRY_TIMES  # the 4th sweep drops M1 without asking
    assert asked.count("M2") == 4
    assert len(renewals) == 1  # M2 failed once since its success: still held
    for _ in range(MAX_RENEW_RETRY_TIMES):
        await asyncio.gather(*renewals.renew_due(renew))
    assert asked.count("M2") == 6 and len(renewals) == 0  # two more failures, then dropped untried


async def test_a_renewal_of_an_unknown_broker_drops_the_handle_at_once() -> None:
    """INVALID_RECEIPT_HANDLE ends the renewal untried again, as the broker's refusal does (test_proxy_parts)."""
    now = [1_000_000]
    renewals = Renewals(clock_ms=lambda: now[0])
    renewals.add("c", "G", "T", "M1", ReceiptHandle.decode(f"5 {now[0]} 5000 2 0 broker-x 3 8"))

    async def renew(*_: object) -> str:
        raise ProxyError(Code.INVALID_RECEIPT_HANDLE, "cannot find broker broker-x")

    assert await asyncio.gather(*renewals.renew_due(renew)) == [False]
    assert len(renewals) == 0


async def test_an_ack_waits_for_a_renewal_of_its_handle_in_flight_and_acts_with_the_new_one() -> None:
    """Acting with the handle the renewal replaces would leave the renewed one to bring the message back."""
    now = [1_000_000]
    renewals = Renewals(clock_ms=lambda: now[0])
    first = ReceiptHandle.decode(f"5 {now[0]} 5000 2 0 broker-a 3 7")
    renewals.add("c", "G", "T", "M1", first)
    answer = asyncio.Event()

    async def renew(*_: object) -> str:
        await answer.wait()
        return f"7 {now[0]} 60000 2 0 broker-a 3 7 8042"

    (renewing,) = renewals.renew_due(renew)
    taking = asyncio.ensure_future(renewals.take("c", "G", "M1", first))
    await _settle()
    assert not taking.done()  # waits for the renewal
    answer.set()
    assert (await taking).text == f"7 {now[0]} 60000 2 0 broker-a 3 7 8042"
    assert await renewing  # renewed first, then taken with the handle it gave
    assert len(renewals) == 0


class _NoRoutesYet(ClientInstance):
    """A proxy that has routed nothing (just restarted): the name server knows the routes in `named`, the brokers
    answer every request SUCCESS; the route lookups and the requests are recorded."""

    def __init__(self, named: dict[str, TopicRouteData]) -> None:
        super().__init__(["127.0.0.1:9876"])
        self.named = named
        self.looked_up: list[str] = []
        self.sent: list[tuple[str | None, int]] = []

    async def fetch_route(self, topic: str, timeout: float | None = None) -> TopicRouteData | None:
        self.looked_up.append(topic)
        return self.named.get(topic)

    async def invoke(self, addr, cmd, timeout=None, *, ok=(ResponseCode.SUCCESS,)):  # type: ignore[override]
        self.sent.append((addr, int(cmd.code)))
        resp = RemotingCommand.request(0)
        resp.code = ResponseCode.SUCCESS
        return resp


def _broker_name_route(name: str, addrs: dict[int, str]) -> TopicRouteData:
    """The route of the topic named after a broker, which every broker registers (perm inherit only)."""
    return TopicRouteData(queue_datas=[QueueData(name, 1, 1, PERM_INHERIT)],
                          broker_datas=[BrokerData("DefaultCluster", name, addrs)])


async def test_an_ack_for_a_broker_no_cached_route_names_finds_it_by_its_broker_name_topic() -> None:
    instance = _NoRoutesYet({"broker-a": _broker_name_route("broker-a", {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"})})
    popper = Popper(instance)
    handle = _handle("broker-a", 7, retrieved=_now_ms())
    await popper.ack(handle, "G", "T")
    await popper.ack(handle, "G", "T")
    assert instance.looked_up == ["broker-a"]  # cached afterwards
    assert instance.sent == [("10.0.0.1:10911", RequestCode.ACK_MESSAGE)] * 2


async def test_an_ack_for_a_broker_the_name_server_does_not_know_is_invalid_receipt_handle() -> None:
    service = MessagingService(ProxyConfig(), _NoRoutesYet({}), port=0)
    text = _handle("broker-x", 7, retrieved=_now_ms()).text
    req = spb.AckMessageRequest(group=pb.Resource(name="G"), topic=pb.Resource(name="T"),
                                entries=[spb.AckMessageEntry(message_id="M1", receipt_handle=text)])
    answer = await service.AckMessage(req, CALL)
    assert (answer.entries[0].status.code, answer.entries[0].status.message) == (
        Code.INVALID_RECEIPT_HANDLE, "cannot find broker broker-x")
    assert answer.status.code == Code.INVALID_RECEIPT_HANDLE


async def test_an_ack_with_no_entries_is_internal_server_error() -> None:
    """AckMessageActivity.setAckResponseStatus: no result codes at all is INTERNAL_SERVER_ERROR."""
    service = MessagingService(ProxyConfig(), _NoRoutesYet({}), port=0)
    req = spb.AckMessageRequest(group=pb.Resource(name="G"), topic=pb.Resource(name="T"))
    answer = await service.AckMessage(req, CALL)
    assert (answer.status.code, answer.status.message) == (Code.INTERNAL_SERVER_ERROR, "ack message result is empty")


def test_a_brokers_no_permission_is_not_mapped() -> None:
    """ResponseBuilder.RESPONSE_CODE_MAPPING has no NO_PERMISSION: it is INTERNAL_SERVER_ERROR with the remark."""
    refused = status_of(broker_error(ResponseCode.NO_PERMISSION, "the topic[T] sending message is forbidden"))
    assert (refused.code, refused.message) == (Code.INTERNAL_SERVER_ERROR, "the topic[T] sending message is forbidden")
