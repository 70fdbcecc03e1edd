"""ClientInstance.invoke, the client side's one wire gateway: what callers see of transport failures and codes."""

from __future__ import annotations

import pytest
from unit.client.fake_remoting import FakeRemoting, fake_instance, route_data

from mqtools.client.errors import (
    ConnectFailedError,
    ConnectionDroppedError,
    MQBrokerError,
    NotAvailable,
    RequestTimeoutError,
    TopicNotExistError,
    UnreachableError,
    unreachable_error,
)
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import (
    ProtocolError,
    RemotingConnectError,
    RemotingConnectionClosed,
    RemotingError,
    RemotingTimeoutError,
)

ADDR = "broker-a:10911"


def request() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)


@pytest.mark.parametrize(("raised", "expected", "may_have_arrived"), [
    (RemotingConnectError(ADDR, "refused"), ConnectFailedError, False),
    (RemotingTimeoutError(ADDR, 3.0, 28), RequestTimeoutError, True),
    (RemotingConnectionClosed(ADDR), ConnectionDroppedError, True),
    (ProtocolError("bad frame"), ConnectionDroppedError, True),
])
async def test_a_transport_failure_becomes_the_unreachable_error_that_says_whether_it_arrived(
        raised: RemotingError, expected: type[UnreachableError], may_have_arrived: bool) -> None:
    async def answer(_addr: str, _cmd: RemotingCommand, _timeout: float) -> RemotingCommand:
        raise raised

    instance = fake_instance(FakeRemoting({}, answer))
    with pytest.raises(expected) as caught:
        await instance.invoke(ADDR, request())
    assert not isinstance(caught.value, RemotingError)  # nothing above the gateway sees the transport
    assert (not isinstance(caught.value, ConnectFailedError)) == may_have_arrived
    assert type(unreachable_error(raised)) is expected


async def test_codes_outside_ok_raise_their_named_error_and_ok_codes_come_back() -> None:
    codes = iter([ResponseCode.TOPIC_NOT_EXIST, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, 999,
                  ResponseCode.TOPIC_NOT_EXIST])

    async def answer(_addr: str, cmd: RemotingCommand, _timeout: float) -> RemotingCommand:
        return cmd.response(next(codes), "remark")

    instance = fake_instance(FakeRemoting({}, answer))
    with pytest.raises(TopicNotExistError, match="remark"):
        await instance.invoke(ADDR, request())
    with pytest.raises(NotAvailable, match=f"does not support request code {int(RequestCode.GET_BROKER_RUNTIME_INFO)}"):
        await instance.invoke(ADDR, request())
    with pytest.raises(MQBrokerError) as other:
        await instance.invoke(ADDR, request())
    assert type(other.value) is MQBrokerError and other.value.code == 999
    resp = await instance.invoke(ADDR, request(), ok=(ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST))
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST


async def test_a_route_the_name_server_does_not_know_is_none_not_an_error() -> None:
    instance = fake_instance(FakeRemoting({"Known": route_data({"broker-a": 2})}))
    assert await instance.fetch_route("Unknown") is None
    assert (await instance.fetch_route("Known")) is not None


async def test_unregister_does_not_wait_for_a_broker_whose_last_request_timed_out() -> None:
    """A client closing with a hung broker in its routes said goodbye to it too and waited out a whole timeout
    (a Spark write task with a master SIGSTOPped: 3 of its 4.6 s); the broker drops the registration when the
    connection closes. One that answered since it timed out is asked again."""
    hung = {"broker-b:10911"}

    async def answer(addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        if addr in hung:
            raise RemotingTimeoutError(addr, timeout, cmd.opaque)
        return cmd.response()

    remoting = FakeRemoting({"T": route_data({"broker-a": 1, "broker-b": 1})}, answer)
    instance = fake_instance(remoting)
    await instance.route("T")
    instance.producer_groups.add("g")
    await instance.heartbeat()  # a goodbye goes only where a heartbeat went (test_close_beside_hung_broker)
    with pytest.raises(RequestTimeoutError):
        await instance.invoke("broker-b:10911", request())
    await instance.unregister(producer_group="g")
    assert [s.addr for s in remoting.broker_requests(RequestCode.UNREGISTER_CLIENT)] == ["broker-a:10911"]
    hung.clear()
    await instance.invoke("broker-b:10911", request())
    await instance.unregister(producer_group="g")
    assert sorted(s.addr for s in remoting.broker_requests(RequestCode.UNREGISTER_CLIENT)) == [
        "broker-a:10911", "broker-a:10911", "broker-b:10911"]
