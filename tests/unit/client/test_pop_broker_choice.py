"""PopConsumer.pop without a broker named: it takes the topic's sets in turn, skipping a set whose master is not
in the route (a POP needs the master), and says so plainly when no set has one."""

from __future__ import annotations

import pytest
from unit.client.fake_remoting import FakeRemoting, fake_instance, route_data

from mqtools.client.errors import MQClientError
from mqtools.client.pop_consumer import PopConsumer, PopStatus
from mqtools.remoting.bodies import TopicRouteData
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand


async def nothing_found(_addr: str, cmd: RemotingCommand, _timeout: float) -> RemotingCommand:
    return cmd.response(ResponseCode.PULL_NOT_FOUND, "no new message")


def without_master(data: TopicRouteData, *names: str) -> TopicRouteData:
    """The route with those sets' masters dropped (their slaves stay listed)."""
    for bd in data.broker_datas:
        if bd.broker_name in names:
            bd.broker_addrs = {1: f"{bd.broker_name}-s:10911"}
    return data


async def test_pop_goes_only_to_sets_whose_master_is_in_the_route() -> None:
    remoting = FakeRemoting({"T": without_master(route_data({"broker-a": 2, "broker-b": 2}), "broker-a")},
                            nothing_found)
    consumer = PopConsumer("g", instance=fake_instance(remoting))
    for _ in range(4):
        assert (await consumer.pop("T")).status is PopStatus.POLLING_NOT_FOUND
    assert [s.addr for s in remoting.broker_requests(RequestCode.POP_MESSAGE)] == ["broker-b:10911"] * 4


async def test_pop_with_no_master_anywhere_names_the_sets() -> None:
    data = without_master(route_data({"broker-a": 2, "broker-b": 2}), "broker-a", "broker-b")
    consumer = PopConsumer("g", instance=fake_instance(FakeRemoting({"T": data}, nothing_found)))
    with pytest.raises(MQClientError, match=r"no broker set of topic T has its master in the route "
                                            r"\(broker-a, broker-b\)"):
        await consumer.pop("T")
