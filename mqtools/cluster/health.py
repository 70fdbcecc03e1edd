"""What a local cluster's processes look like from outside, read through MQAdmin like any other cluster.

`registered`: the broker's address is in the live table of every name server that answers (so a
client asking any of them finds it); None, not known, when none answered, and `unanswered` names those that did
not. `ha`: the broker's own HA status. A process that cannot be asked gets `ha=None`. `grpc`: a proxy's answer to one
gRPC call.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.models.ha import HAStatus
from mqtools.client.errors import MQClientError
from mqtools.cluster.supervisor import CONTROLLED_ROLE, ClusterState, LaunchError, ProcInfo
from mqtools.common.brokerrole import BrokerRole

ASK_TIMEOUT = 2.0
POLL_INTERVAL = 0.2
PROBE_METHOD = "/apache.rocketmq.v2.MessagingService/QueryRoute"


@dataclass(frozen=True, slots=True)
class GrpcProbe:
    """Whether a proxy answered one gRPC call (QueryRoute without a topic: refused in its status, no broker
    asked), so `alive` means serving, not just a pid."""

    answering: bool
    tls: bool
    latency_ms: float | None
    error: str | None


@dataclass(frozen=True, slots=True)
class ProcHealth:
    registered: bool | None
    """None: no name server answered, so whether it is registered is not known."""
    ha: HAStatus | None
    grpc: GrpcProbe | None = None
    unanswered: tuple[str, ...] = ()
    """The name servers that did not answer for their live tables: `registered` counts only the others."""

    @property
    def replicating(self) -> bool:
        return self.ha is not None and self.ha.replicating


async def collect(admin: MQAdmin, state: ClusterState) -> dict[str, ProcHealth]:
    """Per process name: registered with every name server, and a broker's HA status."""
    tables = await admin.cluster.broker_live_tables()
    known = [{e.broker_addr for e in table.brokers} for table in tables.values() if table is not None]
    unanswered = tuple(addr for addr, table in tables.items() if table is None)
    brokers = [p for p in state.procs if p.kind == "broker"]
    statuses = await asyncio.gather(*(_ha(admin, p) for p in brokers))
    health = {p.name: ProcHealth(True, None) for p in state.procs if p.kind == "namesrv"}
    for proc, ha in zip(brokers, statuses, strict=True):
        registered = all(proc.addr in addrs for addrs in known) if known else None
        health[proc.name] = ProcHealth(registered, ha, unanswered=unanswered)
    proxies = [p for p in state.procs if p.kind == "proxy"]
    probes = await asyncio.gather(*(probe_grpc(p.addr, state.tls_ca) for p in proxies))
    for proc, probe in zip(proxies, probes, strict=True):
        health[proc.name] = ProcHealth(False, None, probe)
    return health


async def probe_grpc(addr: str, ca_file: str | None, timeout: float = ASK_TIMEOUT) -> GrpcProbe:
    """One MessagingService call to the proxy at `addr` (TLS verified against `ca_file` when given)."""
    import grpc  # the proxy's dependency; only a cluster with proxies needs it

    started = time.monotonic()
    try:
        if ca_file is not None:
            creds = grpc.ssl_channel_credentials(root_certificates=Path(ca_file).read_bytes())
            channel = grpc.aio.secure_channel(addr, creds)
        else:
            channel = grpc.aio.insecure_channel(addr)
        async with channel:
            call = channel.unary_unary(PROBE_METHOD)
            await call(b"", timeout=timeout, metadata=(("x-mq-client-id", "mq-cluster-status"),))
    except grpc.aio.AioRpcError as exc:
        return GrpcProbe(False, ca_file is not None, None, f"{exc.code().name}: {exc.details()}")
    except (TimeoutError, OSError) as exc:
        return GrpcProbe(False, ca_file is not None, None, f"{type(exc).__name__}: {exc}")
    return GrpcProbe(True, ca_file is not None, round((time.monotonic() - started) * 1000, 1), None)


async def _ha(admin: MQAdmin, proc: ProcInfo) -> HAStatus | None:
    try:
        return await admin.brokers.ha_status(proc.addr)
    except MQClientError:
        return None


async def controlled_masters(state: ClusterState, names: list[str]) -> set[str]:
    """Of the controller-mode brokers `names`, those that are masters now, or cannot say (a hung or dead one)."""
    procs = [p for p in state.procs if p.name in names]
    async with MQAdmin(state.namesrv_addr, timeout=ASK_TIMEOUT, security=state.security()) as admin:
        statuses = await asyncio.gather(*(_ha(admin, p) for p in procs))
    return {p.name for p, ha in zip(procs, statuses, strict=True) if ha is None or ha.is_master}


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
            silent = [p.name for p in state.procs if p.kind == "proxy" and not _answering(health[p.name])]
            if not missing and not idle and not silent:
                return
            if time.monotonic() > deadline:
                raise LaunchError(f"not healthy in time: unregistered {missing or '-'}, not replicating {idle or '-'}"
                                  f", proxies not answering gRPC {silent or '-'}")
            await asyncio.sleep(POLL_INTERVAL)


def _answering(health: ProcHealth) -> bool:
    return health.grpc is not None and health.grpc.answering
