"""Replication per broker group over a window of samples, and the "safe to stop the master?" verdict.

`ha_replication` asks each master for GET_BROKER_HA_STATUS every half second over the window (the
trend needs several samples; nothing else does), then once more each master's runtime figures
(average stored message size) and config (send mode), and each slave's own HA status (its master,
max offset, last read and write). A master that does not offer GET_BROKER_HA_STATUS (Apache 4.x) is
sampled through what it does answer: its and its slaves' runtime commitLogMaxOffset, read at once; the
group then says so (`source`). `ha_ready` turns one group's figures into a verdict with reasons
(`models.ha_readiness.assess`); drills call it before they stop a master.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mqtools.client.admin.base import AdminService, reason_of
from mqtools.client.admin.controllers import ControllersUnreachableError
from mqtools.client.admin.models.brokers import BrokerRuntime
from mqtools.client.admin.models.ha import (
    DEFAULT_FALLBEHIND_MAX,
    DEFAULT_MAX_CATCHUP_S,
    DEFAULT_MAX_DIFF,
    HA_STATUS,
    RUNTIME_INFO,
    UNKNOWN,
    ControllerState,
    ControllerView,
    HAStatus,
    ReplicationGroup,
    SlaveReplication,
    SlaveView,
    diff_messages,
    offset_speed,
    pair_slaves,
    silent_slave,
    status_from_offsets,
    trend_of,
)
from mqtools.client.admin.models.ha_readiness import Check, HAReadiness, assess
from mqtools.client.errors import MQClientError, NotAvailable, UnknownTargetError, UnreachableError
from mqtools.common.addresses import parse_namesrv_list
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.presentation import Unreachable
from mqtools.remoting.bodies import ClusterInfo

if TYPE_CHECKING:
    from mqtools.client.admin.client import MQAdmin

SAMPLE_INTERVAL_S = 0.5


@dataclass(frozen=True, slots=True)
class _Target:
    cluster: str | None
    name: str | None
    master: str | None
    slaves: dict[int, str]


def _targets(info: ClusterInfo, broker_addr: str | None, cluster: str | None,
             broker_name: str | None) -> list[_Target]:
    """The broker groups to look at: one by name, the one holding an address, a cluster's, or all."""
    cluster_of = {name: c for c, names in info.cluster_addr_table.items() for name in names}

    def target(name: str) -> _Target:
        data = info.broker_addr_table.get(name)
        addrs = dict(data.broker_addrs) if data else {}
        return _Target(cluster_of.get(name) or (data.cluster if data else None), name, addrs.pop(MASTER_ID, None),
                       dict(sorted(addrs.items())))

    if broker_name is not None:
        if broker_name not in info.broker_addr_table:
            known = ", ".join(sorted(info.broker_addr_table)) or "none"
            raise UnknownTargetError(f"broker {broker_name} not found (known: {known})")
        return [target(broker_name)]
    if broker_addr is not None:
        for name, data in sorted(info.broker_addr_table.items()):
            if broker_addr in data.broker_addrs.values():
                return [target(name)]
        return [_Target(None, None, broker_addr, {})]  # not registered: ask it directly, as mqadmin does
    if cluster is not None:
        if cluster not in info.cluster_addr_table:
            known = ", ".join(sorted(info.cluster_addr_table)) or "none"
            raise UnknownTargetError(f"cluster {cluster} not found (known: {known})")
        return [target(n) for n in sorted(info.cluster_addr_table[cluster])]
    return [target(n) for n in sorted(info.broker_addr_table)]


def _slave_view(addr: str, broker_id: int, answer: HAStatus | BrokerRuntime | MQClientError) -> SlaveView:
    if isinstance(answer, MQClientError):
        return SlaveView(addr, broker_id, None, None, None, None, None, None, error=str(answer))
    if isinstance(answer, BrokerRuntime):  # a broker without GET_BROKER_HA_STATUS: its own max offset only
        return SlaveView(addr, broker_id, None, answer.commitlog_max_offset, None, None, None, None)
    c = answer.client
    if c is None:
        return SlaveView(addr, broker_id, None, None, None, None, None, None,
                         error="answers as a master, not as a slave")
    return SlaveView(addr, broker_id, c.master_addr, c.max_offset, c.transfer_bytes_per_s, c.last_read_ms,
                     c.last_write_ms, c.activated, close_reason=c.close_reason)


def _group(t: _Target, series: list[tuple[float, HAStatus | MQClientError]],
           runtime: BrokerRuntime | MQClientError | None, config: dict[str, str] | MQClientError | None,
           slaves: list[SlaveView], window: float, source: str,
           unanswered: dict[str, UnreachableError]) -> ReplicationGroup:
    """One group from the master's samples, its runtime and config answers and the slaves' views; `unanswered`
    the group's slaves that did not answer, by address. A slave overdue at its master (silent past two heartbeat
    intervals) is in sync, at a speed and caught up in a time nobody knows, and named as a node the read missed."""
    last = series[-1][1] if series else None
    missed = [Unreachable(t.name, t.master, reason_of(last))] if isinstance(last, UnreachableError) else []
    reasons = {a: reason_of(exc) for a, exc in unanswered.items()}
    error = None if t.master else "no master registered"
    if isinstance(last, MQClientError):
        error = str(last)
    status = last if isinstance(last, HAStatus) else None
    avg = runtime.average_message_size if isinstance(runtime, BrokerRuntime) else None
    config = config if isinstance(config, dict) else {}
    fallbehind = int(config.get("haSlaveFallbehindMax") or DEFAULT_FALLBEHIND_MAX)
    conns = status.slaves if status is not None else []
    rows = []
    for ci, si in pair_slaves([(c.addr, c.ack_offset) for c in conns],
                              [(v.broker_addr, v.max_offset) for v in slaves]):
        view = slaves[si] if si is not None else None
        if ci is None:  # registered, yet no connection of the master's: known not in sync when the master said so
            not_connected = False if status is not None and source == HA_STATUS else None
            rows.append(SlaveReplication(None, None, None, None, None, None, not_connected, None, None, [], view))
            continue
        c = conns[ci]
        mine = [(round(at, 3), conn) for at, answer in series if isinstance(answer, HAStatus)
                for conn in answer.slaves if conn.addr == c.addr]
        samples = [(at, conn.diff_bytes) for at, conn in mine if conn.diff_bytes is not None]
        speed, in_sync = c.transfer_bytes_per_s, c.in_sync
        if source == RUNTIME_INFO:  # what the master would say, from the offsets sampled over the window
            speed = offset_speed([(at, conn.ack_offset) for at, conn in mine if conn.ack_offset is not None])
            in_sync = None if c.diff_bytes is None else c.diff_bytes < fallbehind
        catch_up = c.catch_up(speed)
        if c.overdue:
            addr = view.broker_addr if view is not None else c.addr
            silent = silent_slave(c.silent_ms)
            reasons[addr] = f"{reasons[addr]}; {silent}" if addr in reasons else silent
        rows.append(SlaveReplication(c.addr, c.ack_offset, c.diff_bytes, diff_messages(c.diff_bytes, avg), speed,
                                     catch_up, in_sync, trend_of(samples), c.transfer_from, samples, view,
                                     c.silent_ms, c.overdue))
    missed += [Unreachable(t.name, a, why) for a, why in reasons.items()]
    return ReplicationGroup(t.cluster, t.name, t.master, config.get("brokerRole"),
                            status.commitlog_max_offset if status else None,
                            status.in_sync_slaves if status else None, avg, window, rows, error, source,
                            unreachable=missed)


class HAAdmin(AdminService):
    """Replication per broker group over a window of samples, and the safe-to-stop verdict."""

    def __init__(self, admin: MQAdmin) -> None:
        super().__init__(admin)
        self._lacking: set[str] = set()
        """Masters that answered GET_BROKER_HA_STATUS with REQUEST_CODE_NOT_SUPPORTED."""

    async def master_replication(self, master: str, slaves: list[str]) -> HAStatus:
        """A master's replication: GET_BROKER_HA_STATUS, or, from a master that does not offer it
        (Apache 4.x; remembered for the session), its and its `slaves`' runtime offsets read at once."""
        if master not in self._lacking:
            try:
                return await self.admin.brokers.ha_status(master)
            except NotAvailable:
                self._lacking.add(master)
        first, *rest = await asyncio.gather(self.admin.brokers.broker_runtime_info(master),
                                            *(self.admin._settled(self.admin.brokers.broker_runtime_info(a))
                                              for a in slaves))
        return status_from_offsets(first.commitlog_max_offset,
                                   [(a, r.commitlog_max_offset) for a, r in zip(slaves, rest, strict=True)
                                    if isinstance(r, BrokerRuntime)])

    async def ha_replication(self, *, broker_addr: str | None = None, cluster: str | None = None,
                             broker_name: str | None = None, window: float = 2.0) -> list[ReplicationGroup]:
        """Every group the name servers know (or the one named, the one holding `broker_addr`, a
        cluster's), with each slave's figures and its diff trend over `window` seconds."""
        targets = _targets(await self.admin.cluster_info(), broker_addr, cluster, broker_name)
        sampled = [t for t in targets if t.master]
        masters = [t.master for t in sampled if t.master]
        series: dict[str, list[tuple[float, HAStatus | MQClientError]]] = {m: [] for m in masters}
        loop = asyncio.get_running_loop()
        start = loop.time()
        while sampled:
            at = loop.time() - start
            answers = await asyncio.gather(*(self.admin._settled(self.master_replication(t.master or "",
                                                                                          list(t.slaves.values())))
                                             for t in sampled))
            for master, answer in zip(masters, answers, strict=True):
                series[master].append((at, answer))
            left = window - (loop.time() - start)
            if left <= 0:
                break
            await asyncio.sleep(min(SAMPLE_INTERVAL_S, left))
        slaves = [(addr, bid, t.master in self._lacking) for t in targets for bid, addr in t.slaves.items()]
        brokers = self.admin.brokers
        extra = await asyncio.gather(
            *(self.admin._settled(brokers.broker_runtime_info(m)) for m in masters),
            *(self.admin._settled(brokers.broker_config(m)) for m in masters),
            *(self.admin._settled(brokers.broker_runtime_info(a) if runtime else brokers.ha_status(a))
              for a, _, runtime in slaves))
        runtime = dict(zip(masters, extra[:len(masters)], strict=True))
        config = dict(zip(masters, extra[len(masters):2 * len(masters)], strict=True))
        answers = dict(zip((a for a, _, _ in slaves), extra[2 * len(masters):], strict=True))
        views = {a: _slave_view(a, bid, answers[a]) for a, bid, _ in slaves}
        groups = [_group(t, series.get(t.master, []) if t.master else [], runtime.get(t.master or ""),
                         config.get(t.master or ""), [views[a] for a in t.slaves.values()], window,
                         RUNTIME_INFO if t.master in self._lacking else HA_STATUS,
                         {a: e for a in t.slaves.values() if isinstance(e := answers[a], UnreachableError)})
                  for t in targets]
        states = await asyncio.gather(*(self._controller_state(g.broker_name or "", config.get(g.master_addr or ""))
                                        for g in groups))
        return [dataclasses.replace(g, controller=state) if state else g for g, state in zip(groups, states,
                                                                                              strict=True)]

    async def _controller_state(self, broker_name: str, config: dict[str, str] | MQClientError | None,
                                ) -> ControllerState | None:
        """The group's state at its controllers, when its master's config says controller mode; the controllers
        that did not answer named."""
        if not isinstance(config, dict) or config.get("enableControllerMode", "").lower() != "true":
            return None
        addrs = parse_namesrv_list(config.get("controllerAddr", ""))
        if not addrs:
            return ControllerState([], None, None, [], None, error="controllerAddr is empty")
        try:
            sets = await self.admin.controllers.broker_sets(addrs, [broker_name])
        except ControllersUnreachableError as exc:
            return ControllerState(addrs, None, None, [], None, error=str(exc), unreachable=exc.missed)
        except MQClientError as exc:
            return ControllerState(addrs, None, None, [], None, error=str(exc))
        if not sets:
            return ControllerState(addrs, None, None, [], None, error="the controllers do not know this group")
        b = sets[0]
        return ControllerState(addrs, b.master_broker_id, b.master_epoch, b.sync_state_set, b.sync_state_set_epoch,
                               in_sync_addrs=[r.address for r in b.replicas if r.in_sync])

    async def controller_view(self, master_addr: str, broker_name: str) -> ControllerView | None:
        """A controller-mode group for `mq top`: its state at the controllers, their leader, its elections
        (None where the controllers keep no history); None when the master is not in controller mode."""
        config = await self.admin._settled(self.admin.brokers.broker_config(master_addr))
        state = await self._controller_state(broker_name, config)
        if state is None or state.error is not None:
            return None if state is None else ControllerView(state, None, None)
        leader, history = await asyncio.gather(self.admin._settled(self.admin.controllers.leader(state.controllers)),
                                               self.admin._settled(self.admin.controllers.elections(
                                                   state.controllers, broker_name)))
        return ControllerView(state, leader if isinstance(leader, str) else None,
                              history if isinstance(history, list) else None)

    async def ha_ready(self, broker_name: str, *, max_diff: int = DEFAULT_MAX_DIFF,
                       max_catchup_s: float = DEFAULT_MAX_CATCHUP_S, window: float = 2.0) -> HAReadiness:
        """Is it safe to stop this group's master now? safe / not safe with reasons, or unknown when the
        name servers or the master cannot be asked; UnknownTargetError for a name nobody knows."""
        try:
            (group,) = await self.ha_replication(broker_name=broker_name, window=window)
        except UnreachableError as exc:
            return HAReadiness(broker_name, UNKNOWN, [Check("name servers reachable", False, str(exc))],
                               max_diff, max_catchup_s, None)
        return assess(group, max_diff=max_diff, max_catchup_s=max_catchup_s)
