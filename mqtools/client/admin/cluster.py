"""Cluster-wide views: the broker snapshot with heartbeats per name server (RocketMQ's clusterList data)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from mqtools.client.admin.base import AdminService, reason_of
from mqtools.client.admin.models.brokers import BrokerRow, ClusterSnapshot, Heartbeat
from mqtools.client.errors import MQClientError, NotAvailable, RequestTimeoutError, UnreachableError
from mqtools.remoting.bodies import BrokerLiveTable
from mqtools.remoting.codes import RequestCode

if TYPE_CHECKING:
    from mqtools.client.admin.client import MQAdmin

#: mq's private GET_BROKER_LIVE_TABLE: how long a name server has to answer it before it counts as one that
#: does not know it (Apache's name server leaves a request it does not know unanswered, so asking with the
#: session's timeout made every live round wait that long), and how long that holds before it is asked again.
LIVE_TABLE_WAIT_S, LIVE_TABLE_RECHECK_S = 1.0, 60.0


class ClusterAdmin(AdminService):
    """Cluster-wide views: the broker snapshot with heartbeats per name server (RocketMQ's clusterList data)."""

    def __init__(self, admin: MQAdmin) -> None:
        super().__init__(admin)
        self._silent: dict[str, float] = {}
        """Name server -> when it last left GET_BROKER_LIVE_TABLE unanswered (monotonic)."""

    async def live_table(self, addr: str) -> BrokerLiveTable | MQClientError:
        """One name server's live table, or why not: NotAvailable where it does not offer the request
        (it said so, or left it unanswered for LIVE_TABLE_WAIT_S within the last LIVE_TABLE_RECHECK_S),
        another client error where it is down."""
        silent = self._silent.get(addr)
        if silent is not None and time.monotonic() - silent < LIVE_TABLE_RECHECK_S:
            return _no_live_table(addr)
        wait = min(self.admin.timeout, LIVE_TABLE_WAIT_S)
        answer = await self.admin._settled(self.admin.call(addr, RequestCode.GET_BROKER_LIVE_TABLE, timeout=wait))
        if isinstance(answer, RequestTimeoutError):
            self._silent[addr] = time.monotonic()
            return _no_live_table(addr)
        if isinstance(answer, MQClientError):
            return answer
        self._silent.pop(addr, None)
        return BrokerLiveTable.from_json(answer.body or b"{}")

    async def broker_live_tables(self) -> dict[str, BrokerLiveTable | None]:
        """mq's private GET_BROKER_LIVE_TABLE from every name server; None where one lacks it or is down."""
        addrs = list(self.admin.namesrv_addrs)
        answers = await asyncio.gather(*(self.live_table(addr) for addr in addrs))
        return {addr: None if isinstance(a, MQClientError) else a for addr, a in zip(addrs, answers, strict=True)}

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
                    row.reason = reason_of(answer) if isinstance(answer, UnreachableError) else row.error
                else:
                    row.runtime = answer
        return ClusterSnapshot(list(self.admin.namesrv_addrs), {c: sorted(n) for c, n in info.cluster_addr_table.items()},
                               rows, any(t is not None for t in live.values()))


def _no_live_table(addr: str) -> NotAvailable:
    return NotAvailable(NotAvailable.CODE, f"{addr} left mq's private GET_BROKER_LIVE_TABLE unanswered for "
                                           f"{LIVE_TABLE_WAIT_S:g} s (Apache RocketMQ's name server does)")


def _heartbeat(namesrv: str, table: BrokerLiveTable | None, addr: str) -> Heartbeat | None:
    if table is None:
        return None
    entry = next((e for e in table.brokers if e.broker_addr == addr), None)
    if entry is None:
        return None
    return Heartbeat(namesrv, entry.last_update_timestamp, table.now, entry.heartbeat_timeout_millis)
