"""Watching the cluster while a drill runs: the name servers' route, the target group's replication and, in
controller mode, its elections.

Two loops on their own admin session (short timeouts, so a stopped broker delays nothing else): the
topic's route every quarter second (when the name servers drop the dead master, by the channel close
or the 120 s expiry, and when it is back) and the master's HA status every half second (slave in
sync, lost, in sync again); in controller mode the group's master and epoch, and the controller leader,
every tenth of a second. Only changes become history events. Once, a second after the fault, the toolkit's
own reads (toolkit_truth.py) are recorded for the toolkitTruth criterion.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from mqtools.client.admin import MQAdmin
from mqtools.client.errors import MQClientError
from mqtools.common.security import ClientSecurity
from mqtools.drills.history import History
from mqtools.drills.scenarios import Node, Target
from mqtools.drills.toolkit_truth import READ_DELAY, READ_EVENT, READ_TIMEOUT, read_toolkit

ROUTE_POLL = 0.25
HA_POLL = 0.5
CONTROLLER_POLL = 0.1
MONITOR_TIMEOUT = 1.0


class Monitor:
    def __init__(self, namesrv: str, topic: str, target: Target, history: History, clock: Callable[[], float],
                 security: ClientSecurity | None = None, truth_group: str | None = None) -> None:
        self.namesrv = namesrv
        self.security = security
        self.topic = topic
        self.truth_group = truth_group
        """The drill's group, when the toolkit's reads during the fault are to be judged (toolkitTruth)."""
        self.target = target
        self.history = history
        self.clock = clock
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        # the loops time the recovery: every poll asks, even a broker whose last answer timed out
        async with MQAdmin(self.namesrv, timeout=MONITOR_TIMEOUT, security=self.security, silent_for=0) as admin:
            await asyncio.gather(self._route_loop(admin), self._ha_loop(admin), self._controller_loop(admin),
                                 self._toolkit_read())

    async def _toolkit_read(self) -> None:
        """Once, READ_DELAY after the fault: the reads an operator runs, on an admin session of their own."""
        if self.truth_group is None:
            return
        while self.history.first_event("fault") is None:
            await asyncio.sleep(ROUTE_POLL)
        await asyncio.sleep(READ_DELAY)
        async with MQAdmin(self.namesrv, timeout=READ_TIMEOUT, security=self.security) as admin:
            started = self.clock()
            figures = await read_toolkit(admin, self.topic, self.truth_group, self.target.broker_name)
            ended = self.clock()
        self.history.event(started, READ_EVENT, f"topic status, group progress, ha status read in {ended - started:.2f}s",
                           started=round(started, 4), ended=round(ended, 4), **figures)

    async def _controller_loop(self, admin: MQAdmin) -> None:
        """Controller mode: the group's master and epoch as the controller leader holds them, and who leads."""
        addrs = [n.addr for n in self.target.controllers]
        if not addrs:
            return
        names = {n.addr: n.name for n in self.target.controllers}
        last: tuple[int | None, int] | None = None
        leader: str | None = None
        while True:
            try:
                now_leader = await admin.controllers.leader(addrs)
                sets = await admin.controllers.broker_sets([now_leader], [self.target.broker_name])
            except MQClientError:
                now_leader, sets = None, []
            if now_leader is not None and leader is not None and now_leader != leader:
                self.history.event(self.clock(), "controller-leader",
                                   f"{names.get(now_leader, now_leader)} leads the controllers", addr=now_leader)
            leader = now_leader or leader
            if sets:
                bset = sets[0]
                state = (bset.master_broker_id, bset.master_epoch)
                if last is not None and state != last:
                    who = "no master" if bset.master_broker_id is None else \
                        f"broker {bset.master_broker_id} ({bset.master_address})"
                    self.history.event(self.clock(), "master-elected",
                                       f"{who} master of {self.target.broker_name}, epoch {bset.master_epoch}",
                                       masterId=bset.master_broker_id, masterAddr=bset.master_address,
                                       epoch=bset.master_epoch)
                last = state
            await asyncio.sleep(CONTROLLER_POLL)

    async def _route_loop(self, admin: MQAdmin) -> None:
        nodes = [(n, kind) for n, kind in ((self.target.master, "master"), (self.target.slave, "slave")) if n]
        present: dict[str, bool | None] = {kind: None for _, kind in nodes}
        named: str | None = None  # the last address the route gave as the set's master
        while True:
            try:
                route = await admin.topics.topic_route(self.topic)
                sets = [b for b in route.broker_datas if b.broker_name == self.target.broker_name]
            except MQClientError:
                sets = None
            if sets is not None:
                addrs = {a for b in sets for a in b.broker_addrs.values()}
                for node, kind in nodes:
                    self._route_change(node, kind, node.addr in addrs, present)
                master = sets[0].master_addr() if sets else None
                if master is not None and named is not None and master != named:  # a failover clients follow
                    self.history.event(self.clock(), "route-master",
                                       f"the route names {master} master of {self.target.broker_name}", addr=master)
                named = master or named
            await asyncio.sleep(ROUTE_POLL)

    def _route_change(self, node: Node, kind: str, now: bool, present: dict[str, bool | None]) -> None:
        before = present[kind]
        present[kind] = now
        if before is None or before == now:
            return
        if now:
            self.history.event(self.clock(), f"{kind}-in-route", f"{node.name} back in the route of {self.topic}")
        else:
            self.history.event(self.clock(), f"{kind}-left-route",
                               f"the name servers dropped {node.name} ({node.addr}) from the route")

    async def _ha_loop(self, admin: MQAdmin) -> None:
        master = self.target.master
        if master is None or self.target.slave is None:
            return
        in_sync: bool | None = None
        while True:
            try:
                status = await admin.brokers.ha_status(master.addr)
                now = any(s.in_sync for s in status.slaves)
                why = "" if now else "the master has no in-sync slave"
            except MQClientError as exc:
                now, why = False, f"{master.name} does not answer ({type(exc).__name__})"
            if in_sync is not None and now != in_sync:
                if now:
                    self.history.event(self.clock(), "slave-in-sync",
                                       f"{self.target.slave.name} in sync with {master.name} again")
                else:
                    self.history.event(self.clock(), "slave-out-of-sync", why)
            in_sync = now
            await asyncio.sleep(HA_POLL)
