"""ClientInstance.heartbeat: to each master of the routes it knows, with its groups; none without any group, as
Apache's client (a pull-only reader, such as the Spark source's pooled consumer, has nothing to announce)."""

from __future__ import annotations

from unit.client.fake_remoting import FakeRemoting, fake_instance, route_data

from mqtools.remoting.bodies import HeartbeatData
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand


async def test_an_instance_without_groups_sends_no_heartbeat_and_with_one_it_does() -> None:
    async def ok(_addr: str, cmd: RemotingCommand, _timeout: float) -> RemotingCommand:
        return cmd.response()

    remoting = FakeRemoting({"T": route_data({"broker-a": 2, "broker-b": 2})}, ok)
    instance = fake_instance(remoting)
    await instance.route("T")
    await instance.heartbeat()
    assert remoting.broker_requests(RequestCode.HEART_BEAT) == []
    instance.producer_groups.add("PG")
    await instance.heartbeat()
    sent = remoting.broker_requests(RequestCode.HEART_BEAT)
    assert sorted(s.addr for s in sent) == ["broker-a:10911", "broker-b:10911"]
    assert [p.group_name for p in HeartbeatData.from_json(sent[0].cmd.body).producer_data_set] == ["PG"]
