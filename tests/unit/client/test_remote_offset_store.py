"""RemoteOffsetStore: offsets go to the master, and to the slave once the master is gone from the route."""

from __future__ import annotations

import pytest
from unit.client.fake_remoting import FakeRemoting, fake_instance

from mqtools.client.errors import ConnectFailedError
from mqtools.client.offset_store import RemoteOffsetStore
from mqtools.remoting.bodies import BrokerData, MessageQueue, QueueData, TopicRouteData
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingConnectError

MASTER, SLAVE = "a:10911", "a-s:10911"
MQ = MessageQueue("T", "broker-a", 0)


def route(addrs: dict[int, str]) -> TopicRouteData:
    return TopicRouteData(queue_datas=[QueueData("broker-a", 1, 1)],
                          broker_datas=[BrokerData("C", "broker-a", addrs)])


async def test_a_commit_the_dead_master_refuses_lands_on_the_slave_after_a_route_refresh() -> None:
    committed: dict[str, int] = {}

    async def answer(addr: str, cmd: RemotingCommand, _timeout: float) -> RemotingCommand:
        if addr == MASTER:
            raise RemotingConnectError(addr, "refused")
        if cmd.code == RequestCode.UPDATE_CONSUMER_OFFSET:
            committed[addr] = int(cmd.ext_fields["commitOffset"])
            return cmd.response(ResponseCode.SUCCESS)
        return cmd.response(ResponseCode.SUCCESS, ext_fields={"offset": str(committed.get(addr, 0))})

    remoting = FakeRemoting({"T": route({0: MASTER, 1: SLAVE})}, answer)
    instance = fake_instance(remoting)
    await instance.route("T", refresh=True)
    store = RemoteOffsetStore(instance, "g")
    remoting.route_table["T"] = route({1: SLAVE})  # the name server dropped the dead master
    await store.commit(MQ, 42)
    assert committed == {SLAVE: 42}
    assert await store.read(MQ) == 42
    assert [s.addr for s in remoting.broker_requests(RequestCode.UPDATE_CONSUMER_OFFSET)] == [MASTER, SLAVE]


async def test_no_other_node_means_the_failure_is_raised() -> None:
    async def answer(addr: str, cmd: RemotingCommand, _timeout: float) -> RemotingCommand:
        raise RemotingConnectError(addr, "refused")

    remoting = FakeRemoting({"T": route({0: MASTER})}, answer)
    instance = fake_instance(remoting)
    await instance.route("T", refresh=True)
    with pytest.raises(ConnectFailedError):
        await RemoteOffsetStore(instance, "g").commit(MQ, 1)
