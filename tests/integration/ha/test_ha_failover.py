"""Consumers read from the slave while the master is down; offsets committed on the master count."""

from __future__ import annotations

from pathlib import Path

import pytest
from integration.ha.hasupport import call, pull, ready_for_drill, running_group, send, until

from mqtools.remoting.bodies import TopicRouteData
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader

pytestmark = pytest.mark.integration
TOPIC = "HaFailover"
GROUP = "CG_HA"


async def commit(client: RemotingClient, addr: str, offset: int) -> int:
    h = UpdateConsumerOffsetRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=0, commit_offset=offset)
    return (await call(client, addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, h.to_ext()))).code


async def committed(client: RemotingClient, addr: str) -> int:
    h = QueryConsumerOffsetRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=0)
    resp = await call(client, addr, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, h.to_ext()))
    return int(resp.ext_fields["offset"]) if resp.code == ResponseCode.SUCCESS else -1


async def test_consume_from_slave_while_master_is_down(tmp_path: Path) -> None:
    async with running_group(tmp_path, role="SYNC_MASTER") as (group, client):
        assert group.slave is not None and group.master.proc is not None
        await ready_for_drill(client, group, TOPIC)
        refused = await send(client, group.slave.addr, TOPIC, b"to-the-slave")
        assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE  # a slave never takes writes
        bodies = [f"fo-{i:03d}".encode() for i in range(40)]
        for body in bodies:
            assert (await send(client, group.master.addr, TOPIC, body, queue_id=0)).code == ResponseCode.SUCCESS
        # the warm-up message took queue offset 0 of queue 0
        assert await commit(client, group.master.addr, 16) == ResponseCode.SUCCESS
        await until(lambda: _is(committed(client, group.slave.addr), 16), 30, "offset sync to the slave")

        group.master.proc.kill()

        async def slave_only() -> bool:
            resp = await call(client, group.namesrv.addr, RemotingCommand.request(
                RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}))
            if resp.code != ResponseCode.SUCCESS:
                return False
            route = TopicRouteData.from_json(resp.body)
            return [sorted(b.broker_addrs) for b in route.broker_datas] == [[1]]

        await until(slave_only, 30, "route with only the slave")
        start = await committed(client, group.slave.addr)
        assert start == 16
        got: list[bytes] = []
        offset = start
        while True:
            code, batch, offset = await pull(client, group.slave.addr, TOPIC, 0, offset, 8)
            if code != ResponseCode.SUCCESS or not batch:
                break
            got += batch
        assert got == bodies[15:]
        assert await commit(client, group.slave.addr, offset) == ResponseCode.SUCCESS
        assert await committed(client, group.slave.addr) == 41


async def _is(value_coro, expected: int) -> bool:
    return await value_coro == expected
