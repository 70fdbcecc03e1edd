"""The `FaultContext` scenarios run against: `DrillContext`, which applies each step through the drill's actions
(mqtools.drills.actions: signals to a local cluster's processes, or the operator's --fault-cmd / --heal-cmd), checks
the cluster through MQAdmin, watches that each fault took effect, and records every step as a history event.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mqtools.client.errors import MQClientError
from mqtools.drills.actions import ACTIONS, Actions
from mqtools.drills.history import History
from mqtools.drills.preflight import ha_verdict
from mqtools.drills.scenarios import Node, ScenarioError, Target

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.configs import WritePermChange
    from mqtools.drills.txn_load import TransactionLoad

STEADY_POLL = 0.25
PRODUCERS_QUIET = 1.0
"""Seconds the master's commitlog must stand still before producers count as gone."""
HA_READY_TIMEOUT = 20.0
ROUTE_TIMEOUT = 30.0
#: How long a started master has to answer again: an operator's --heal-cmd may return before the process serves,
#: and Apache's broker JVM takes 10-20 s to (longer on a slow machine).
RETURN_TIMEOUT = 90.0
SYNC_STATE_SET_TIMEOUT = 30.0
#: How long a slave made master may serve the committed offsets of its last metadata sync (taken every 10 s) before
#: the group's consumers commit theirs there (every 5 s, persistConsumerOffsetInterval): two of their rounds. An
#: election's offsets are read once they reach the dead master's, or when this has passed (a regression, then).
ELECTED_OFFSETS_CATCH_UP = 10.0


def _behind(ahead: dict[str, int] | None, served: dict[str, int] | None) -> dict[str, int]:
    """Queue -> how many messages `served`'s committed offset is behind `ahead`'s, for the queues where it is."""
    served = served or {}
    return {q: o - served.get(q, 0) for q, o in (ahead or {}).items() if o > served.get(q, 0)}


class DrillContext:
    """The runner's FaultContext: actions on the cluster, checks through MQAdmin, events into the history."""

    def __init__(self, admin: MQAdmin, actions: Actions, target: Target, history: History,
                 clock: Callable[[], float], *, topic: str, group: str, fault_for: float, poll_interval: float) -> None:
        self.admin = admin
        self.actions = actions
        self.target = target
        self.history = history
        self.clock = clock
        self.topic = topic
        self.group = group
        self.fault_for = fault_for
        self.poll_interval = poll_interval
        self.aborted: str | None = None
        #: The transactional load (kill-producer-in-transaction), and how long a restarted generation sends.
        self.txn: TransactionLoad | None = None
        self.txn_send_for = 0.0
        #: Controller mode: the master's committed offsets just before it was killed.
        self._offsets_before_fault: dict[str, int] | None = None
        #: Node name -> the watch on its last fault (actions.observe), which a heal of it waits for.
        self._watches: dict[str, asyncio.Task[None]] = {}

    def event(self, name: str, detail: str = "", **data: Any) -> None:
        self.history.event(self.clock(), name, detail, **data)

    def _abort(self, why: str, **data: Any) -> bool:
        """The drill stops short of its steps (its report FAILs saying why, the first reason if there are several);
        False, for the step that waited."""
        self.aborted = self.aborted or why
        self.event("aborted", why, **data)
        return False

    def abort(self, why: str) -> None:
        """What the runner records when a step raised: the drill is aborted with `why`."""
        self._abort(why)

    async def fault(self, node: Node, sig: int) -> None:
        if self.target.controller_mode and node == self.target.master:
            self._offsets_before_fault = await self._committed(node.addr)  # what an election must not lose
        detail = await self.actions.fault(node, sig)  # the fault's moment: done (an operator's ssh takes a while)
        self.history.event(self.clock(), "fault", detail, node=node.name, addr=node.addr, signal=signal.Signals(sig).name)
        if sig in ACTIONS:  # watched in the background: the scenario's next steps keep their moments
            self._watches[node.name] = asyncio.create_task(self._watch(node, sig))

    async def _watch(self, node: Node, sig: int) -> None:
        why = await self.actions.observe(node, sig)
        if why is not None:
            self._abort(f"fault not observed: {why}")

    async def observed(self, node: Node | None = None) -> None:
        """Until the watch on `node`'s fault (every fault's, None) has its answer: a heal must not come first."""
        for name in [node.name] if node is not None else list(self._watches):
            task = self._watches.pop(name, None)
            if task is not None:
                await task

    def stop_watching(self) -> None:
        for task in self._watches.values():
            task.cancel()
        self._watches.clear()

    async def heal(self, node: Node, how: str) -> None:
        await self.observed(node)
        detail = await self.actions.heal(node, how)
        self.event("heal", detail, node=node.name, how=how)

    async def cut(self, node: Node) -> None:
        self.event("cut", await self.actions.partition(node), node=node.name)

    async def throttle(self, node: Node) -> None:
        """Slow `node`'s link (delay and loss): the fault of flaky-link."""
        detail = await self.actions.throttle(node)
        self.history.event(self.clock(), "fault", detail, node=node.name, addr=node.addr, signal=None)

    async def partition(self, node: Node) -> None:
        """Cut `node` off from the cluster's other processes (the clients still reach it)."""
        if self.target.controller_mode and node == self.target.master:
            self._offsets_before_fault = await self._committed(node.addr)
        detail = await self.actions.partition(node)
        self.history.event(self.clock(), "fault", detail, node=node.name, addr=node.addr, signal=None)

    async def stop_gracefully(self, node: Node) -> bool:
        """Stop `node` and wait until it no longer answers (an operator's --fault-cmd may return while the process
        still shuts down); False, the drill aborted, when it still answers after RETURN_TIMEOUT."""
        self.event("master-stopping", f"graceful stop of {node.name}")
        self.event("master-stopped", await self.actions.stop(node), node=node.name)
        if await self._until_answering(node, False):
            return True
        return self._abort(f"{node.name} still answered {RETURN_TIMEOUT:.0f}s after its stop")

    async def _until_answering(self, node: Node, answering: bool) -> bool:
        """Until `node` answers (its consume stats, what record_offsets_at_return reads) or, `answering` False, no
        longer does; False when that has not happened within RETURN_TIMEOUT."""
        deadline = self.clock() + RETURN_TIMEOUT
        while (await self._committed(node.addr) is not None) is not answering:
            if self.clock() >= deadline:
                return False
            await asyncio.sleep(STEADY_POLL)
        return True

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def record_slave_offset(self) -> None:
        """The slave's commitlog offset right after its master went away: what replication had reached."""
        slave = self.target.slave
        if slave is None:
            return
        await asyncio.sleep(0.3)  # bytes already on the wire land first
        offset = None
        try:
            status = await self.admin.brokers.ha_status(slave.addr)
            offset = status.client.max_offset if status.client else status.commitlog_max_offset
        except MQClientError as exc:
            self.event("slave-offset", f"{slave.name} did not answer: {exc}", broker=self.target.broker_name,
                       offset=None, role=self.target.send_mode)
            return
        self.event("slave-offset", f"{slave.name} had replicated up to commitlog offset {offset}",
                   broker=self.target.broker_name, offset=offset, role=self.target.send_mode)

    async def _committed(self, addr: str) -> dict[str, int] | None:
        try:
            stats = await self.admin.brokers.broker_consume_stats(addr)
        except MQClientError:
            return None
        return {str(q.queue.queue_id): q.consumer_offset for q in stats.queues
                if q.group == self.group and q.queue.topic == self.topic and q.consumer_offset is not None}

    async def record_offsets_at_return(self) -> None:
        """The committed offsets the returning master serves, next to its slave's (apache/rocketmq#1094). In
        controller mode the returning broker is a slave and the elected one serves the group: its offsets must
        be no older than those the old master had persisted when it died (apache/rocketmq#4771)."""
        master, slave = self.target.master, self.target.slave
        if master is None or slave is None:
            return
        if self.target.controller_mode:
            await self._record_offsets_after_election(master)
            return
        served, newer = await asyncio.gather(self._committed(master.addr), self._committed(slave.addr))
        if served is None or newer is None:
            self._offsets_unread(master.addr if served is None else slave.addr)
            return
        behind = _behind(newer, served)
        detail = (f"{master.name} serves offsets behind {slave.name}'s on {len(behind)} queue(s)" if behind
                  else f"{master.name} serves committed offsets no older than {slave.name}'s")
        self.event("offsets-at-return", detail, master=served, slave=newer)

    async def _record_offsets_after_election(self, old: Node) -> None:
        try:
            route = await self.admin.topics.topic_route(self.topic)
        except MQClientError as exc:
            self._comparison_unknown(f"the route of {self.topic} could not be read ({exc})")
            return
        elected = next((b.broker_addrs.get(0) for b in route.broker_datas
                        if b.broker_name == self.target.broker_name), None)
        if elected is None:  # nothing serves the group's offsets: whether they went back is not known
            self._comparison_unknown(f"the route names no master of {self.target.broker_name}")
            return
        if elected == old.addr:
            self.event("offsets-at-return", f"{old.name} is the master of {self.target.broker_name} again: no "
                       "elected master to compare with", master={}, slave={})
            return
        had = self._offsets_before_fault if self._offsets_before_fault is not None else await self._committed(old.addr)
        start = self.clock()
        while True:
            served = await self._committed(elected)
            behind = _behind(had, served)
            if not behind or self.clock() - start >= ELECTED_OFFSETS_CATCH_UP:
                break
            await asyncio.sleep(STEADY_POLL)
        if served is None or had is None:
            self._offsets_unread(elected if served is None else old.addr)
            return
        waited = f" ({self.clock() - start:.1f}s after the old master answered)"
        detail = (f"the elected master {elected} serves offsets behind what {old.name} had at the fault on "
                  f"{len(behind)} queue(s){waited}" if behind else
                  f"the elected master {elected} serves committed offsets no older than {old.name} had at the "
                  f"fault{waited}")
        self.event("offsets-at-return", detail, master=served, slave=had)

    def _offsets_unread(self, addr: str) -> None:
        """A broker of the comparison (the serving master, or the slave or old master it is held to) did not answer
        for its committed offsets."""
        self._comparison_unknown(f"{addr} did not answer for its committed offsets")

    def _comparison_unknown(self, why: str) -> None:
        """The offsets at a master's return could not be compared: recorded as not known (master None), which the
        regression check reports as unknown, never as offsets of 0 on either side nor as nothing to compare."""
        self.event("offsets-at-return", f"{why}: not known", master=None, slave=None)

    async def wipe_write_perm(self) -> None:
        """drain-master's first step, and its fault: no new writes to the group."""
        at = self.clock()
        change = await self.admin.namesrv.wipe_write_perm(self.target.broker_name)
        self.history.event(at, "fault", f"wiped the write permission of {self.target.broker_name} "
                                        f"({sum(change.topics.values())} topic(s) on {len(change.topics)} name "
                                        f"server(s){_not_on(change)})")

    async def add_write_perm(self) -> None:
        change = await self.admin.namesrv.add_write_perm(self.target.broker_name)
        self.event("perm-added", f"write permission of {self.target.broker_name} back "
                                 f"({sum(change.topics.values())} topic(s){_not_on(change)})")

    async def wait_producers_left(self) -> bool:
        """Until the master's commitlog stops growing for a second (producers refreshed their routes)."""
        master = self.target.master
        assert master is not None
        deadline = self.clock() + self.poll_interval + 15.0
        last, still_since = None, self.clock()
        while self.clock() < deadline:
            try:
                offset = (await self.admin.brokers.broker_runtime_info(master.addr)).commitlog_max_offset
            except MQClientError:
                offset = None
            if offset != last:
                last, still_since = offset, self.clock()
            elif self.clock() - still_since >= PRODUCERS_QUIET:
                self.event("producers-left", f"{master.name}'s commitlog stopped growing at offset {offset}")
                return True
            await asyncio.sleep(STEADY_POLL)
        return self._abort(f"producers still wrote to {master.name} {self.poll_interval + 15:.0f}s after the wipe")

    async def wait_ha_ready(self) -> bool:
        deadline = self.clock() + HA_READY_TIMEOUT
        verdict: dict[str, Any] = {}
        while self.clock() < deadline:
            verdict = await ha_verdict(self.admin, self.target)
            if verdict["verdict"] == "safe":
                self.event("ha-ready", "ha ready: safe", checks=verdict["checks"])
                return True
            await asyncio.sleep(STEADY_POLL)
        failing = "; ".join(c["detail"] for c in verdict.get("checks", []) if c["ok"] is False)
        return self._abort(f"ha ready never said safe within {HA_READY_TIMEOUT:.0f}s ({failing or 'unknown'})",
                           checks=verdict.get("checks", []))

    async def wait_answering(self, node: Node) -> bool:
        """Until the started `node` answers, so nothing is read of it before it serves; the drill is aborted when it
        does not within RETURN_TIMEOUT."""
        if await self._until_answering(node, True):
            return True
        return self._abort(f"{node.name} did not answer within {RETURN_TIMEOUT:.0f}s of its start")

    async def wait_in_route(self, node: Node) -> bool:
        deadline = self.clock() + ROUTE_TIMEOUT
        while self.clock() < deadline:
            try:
                route = await self.admin.topics.topic_route(self.topic)
                if any(node.addr in b.broker_addrs.values() for b in route.broker_datas):
                    return True
            except MQClientError:
                pass
            await asyncio.sleep(STEADY_POLL)
        return False

    async def controller_leader(self) -> Node:
        addrs = [n.addr for n in self.target.controllers]
        if not addrs:
            raise ScenarioError("the target group is not in controller mode")
        try:
            leader = await self.admin.controllers.leader(addrs)
        except MQClientError as exc:
            raise ScenarioError(f"no controller leader: {exc}") from None
        return next((n for n in self.target.controllers if n.addr == leader), Node(leader, leader, "CONTROLLER"))

    async def wait_in_sync_state_set(self, node: Node) -> bool:
        """Until the controllers list `node` (by its address) as an alive member of the SyncStateSet."""
        addrs = [n.addr for n in self.target.controllers]
        deadline = self.clock() + SYNC_STATE_SET_TIMEOUT
        while self.clock() < deadline:
            try:
                sets = await self.admin.controllers.broker_sets(addrs, [self.target.broker_name])
            except MQClientError:
                sets = []
            member = next((r for s in sets for r in s.replicas if r.address == node.addr), None)
            if member is not None and member.in_sync and member.alive:
                self.event("rejoined-sync-state-set", f"{node.name} (broker id {member.broker_id}) is in the "
                                                      "SyncStateSet again", brokerId=member.broker_id)
                return True
            await asyncio.sleep(STEADY_POLL)
        return self._abort(f"{node.name} was not back in the SyncStateSet {SYNC_STATE_SET_TIMEOUT:.0f}s after its "
                           "restart")

    async def kill_producers(self) -> None:
        """SIGKILL every transactional producer process of the drill (the fault is the load's, not the cluster's)."""
        if self.txn is None:
            raise ScenarioError("this drill has no transactional producers")
        pids = self.txn.kill()
        self.history.event(self.clock(), "fault", f"SIGKILL to {len(pids)} transactional producer process(es)",
                           node="producers", addr=None, signal="SIGKILL", pids=pids)

    async def restart_producers(self) -> None:
        """A new generation of the producer group: it sends again and answers what the dead one left open."""
        if self.txn is None:
            raise ScenarioError("this drill has no transactional producers")
        await self.txn.start(self.clock() + self.txn_send_for)
        self.event("heal", f"transactional producers started again (generation {self.txn.generation - 1})",
                   node="producers", how="start")


def _not_on(change: WritePermChange) -> str:
    """The name servers a permission change did not reach, for a drill's history (clients asking them still see the
    old permission)."""
    return f"; not on {', '.join(f'{ns} ({exc})' for ns, exc in change.failed.items())}" if change.failed else ""
