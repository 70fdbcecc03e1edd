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


async def test_a_route_still_naming_the_dead_master_sends_the_commit_to_its_slave() -> None:
    """The name server has not dropped the killed master yet: the refreshed route names it still, and the commit
    goes to the set's other node at once (it waited for the consumer's next round)."""
    committed: dict[str, int] = {}

    async def answer(addr: str, cmd: RemotingCommand, _timeout: float) -> RemotingCommand:
        if addr == MASTER:
            raise RemotingConnectError(addr, "refused")
        committed[addr] = int(cmd.ext_fields["commitOffset"])
        return cmd.response(ResponseCode.SUCCESS)

    remoting = FakeRemoting({"T": route({0: MASTER, 1: SLAVE})}, answer)
    instance = fake_instance(remoting)
    await instance.route("T", refresh=True)
    await RemoteOffsetStore(instance, "g").commit(MQ, 42)
    assert committed == {SLAVE: 42}
    assert [s.addr for s in remoting.broker_requests(RequestCode.UPDATE_CONSUMER_OFFSET)] == [MASTER, SLAVE]


async def test_no_other_node_means_the_failure_is_raised() -> None:
    async def answer(addr: str, cmd: RemotingCommand, _timeout: float) -> RemotingCommand:
        raise RemotingConnectError(addr, "refused")

    remoting = FakeRemoting({"T": route({0: MASTER})}, answer)
    instance = fake_instance(remoting)
    await instance.route("T", refresh=True)
    with pytest.raises(ConnectFailedError):
        await RemoteOffsetStore(instance, "g").commit(MQ, 1)


async def test_a_round_of_commits_leaves_a_broker_that_cannot_be_reached_after_its_first_queue() -> None:
    """persist (a consumer's round, its shutdown) with a hung master: one timeout for that broker, not one a queue
    (five queues cost a push consumer's shutdown 15 s); the other broker's queues are committed all the same, and
    an unlock of the hung broker's queues is not sent at all (the lock expires)."""
    from mqtools.client.client_api import unlock_batch
    from mqtools.remoting.errors import RemotingTimeoutError

    async def answer(addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        if addr == MASTER:
            raise RemotingTimeoutError(addr, timeout, cmd.opaque)
        return cmd.response(ResponseCode.SUCCESS)

    data = TopicRouteData(queue_datas=[QueueData("broker-a", 3, 3), QueueData("broker-b", 2, 2)],
                          broker_datas=[BrokerData("C", "broker-a", {0: MASTER}), BrokerData("C", "broker-b", {0: "b:1"})])
    remoting = FakeRemoting({"T": data}, answer)
    instance = fake_instance(remoting)
    await instance.route("T", refresh=True)
    store = RemoteOffsetStore(instance, "g")
    queues = [MessageQueue("T", b, q) for b, n in (("broker-a", 3), ("broker-b", 2)) for q in range(n)]
    for mq in queues:
        store.update(mq, 7)
    assert await store.commit_all(dict.fromkeys(queues, 8), tolerant=True) == queues[:3]  # left for the next round
    remoting.sent.clear()
    await store.persist(queues)
    assert sorted(s.addr for s in remoting.broker_requests(RequestCode.UPDATE_CONSUMER_OFFSET)) == [
        MASTER, "b:1", "b:1"]
    await unlock_batch(instance, "g", queues)
    assert [s.addr for s in remoting.broker_requests(RequestCode.UNLOCK_BATCH_MQ)] == ["b:1"]


async def test_once_a_master_timed_out_the_rest_of_its_set_s_commits_go_straight_to_the_slave() -> None:
    """A hung master with a slave in the route: _invoke went on to the slave, so commit_all never saw the master
    fail and every queue waited out its own timeout (a shutdown 15 s for five queues). One timeout now, in this
    round, and none in the next while the instance remembers the master as timed out."""
    from mqtools.remoting.errors import RemotingTimeoutError

    committed: dict[int, int] = {}

    async def answer(addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        if addr == MASTER:
            raise RemotingTimeoutError(addr, timeout, cmd.opaque)
        committed[int(cmd.ext_fields["queueId"])] = int(cmd.ext_fields["commitOffset"])
        return cmd.response(ResponseCode.SUCCESS)

    remoting = FakeRemoting({"T": route({0: MASTER, 1: SLAVE})}, answer)
    instance = fake_instance(remoting)
    await instance.route("T", refresh=True)
    store = RemoteOffsetStore(instance, "g")
    queues = [MessageQueue("T", "broker-a", q) for q in range(3)]
    assert await store.commit_all(dict.fromkeys(queues, 8), tolerant=True) == []
    assert [s.addr for s in remoting.broker_requests(RequestCode.UPDATE_CONSUMER_OFFSET)] == [
        MASTER, SLAVE, SLAVE, SLAVE]
    remoting.sent.clear()
    assert await store.commit_all(dict.fromkeys(queues, 9), tolerant=True) == []
    assert [s.addr for s in remoting.broker_requests(RequestCode.UPDATE_CONSUMER_OFFSET)] == [SLAVE] * 3
    assert committed == {0: 9, 1: 9, 2: 9}
