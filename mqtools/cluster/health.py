"""What a local cluster's processes look like from outside, read through MQAdmin like any other cluster.

`registered`: the broker's address is in the live table of every name server that answers (so a
client asking any of them finds it). `ha`: the broker's own HA status. A process that cannot be asked gets `ha=None`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.models.ha import HAStatus
from mqtools.client.errors import MQClientError
from mqtools.cluster.supervisor import CONTROLLED_ROLE, ClusterState, LaunchError, ProcInfo
from mqtools.common.brokerrole import BrokerRole

ASK_TIMEOUT = 2.0
POLL_INTERVAL = 0.2


@dataclass(frozen=True, slots=True)
class ProcHealth:
    registered: bool
    ha: HAStatus | None

    @property
    def replicating(self) -> bool:
        return self.ha is not None and self.ha.replicating


async def collect(admin: MQAdmin, state: ClusterState) -> dict[str, ProcHealth]:
    """Per process name: registered with every name server, and a broker's HA status."""
    tables = await admin.cluster.broker_live_tables()
    known = [{e.broker_addr for e in table.brokers} for table in tables.values() if table is not None]
    brokers = [p for p in state.procs if p.kind == "broker"]
    statuses = await asyncio.gather(*(_ha(admin, p) for p in brokers))
    health = {p.name: ProcHealth(True, None) for p in state.procs if p.kind == "namesrv"}
    for proc, ha in zip(brokers, statuses, strict=True):
        health[proc.name] = ProcHealth(bool(known) and all(proc.addr in addrs for addrs in known), ha)
    return health


async def _ha(admin: MQAdmin, proc: ProcInfo) -> HAStatus | None:
    try:
        return await admin.brokers.ha_status(proc.addr)
    except MQClientError:
        return None


async def collect_once(state: ClusterState) -> dict[str, ProcHealth]:
    async with MQAdmin(state.namesrv_addr, timeout=ASK_TIMEOUT, security=state.security()) as admin:
        return await collect(admin, state)


async def wait_healthy(state: ClusterState, deadline: float) -> None:
    """Until every broker is registered with every name server and every slave replicates (in controller
    mode: every broker replicates, the master to at least one slave)."""
    async with MQAdmin(state.namesrv_addr, timeout=ASK_TIMEOUT, security=state.security()) as admin:
        while True:
            health = await collect(admin, state)
            missing = [p.name for p in state.procs if p.kind == "broker" and not health[p.name].registered]
            idle = [p.name for p in state.procs
                    if p.role in (BrokerRole.SLAVE, CONTROLLED_ROLE) and not health[p.name].replicating]
            if not missing and not idle:
                return
            if time.monotonic() > deadline:
                raise LaunchError(f"not healthy in time: unregistered {missing or '-'}, not replicating {idle or '-'}")
            await asyncio.sleep(POLL_INTERVAL)
