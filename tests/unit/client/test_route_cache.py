"""ClientInstance's route cache: which route names a broker set's nodes, and how often a route whose set lost
its master is read again. Apache's client overwrites brokerAddrTable[brokerName] with each route it reads
(MQClientInstance.updateTopicRouteInfoFromNameServer) and reads routes every pollNameServerInterval (30 s)."""

from __future__ import annotations

import asyncio

import pytest
from unit.client.fake_remoting import FakeRemoting, fake_instance, route_data

from mqtools.client import instance as instance_module
from mqtools.remoting.bodies import TopicRouteData
from mqtools.remoting.codes import RequestCode

MASTER = "broker-a:10911"
SLAVE = "broker-a-s:10911"


def master_gone() -> TopicRouteData:
    """broker-a with its slave only: the name server dropped the dead master."""
    data = route_data({"broker-a": 2})
    data.broker_datas[0].broker_addrs = {1: SLAVE}
    return data


def route_lookups(remoting: FakeRemoting) -> int:
    return sum(1 for s in remoting.sent if s.addr is None and s.cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC)


async def test_the_newest_route_read_decides_a_sets_nodes() -> None:
    """U's route, read first and not since, still lists the dead master; T's, read after it died, does not:
    T's decides, so a refresh after a failure takes effect at once."""
    remoting = FakeRemoting({"U": route_data({"broker-a": 2}), "T": route_data({"broker-a": 2})})
    instance = fake_instance(remoting)
    await instance.route("U")
    await instance.route("T")
    remoting.route_table["T"] = master_gone()
    await instance.route("T", refresh=True)
    assert instance.broker_addr("broker-a", any_node=False) is None
    assert instance.broker_addr("broker-a") == SLAVE
    assert instance.broker_nodes("broker-a") == [SLAVE]
    elected = route_data({"broker-a": 2})
    elected.broker_datas[0].broker_addrs = {0: "broker-a2:10911", 1: SLAVE}
    remoting.route_table["U"] = elected
    await instance.route("U", refresh=True)
    assert instance.broker_addr("broker-a", any_node=False) == "broker-a2:10911"


async def test_a_route_without_master_is_read_ever_less_often_until_the_master_is_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A set whose master is down for hours must not have every client read its route twice a second."""
    monkeypatch.setattr(instance_module, "HEADLESS_ROUTE_RECHECK", 0.01)
    remoting = FakeRemoting({"T": master_gone()})
    instance = fake_instance(remoting)
    await instance.route("T")
    await instance.start()
    try:
        await asyncio.sleep(0.45)
        # doubling from 0.01 s: read at about 0.01, 0.02, 0.04, 0.08, 0.16 and 0.32 s (at a fixed 0.01 s, ~45; a
        # slower machine reads fewer)
        assert 1 <= route_lookups(remoting) - 1 <= 7
        remoting.route_table["T"] = route_data({"broker-a": 2})
        await instance.route("T", refresh=True)  # the master is back ...
        remoting.route_table["T"] = master_gone()
        await instance.route("T", refresh=True)  # ... and gone again: read at the quick pace from the start
        before = route_lookups(remoting)
        # two reads take about 0.03 s from the start of the pace, 1.9 s had the waits gone on doubling from 0.64 s
        deadline = asyncio.get_running_loop().time() + 1.0
        while route_lookups(remoting) - before < 2:
            assert asyncio.get_running_loop().time() < deadline, "the quick pace did not start again"
            await asyncio.sleep(0.005)
    finally:
        await instance.shutdown()


async def test_a_name_server_that_forgot_the_topic_leaves_the_route_held() -> None:
    """A name server restarted empty answers TOPIC_NOT_EXIST for every topic until the brokers register again (up
    to 30 s). The refresh reports that answer (None: an admin read says the topic does not exist) but the route held
    stays cached, as Apache's MQClientInstance keeps topicRouteTable then: the brokers stay known and heartbeats go
    on. A topic never held is still unknown."""
    remoting = FakeRemoting({"T": route_data({"broker-a": 2})})
    instance = fake_instance(remoting)
    held = await instance.route("T")
    del remoting.route_table["T"]
    assert await instance.route("T", refresh=True) is None
    assert await instance.fetch_route("T") is None
    assert instance.routes.get("T") is held and await instance.route("T") is held
    assert instance.broker_addr("broker-a", any_node=False) == MASTER
    instance.producer_groups.add("pg")
    await instance.heartbeat()
    assert [s.addr for s in remoting.broker_requests(RequestCode.HEART_BEAT)] == [MASTER]
    assert await instance.route("U", refresh=True) is None and "U" not in instance.routes
