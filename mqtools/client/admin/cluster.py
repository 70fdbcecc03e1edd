"""Cluster-wide views: the broker snapshot with heartbeats per name server (RocketMQ's clusterList data)."""

from __future__ import annotations

import asyncio

from mqtools.client.admin.base import AdminService
from mqtools.client.admin.models.brokers import BrokerRow, ClusterSnapshot, Heartbeat
from mqtools.client.errors import MQClientError
from mqtools.remoting.bodies import BrokerLiveTable
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand


class ClusterAdmin(AdminService):
    """Cluster-wide views: the broker snapshot with heartbeats per name server (RocketMQ's clusterList data)."""

    async def broker_live_tables(self) -> dict[str, BrokerLiveTable | None]:
        """mq's private GET_BROKER_LIVE_TABLE from every name server; None where one lacks it or is down."""
        answers = await self.admin.instance.invoke_each_namesrv(
            lambda: RemotingCommand.request(RequestCode.GET_BROKER_LIVE_TABLE))
        return {addr: BrokerLiveTable.from_json(resp.body or b"{}")
                if isinstance(resp, RemotingCommand) and resp.code == ResponseCode.SUCCESS else None
                for addr, resp in answers.items()}

    async def cluster_snapshot(self, *, runtime: bool = True) -> ClusterSnapshot:
        """Every broker the name servers know, with heartbeats per name server and, with `runtime`,
        each broker's runtime figures; a broker that cannot be asked gets `runtime=None` and an error."""
        info, live = await asyncio.gather(self.admin.cluster_info(), self.broker_live_tables())
        rows = []
        for cluster, names in info.cluster_addr_table.items():
            for name in sorted(names):
                data = info.broker_addr_table.get(name)
                for broker_id, addr in sorted(data.broker_addrs.items()) if data else ():
                    rows.append(BrokerRow(cluster, name, broker_id, addr, heartbeats={
                        ns: _heartbeat(ns, table, addr) for ns, table in live.items()}))
        if runtime:
            answers = await asyncio.gather(*(self.admin._settled(self.admin.brokers.broker_runtime_info(r.addr)) for r in rows))
            for row, answer in zip(rows, answers, strict=True):
                if isinstance(answer, MQClientError):
                    row.error = str(answer)
                else:
                    row.runtime = answer
        return ClusterSnapshot(list(self.admin.namesrv_addrs), {c: sorted(n) for c, n in info.cluster_addr_table.items()},
                               rows, any(t is not None for t in live.values()))


def _heartbeat(namesrv: str, table: BrokerLiveTable | None, addr: str) -> Heartbeat | None:
    if table is None:
        return None
    entry = next((e for e in table.brokers if e.broker_addr == addr), None)
    if entry is None:
        return None
    return Heartbeat(namesrv, entry.last_update_timestamp, table.now, entry.heartbeat_timeout_millis)
