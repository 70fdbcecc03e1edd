"""Name-server health for live views: each name server asked on its own, so one that is down, slow or
missing a broker stands out instead of being skipped by the client's usual failover."""

from __future__ import annotations

import asyncio
import time

from mqtools.client.admin.base import AdminService
from mqtools.client.admin.models.live import NamesrvStatus
from mqtools.client.errors import MQClientError, NotAvailable
from mqtools.remoting.bodies import ClusterInfo
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand


class NamesrvProbeAdmin(AdminService):
    """Each name server's reachability, round-trip time and the brokers it knows."""

    async def namesrv_probe(self) -> list[NamesrvStatus]:
        """Every configured name server, in the configured order, asked concurrently."""
        return list(await asyncio.gather(*(self._probe(addr) for addr in self.admin.namesrv_addrs)))

    async def _probe(self, addr: str) -> NamesrvStatus:
        (info, rtt_ms), live = await asyncio.gather(self._timed(addr), self.admin.cluster.live_table(addr))
        if isinstance(info, MQClientError):
            return NamesrvStatus(addr, False, None, None, None, str(info))
        table = ClusterInfo.from_json(info.body or b"{}")
        addrs = frozenset(a for data in table.broker_addr_table.values() for a in data.broker_addrs.values())
        live_table = None if isinstance(live, MQClientError) and not isinstance(live, NotAvailable) \
            else not isinstance(live, MQClientError)
        return NamesrvStatus(addr, True, rtt_ms, addrs, live_table,
                             certificate_not_after=self.admin.certificate_not_after(addr))

    async def _timed(self, addr: str) -> tuple[RemotingCommand | MQClientError, float]:
        began = time.perf_counter()
        answer = await self.admin._settled(self.admin.call(addr, RequestCode.GET_BROKER_CLUSTER_INFO))
        return answer, (time.perf_counter() - began) * 1000
