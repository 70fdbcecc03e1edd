"""The drills `mq admin drill run` knows: what each does to the cluster, what it predicts, how it is judged.

A scenario is a coroutine over a `FaultContext` (the runner's): it injects the fault at the moment the
runner calls it, heals when the scenario says so, and records what it did as history events. The
context does the real work (signals to local processes, or the operator's --fault-cmd/--heal-cmd),
so a scenario reads as its runbook.
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable, Collection
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

from mqtools.cluster import netns
from mqtools.common.errors import UsageError
from mqtools.common.presentation import Column, View, renders

CLASSIC, CONTROLLER = "classic", "controller"
BOTH = frozenset({CLASSIC, CONTROLLER})
#: Default ceiling on the outage a client sees (OpenChaos's RTO).
DEFAULT_MAX_RTO = 10.0
#: restart-master's default downtime: longer than a consumer's 5 s offset persist interval, so the group
#: commits to the slave while the master is away and the returning master's offsets are put to the test.
RESTART_DOWNTIME = 8.0


@dataclass(frozen=True, slots=True)
class Criteria:
    """What a drill must meet to PASS; None leaves a figure unjudged (it is still reported)."""

    max_rto: float | None = DEFAULT_MAX_RTO
    max_lost: int | None = 0
    loss_explained: bool = False
    """Lost messages are allowed when the slave's offset at the fault explains every one (ASYNC_MASTER)."""
    max_duplicates: int | None = None
    max_failed: int | None = None
    max_redelivered: int | None = None
    max_regression: int | None = None
    max_order_violations: int | None = None
    max_group_rto: float | None = None
    """Controller mode: seconds from the fault to the first send the target group acknowledges."""
    split_brain: bool = False
    """Judge that no two brokers of the target group acknowledged writes at the same time."""
    lost_send_ok_only: bool = False
    """Count as lost only SEND_OK messages never consumed: a master cut off from its group answers
    FLUSH_SLAVE_TIMEOUT (stored, not replicated), and cuts those when it comes back as a slave."""
    toolkit_truth: bool = True
    """Judge what `topic status`, `group progress` and `ha status` said during the fault against the history
    (toolkit_truth.py). Histories written before the criterion existed leave it unjudged."""

    def to_json(self) -> dict[str, Any]:
        return {_camel(k): v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Criteria:
        names = {_camel(k): k for k in cls.__dataclass_fields__}
        return cls(**{"toolkit_truth": False, **{names[k]: v for k, v in raw.items() if k in names}})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


@dataclass(frozen=True, slots=True)
class Node:
    """One process of the cluster as a drill addresses it: its name (local clusters) and address."""

    name: str
    addr: str
    role: str


@dataclass(frozen=True, slots=True)
class Target:
    """The broker group a drill is about (`--target`), and the name server kill-namesrv and pause-namesrv take."""

    broker_name: str
    master: Node | None
    slave: Node | None
    send_mode: str | None
    """The master's brokerRole: SYNC_MASTER or ASYNC_MASTER."""
    namesrv: Node | None
    controllers: tuple[Node, ...] = ()
    """Controller mode: the group's controllers (its brokers' controllerAddr); empty otherwise."""
    proxies: tuple[Node, ...] = ()
    """The cluster's gRPC proxies (local clusters: the state dir's), in the order the proxied load's clients try
    them; empty when it has none."""

    @property
    def controller_mode(self) -> bool:
        return bool(self.controllers)

    def to_json(self) -> dict[str, Any]:
        def node(n: Node | None) -> dict[str, str] | None:
            return None if n is None else {"name": n.name, "addr": n.addr, "role": n.role}

        return {"brokerName": self.broker_name, "master": node(self.master), "slave": node(self.slave),
                "sendMode": self.send_mode, "namesrv": node(self.namesrv),
                "controllers": [node(n) for n in self.controllers], "proxies": [node(n) for n in self.proxies]}


class FaultContext(Protocol):
    """What a scenario may do; the runner implements it for local clusters and operator commands."""

    target: Target
    fault_for: float

    def event(self, name: str, detail: str = "", **data: Any) -> None: ...
    async def fault(self, node: Node, sig: int) -> None:
        """The fault: `sig` to a local process, or the operator's --fault-cmd."""
    async def heal(self, node: Node, how: str) -> None:
        """`cont` (SIGCONT) or `start`; the operator's --heal-cmd for remote clusters."""
    async def stop_gracefully(self, node: Node) -> bool:
        """Stop `node` and wait until it no longer answers; False (aborted) when it still does."""
    async def sleep(self, seconds: float) -> None: ...
    async def record_slave_offset(self) -> None: ...
    async def record_offsets_at_return(self) -> None: ...
    async def wait_answering(self, node: Node) -> bool:
        """Until a started node answers (the operator's --heal-cmd may return before it serves)."""
    async def wipe_write_perm(self) -> None: ...
    async def add_write_perm(self) -> None: ...
    async def wait_producers_left(self) -> bool: ...
    async def wait_ha_ready(self) -> bool: ...
    async def wait_in_route(self, node: Node) -> bool: ...
    async def kill_producers(self) -> None: ...
    async def restart_producers(self) -> None: ...
    async def partition(self, node: Node) -> None:
        """Cut `node` off from every other process; the clients still reach it."""
    async def throttle(self, node: Node) -> None:
        """Slow `node`'s link both ways (delay, and loss past the queue)."""
    async def cut(self, node: Node) -> None:
        """partition() again, as a step of a fault already under way (no new fault event)."""
    async def controller_leader(self) -> Node:
        """The controller that leads now (controller mode)."""
    async def wait_in_sync_state_set(self, node: Node) -> bool:
        """Until `node` is back in its group's SyncStateSet (controller mode)."""


class ScenarioError(UsageError):
    """The cluster cannot run this scenario (no slave, a single name server); one line for the user."""


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    summary: str
    expected: str
    needs: str
    """"master", "slave", "namesrv", "proxy", "controller" or "controller-master": what must exist for the drill to
    make sense (the last two: a controller-mode group, and for the second one with a master and a slave)."""
    inject: Callable[[FaultContext], Awaitable[None]]
    criteria: Criteria
    async_criteria: Criteria | None = None
    """Used instead when the target master is ASYNC_MASTER (loss explained by the slave's offset)."""
    fault_for: float = 5.0
    """Default --fault-for: the pause, or the downtime before a restart."""
    transactional: bool = False
    """The load is transactional producer processes (mqtools.drills.txn_load) instead of plain producers."""
    controller_criteria: Criteria | None = None
    """Used instead when the target group is in controller mode (a new master is elected)."""
    modes: frozenset[str] = frozenset({CLASSIC})
    """The clusters the scenario is made for: classic master/slave, controller mode, or both."""
    netns: bool = False
    """It partitions processes: a fresh preset cluster for it runs in network namespaces."""
    proxied: bool = False
    """The load reaches the cluster through its gRPC proxies (mqtools.drills.proxy_load); a fresh preset cluster
    for it gets PROXIES of them."""

    def criteria_for(self, send_mode: str | None, controller_mode: bool = False) -> Criteria:
        if controller_mode and self.controller_criteria is not None:
            return self.controller_criteria
        return self.async_criteria if self.async_criteria and send_mode == "ASYNC_MASTER" else self.criteria


def _need(node: Node | None, what: str) -> Node:
    if node is None:
        raise ScenarioError(f"the target has no {what}")
    return node


async def kill_master(ctx: FaultContext) -> None:
    await ctx.fault(_need(ctx.target.master, "master"), signal.SIGKILL)
    await ctx.record_slave_offset()


async def pause_master(ctx: FaultContext) -> None:
    master = _need(ctx.target.master, "master")
    await ctx.fault(master, signal.SIGSTOP)
    await ctx.sleep(ctx.fault_for)
    await ctx.heal(master, "cont")
    await ctx.record_offsets_at_return()


async def restart_master(ctx: FaultContext) -> None:
    await _restart(ctx, _need(ctx.target.master, "master"))


async def _restart(ctx: FaultContext, master: Node) -> bool:
    """SIGKILL, --fault-for seconds down, start, and the committed offsets it serves once it answers; whether it
    answered (the drill is aborted when not)."""
    await ctx.fault(master, signal.SIGKILL)
    await ctx.record_slave_offset()
    await ctx.sleep(ctx.fault_for)
    await ctx.heal(master, "start")
    if not await ctx.wait_answering(master):
        return False
    await ctx.record_offsets_at_return()
    return True


async def restart_old_master(ctx: FaultContext) -> None:
    """Controller mode: the killed master returns as a slave, cuts what it alone had, rejoins the set."""
    master = _need(ctx.target.master, "master")
    if await _restart(ctx, master):  # a master that never answered again is not waited for in the set
        await ctx.wait_in_sync_state_set(master)


async def kill_controller_leader(ctx: FaultContext) -> None:
    await ctx.fault(await ctx.controller_leader(), signal.SIGKILL)


async def kill_master_and_controller_leader(ctx: FaultContext) -> None:
    """apache/rocketmq#7689: the master and the controller leader die together."""
    leader = await ctx.controller_leader()
    await ctx.fault(_need(ctx.target.master, "master"), signal.SIGKILL)
    await ctx.fault(leader, signal.SIGKILL)
    await ctx.record_slave_offset()


async def partition_master(ctx: FaultContext) -> None:
    """Controller mode: the master cut off from the controllers, its slaves and the name servers, while the
    clients still reach it; reconnected after --fault-for seconds, when it must follow the new master."""
    master = _need(ctx.target.master, "master")
    await ctx.partition(master)
    await ctx.sleep(ctx.fault_for)
    await ctx.heal(master, "reconnect")
    await ctx.wait_in_sync_state_set(master)


async def partition_controller_leader(ctx: FaultContext) -> None:
    leader = await ctx.controller_leader()
    await ctx.partition(leader)
    await ctx.sleep(ctx.fault_for)
    await ctx.heal(leader, "reconnect")


async def flaky_link(ctx: FaultContext) -> None:
    """For --fault-for seconds the slave's link is slow (a token bucket: delay, and loss past its queue) and
    also cut FLAP_CUT seconds of every FLAP_PERIOD."""
    slave = _need(ctx.target.slave, "slave")
    await ctx.throttle(slave)
    for _ in range(max(1, round(ctx.fault_for / FLAP_PERIOD))):
        await ctx.cut(slave)
        await ctx.sleep(FLAP_CUT)
        await ctx.heal(slave, "reconnect")
        await ctx.sleep(FLAP_PERIOD - FLAP_CUT)
    await ctx.heal(slave, "full-speed")


async def kill_slave(ctx: FaultContext) -> None:
    await ctx.fault(_need(ctx.target.slave, "slave"), signal.SIGKILL)


async def kill_proxy(ctx: FaultContext) -> None:
    """The proxy every client of the proxied load starts on: all of them must move to another."""
    await ctx.fault(_need(ctx.target.proxies[0] if ctx.target.proxies else None, "proxy"), signal.SIGKILL)


async def kill_namesrv(ctx: FaultContext) -> None:
    await ctx.fault(_need(ctx.target.namesrv, "second name server"), signal.SIGKILL)


async def pause_namesrv(ctx: FaultContext) -> None:
    """A hung name server keeps its port open (the kernel still accepts), so only a timeout tells it apart."""
    namesrv = _need(ctx.target.namesrv, "second name server")
    await ctx.fault(namesrv, signal.SIGSTOP)
    await ctx.sleep(ctx.fault_for)
    await ctx.heal(namesrv, "cont")


async def drain_master(ctx: FaultContext) -> None:
    """The maintenance runbook: no new writes, wait for the slave, stop, start, writes back."""
    master = _need(ctx.target.master, "master")
    await ctx.wipe_write_perm()
    try:  # the permission comes back however the runbook ends (a stop or start that failed included)
        if not await ctx.wait_producers_left() or not await ctx.wait_ha_ready() or \
                not await ctx.stop_gracefully(master):
            return
        await ctx.heal(master, "start")
        if await ctx.wait_answering(master):
            await ctx.record_offsets_at_return()
            await ctx.wait_in_route(master)
    finally:
        await ctx.add_write_perm()


async def kill_producer_in_transaction(ctx: FaultContext) -> None:
    """Transactional producers die wherever they are (between a half message and its end included); a new
    generation of the same group starts after --fault-for seconds and answers the brokers' checks."""
    await ctx.kill_producers()
    await ctx.sleep(ctx.fault_for)
    await ctx.restart_producers()


_SYNC_LOSS = Criteria()
_ASYNC_LOSS = replace(_SYNC_LOSS, max_lost=None, loss_explained=True)
#: Controller mode: a new master takes the group's writes within this (issue target: 3 s median, 5 s p99).
CONTROLLER_GROUP_RTO = 5.0
#: When the controller leader dies with the master, the next leader learns of the master's death by heartbeat
#: timeout (controllerHeartBeatTimeoutMills) instead of the channel closing: the presets' 3 s, plus its election.
CONTROLLER_LEADER_LOSS_GROUP_RTO = 10.0
_ELECTED = replace(_SYNC_LOSS, max_group_rto=CONTROLLER_GROUP_RTO, split_brain=True)
#: A partition is found by the heartbeat timeout (the presets' 3 s) instead of a closed connection: the issue's
#: bound is that timeout plus 2 s.
CONTROLLER_PARTITION_GROUP_RTO = 5.0
#: How long a partition drill keeps the process cut off: past the heartbeat timeout and an election.
PARTITION_TIME = 8.0
#: flaky-link: the slave's link is cut FLAP_CUT seconds of every FLAP_PERIOD (shorter than the heartbeat
#: timeout, so no election is due).
FLAP_PERIOD, FLAP_CUT = 1.0, 0.3
#: How long pause-namesrv keeps the name server stopped: past a client's timeout (3 s) and a route refresh after it.
PAUSE_NAMESRV_TIME = 8.0
#: The proxies a fresh preset cluster gets for a proxied drill: the one killed and one to move to.
PROXIES = 2

SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("kill-master", "SIGKILL the target group's master and keep the load going (no restart).",
             "Sends move to the other groups; consumers read the group's messages from its slave. SYNC_MASTER "
             "loses no acknowledged message; ASYNC_MASTER loses at most what the slave had not replicated.",
             "master", kill_master, _SYNC_LOSS, _ASYNC_LOSS, controller_criteria=_ELECTED, modes=BOTH),
    Scenario("pause-master", "SIGSTOP the target group's master for --fault-for seconds, then SIGCONT.",
             "Sends to it stall and move to other groups within the send timeout; nothing is lost; the "
             "slave is back in sync after SIGCONT.",
             "master", pause_master, replace(_SYNC_LOSS, max_order_violations=0)),
    Scenario("restart-master", "SIGKILL the target group's master, start it again after --fault-for seconds.",
             "As kill-master, and the returning master serves no committed offset older than its slave's "
             "(offset regression 0), so no message is delivered twice to the group.",
             "master", restart_master, replace(_SYNC_LOSS, max_regression=0, max_redelivered=0),
             replace(_ASYNC_LOSS, max_regression=0, max_redelivered=0),
             fault_for=RESTART_DOWNTIME, controller_criteria=replace(_ELECTED, max_regression=0)),
    Scenario("kill-slave", "SIGKILL the target group's slave (no restart).",
             "No send fails (a SYNC_MASTER answers SLAVE_NOT_AVAILABLE: stored, not replicated); nothing is "
             "lost; consumers keep reading from the master.",
             "slave", kill_slave, replace(_SYNC_LOSS, max_failed=0, max_order_violations=0)),
    Scenario("kill-namesrv", "SIGKILL one of several name servers (the first).",
             "Clients move to the other name server: no send fails, nothing is lost, order holds.",
             "namesrv", kill_namesrv, replace(_SYNC_LOSS, max_failed=0, max_order_violations=0)),
    Scenario("pause-namesrv", "SIGSTOP one of several name servers (the first) for --fault-for seconds, then "
                              "SIGCONT.",
             "Clients asking it wait one timeout and move to another name server: no send fails, nothing is lost, "
             "order holds.",
             "namesrv", pause_namesrv, replace(_SYNC_LOSS, max_failed=0, max_order_violations=0),
             fault_for=PAUSE_NAMESRV_TIME),
    Scenario("kill-proxy", "SIGKILL the gRPC proxy the clients use (of two or more); producers and consumers reach "
                           "the cluster only through the proxies (RocketMQ 5's gRPC clients).",
             "The clients move to another proxy: no acknowledged message is lost and sends come back within the RTO "
             "bound; what a consumer received through the dead proxy and had not acknowledged comes again after its "
             "invisible time (a duplicate, not a loss).",
             "proxy", kill_proxy, replace(_SYNC_LOSS, toolkit_truth=False), modes=BOTH, proxied=True),
    Scenario("drain-master", "The maintenance runbook: wipe the group's write permission, wait until producers "
                             "have left it and its slave has caught up (ha ready), stop the master gracefully, "
                             "start it, add the permission back.",
             "No send fails and nothing is lost.",
             "master", drain_master, replace(_SYNC_LOSS, max_failed=0)),
    Scenario("kill-producer-in-transaction",
             "Transactional producers (processes) send; SIGKILL them all, start a new generation of the same group "
             "after --fault-for seconds.",
             "Every transaction the dead producers left open is settled by the brokers' checks (the new producers "
             "answer from the dead ones' journals): each committed one is consumed exactly once, no rolled-back "
             "or undecided one ever is, and none stays open.",
             "master", kill_producer_in_transaction, replace(_SYNC_LOSS, max_duplicates=0, toolkit_truth=False),
             fault_for=2.0,
             transactional=True),
    Scenario("restart-old-master", "Controller mode: SIGKILL the target group's master, start it again after "
                                   "--fault-for seconds; it must come back as a slave.",
             "A slave is elected within seconds and takes the writes; the old master returns as a slave, cuts "
             "whatever only it had (never acknowledged), and is back in the SyncStateSet; nothing acknowledged "
             "is lost, no committed offset goes back.",
             "controller-master", restart_old_master, replace(_ELECTED, max_regression=0),
             fault_for=RESTART_DOWNTIME, modes=frozenset({CONTROLLER})),
    Scenario("kill-controller-leader", "Controller mode: SIGKILL the controller that leads (in the preset, the "
                                       "name server it runs in).",
             "The other controllers elect a leader; no broker changes role, no send fails, nothing is lost.",
             "controller", kill_controller_leader, replace(_SYNC_LOSS, max_failed=0, split_brain=True),
             modes=frozenset({CONTROLLER})),
    Scenario("kill-master-and-controller-leader",
             "Controller mode: SIGKILL the target group's master and the controller leader at once "
             "(apache/rocketmq#7689).",
             "The remaining controllers elect a leader, which finds the master dead by its heartbeat timeout and "
             "elects a slave; nothing acknowledged is lost.",
             "controller-master", kill_master_and_controller_leader,
             replace(_ELECTED, max_group_rto=CONTROLLER_LEADER_LOSS_GROUP_RTO), modes=frozenset({CONTROLLER})),
    Scenario("partition-master", "Controller mode: cut the target group's master off from every other process "
                                 "(controllers, slaves, name servers) for --fault-for seconds; clients still reach "
                                 "it. Needs mq cluster up --netns (root).",
             "The controllers elect a slave within their heartbeat timeout; the cut-off master acknowledges "
             "nothing as replicated meanwhile (its sends answer FLUSH_SLAVE_TIMEOUT, or fail), so there is never "
             "a second master taking writes; reconnected, it follows the new master, cutting what only it had. "
             "No SEND_OK message is lost.",
             "controller-master", partition_master,
             replace(_ELECTED, max_group_rto=CONTROLLER_PARTITION_GROUP_RTO, lost_send_ok_only=True),
             fault_for=PARTITION_TIME, modes=frozenset({CONTROLLER}), netns=True),
    Scenario("partition-controller-leader",
             "Controller mode: cut the controller leader (and the name server it runs in) off for --fault-for "
             "seconds. Needs mq cluster up --netns (root).",
             "The other controllers elect a leader; no broker changes role, nothing is lost.",
             "controller", partition_controller_leader, replace(_SYNC_LOSS, split_brain=True),
             fault_for=PARTITION_TIME, modes=frozenset({CONTROLLER}), netns=True),
    Scenario("flaky-link", "Controller mode: for --fault-for seconds the target group's slave has a slow link "
                           f"(tc tbf: {netns.SLOW_LINK_RATE}, a {netns.SLOW_LINK_QUEUE} queue, drops past it) that is also "
                           f"cut {FLAP_CUT} s of every {FLAP_PERIOD} s. "
                           "Needs mq cluster up --netns (root).",
             "Replication goes on through the gaps (TCP resends) or the slave leaves the SyncStateSet; no "
             "election, no acknowledged message lost, one master.",
             "controller-master", flaky_link, replace(_SYNC_LOSS, split_brain=True), fault_for=PARTITION_TIME,
             modes=frozenset({CONTROLLER}), netns=True),
)}


@renders("DrillScenarioList")
def scenario_list_view(scenarios: Collection[Scenario]) -> View:
    """What each scenario does and predicts; the document adds how it is judged and where it runs."""
    rows = [[s.name, s.summary, s.expected] for s in scenarios]
    data = {"scenarios": [{"name": s.name, "summary": s.summary, "expected": s.expected, "needs": s.needs,
                           "faultFor": s.fault_for, "criteria": s.criteria.to_json(),
                           "asyncCriteria": s.async_criteria.to_json() if s.async_criteria else None,
                           "controllerCriteria": s.controller_criteria.to_json() if s.controller_criteria else None,
                           "modes": sorted(s.modes), "netns": s.netns, "proxied": s.proxied}
                          for s in scenarios]}
    return View("DrillScenarioList", [Column("SCENARIO"), Column("WHAT IT DOES"), Column("EXPECTED")], rows, data)
