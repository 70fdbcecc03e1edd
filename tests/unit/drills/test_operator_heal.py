"""Drills on clusters elsewhere (--fault-cmd/--heal-cmd): an operator's command may return before the process it
starts or stops has done so. restart-master and drain-master read the returning master's committed offsets only
once it answers again, and drain-master starts it only once the stopped one is silent; what a master that never
came back would have served is not read as zeros (Apache 5.5.0's restart-master once read as a regression to 0)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from mqtools.client.admin.models.brokers import BrokerConsumeStats, QueueLag
from mqtools.client.errors import MQClientError
from mqtools.drills import faults
from mqtools.drills.checkers import check_regression
from mqtools.drills.faults import DrillContext
from mqtools.drills.history import History
from mqtools.drills.scenarios import SCENARIOS, Node, Target
from mqtools.remoting.bodies import BrokerData, MessageQueue, QueueData, TopicRouteData

MASTER, SLAVE = Node("m", "127.0.0.1:1", "master"), Node("s", "127.0.0.1:2", "slave")
TOPIC, GROUP = "T", "G"


@dataclass
class Broker:
    """A broker as the drill's admin sees it: up or not, and the offsets it serves."""

    offsets: dict[int, int]
    up: bool = True
    #: Reads that still fail after a start (the JVM has not opened its port yet).
    starting: int = 0


@dataclass
class Brokers:
    """MQAdmin's broker service, over Broker objects by address."""

    by_addr: dict[str, Broker]

    async def broker_consume_stats(self, addr: str) -> BrokerConsumeStats:
        broker = self.by_addr[addr]
        if broker.starting:
            broker.starting -= 1
        if not broker.up or broker.starting:
            raise MQClientError(f"{addr} does not answer")
        return BrokerConsumeStats(addr, 0, [QueueLag(GROUP, MessageQueue(TOPIC, "b", q), o + 10, o, None)
                                            for q, o in broker.offsets.items()])


@dataclass
class Admin:
    brokers: Brokers


@dataclass
class OperatorActions:
    """An operator's commands: they return at once; the start takes `start_reads` reads to show, the stop
    `stop_reads` (a JVM running its shutdown hooks still answers)."""

    by_addr: dict[str, Broker]
    start_reads: int = 5
    stop_reads: int = 3
    done: list[str] = field(default_factory=list)

    async def fault(self, node: Node, sig: int) -> str:
        self.by_addr[node.addr].up = False
        self.done.append(f"fault {node.name}")
        return "ok"

    async def observe(self, node: Node, sig: int) -> str | None:
        return None  # the fault shows at once (the scenarios' own reads see it)

    async def stop(self, node: Node) -> str:
        broker = self.by_addr[node.addr]

        async def later() -> None:
            for _ in range(self.stop_reads):
                await asyncio.sleep(faults.STEADY_POLL)
            broker.up = False

        asyncio.get_running_loop().create_task(later())
        self.done.append(f"stop {node.name}")
        return "ok"

    async def heal(self, node: Node, how: str) -> str:
        broker = self.by_addr[node.addr]
        assert not broker.up, "started while the old process still ran"
        broker.up, broker.starting = True, self.start_reads
        self.done.append(f"{how} {node.name}")
        return "ok"


def context(actions: OperatorActions, admin: Admin) -> tuple[DrillContext, History]:
    history = History()
    target = Target("b", MASTER, SLAVE, "SYNC_MASTER", None)
    loop = asyncio.get_running_loop()
    ctx = DrillContext(admin, actions, target, history, loop.time, topic=TOPIC, group=GROUP,  # type: ignore[arg-type]
                       fault_for=0.0, poll_interval=0.1)
    return ctx, history


def _restart_master(monkeypatch: Any, by_addr: dict[str, Broker]) -> History:
    """restart-master run to its end over `by_addr`, the slave's offset at the fault not taken."""
    monkeypatch.setattr(faults, "STEADY_POLL", 0.001)

    async def run() -> History:
        ctx, history = context(OperatorActions(by_addr), Admin(Brokers(by_addr)))
        monkeypatch.setattr(ctx, "record_slave_offset", _nothing)
        await SCENARIOS["restart-master"].inject(ctx)
        assert ctx.aborted is None
        return history

    return asyncio.run(run())


def test_restart_master_reads_the_returning_masters_offsets_once_it_answers(monkeypatch: Any) -> None:
    history = _restart_master(monkeypatch, {MASTER.addr: Broker({0: 40, 1: 41}), SLAVE.addr: Broker({0: 50, 1: 51})})
    (ev,) = [e for e in history.events if e.name == "offsets-at-return"]
    assert ev.data["master"] == {"0": 40, "1": 41}  # what it serves, not the zeros of a broker not yet up
    regression = check_regression(history)
    assert regression is not None and regression.messages == 20


def test_a_slave_that_does_not_answer_at_the_masters_return_leaves_the_regression_unknown(monkeypatch: Any) -> None:
    """The slave's offsets are the other side of the comparison: not read is not known, not a slave at 0 (which
    counted as no regression at all)."""
    history = _restart_master(monkeypatch, {MASTER.addr: Broker({0: 40, 1: 41}),
                                            SLAVE.addr: Broker({0: 50, 1: 51}, up=False)})
    (ev,) = [e for e in history.events if e.name == "offsets-at-return"]
    assert ev.data == {"master": None, "slave": None} and SLAVE.addr in ev.detail and "not known" in ev.detail
    assert check_regression(history) is None


def test_a_master_that_never_answers_again_aborts_the_drill_instead_of_reading_zeros(monkeypatch: Any) -> None:
    monkeypatch.setattr(faults, "STEADY_POLL", 0.001)
    monkeypatch.setattr(faults, "RETURN_TIMEOUT", 0.05)
    by_addr = {MASTER.addr: Broker({0: 40}), SLAVE.addr: Broker({0: 50})}

    async def run() -> tuple[DrillContext, History]:
        ctx, history = context(OperatorActions(by_addr, start_reads=10**9), Admin(Brokers(by_addr)))
        monkeypatch.setattr(ctx, "record_slave_offset", _nothing)
        await SCENARIOS["restart-master"].inject(ctx)
        return ctx, history

    ctx, history = asyncio.run(run())
    assert ctx.aborted is not None and "did not answer" in ctx.aborted
    assert not [e for e in history.events if e.name == "offsets-at-return"]
    assert check_regression(history) is None  # unknown, never "regressed to 0"


def test_drain_master_starts_the_master_only_once_the_stopped_one_is_silent(monkeypatch: Any) -> None:
    monkeypatch.setattr(faults, "STEADY_POLL", 0.001)
    by_addr = {MASTER.addr: Broker({0: 40}), SLAVE.addr: Broker({0: 40})}
    actions = OperatorActions(by_addr)

    async def run() -> tuple[DrillContext, History]:
        ctx, history = context(actions, Admin(Brokers(by_addr)))
        for step in ("wipe_write_perm", "add_write_perm"):
            monkeypatch.setattr(ctx, step, _nothing)
        for check in ("wait_producers_left", "wait_ha_ready", "wait_in_route"):
            monkeypatch.setattr(ctx, check, _yes)
        await SCENARIOS["drain-master"].inject(ctx)
        return ctx, history

    ctx, history = asyncio.run(run())
    assert ctx.aborted is None
    assert actions.done == ["stop m", "start m"]  # heal asserts the old process was down first
    (ev,) = [e for e in history.events if e.name == "offsets-at-return"]
    assert ev.data["master"] == {"0": 40}


async def _nothing(*_args: Any) -> None:
    return None


async def _yes(*_args: Any) -> bool:
    return True



@dataclass
class Topics:
    """MQAdmin's topic service: the route names `elected` the group's master (None: no master)."""

    elected: str | None
    answers: bool = True

    async def topic_route(self, _topic: str) -> TopicRouteData:
        if not self.answers:
            raise MQClientError("no name server answers")
        masters = {} if self.elected is None else {0: self.elected}
        return TopicRouteData(queue_datas=[QueueData("b", 2, 2)], broker_datas=[BrokerData("C", "b", masters)])


@dataclass
class ElectedAdmin:
    brokers: Brokers
    topics: Topics


def _controller_context(by_addr: dict[str, Broker], brokers: Brokers, topics: Topics) -> tuple[DrillContext, History]:
    """A drill's context on a controller-mode set whose route `topics` gives."""
    history = History()
    target = Target("b", MASTER, SLAVE, "SYNC_MASTER", None, controllers=(Node("c", "127.0.0.1:3", "controller"),))
    ctx = DrillContext(ElectedAdmin(brokers, topics), OperatorActions(by_addr), target,  # type: ignore[arg-type]
                       history, asyncio.get_running_loop().time, topic=TOPIC, group=GROUP, fault_for=0.0,
                       poll_interval=0.1)
    return ctx, history


def _after_election(monkeypatch: Any, commits: int, elected_up: bool = True) -> History:
    """restart-old-master in controller mode: the dead master had {0: 40, 1: 41} at the fault; the elected one has
    its last sync's {0: 30, 1: 41}, and the consumers' commits reach it after `commits` reads of its offsets."""
    monkeypatch.setattr(faults, "STEADY_POLL", 0.001)
    monkeypatch.setattr(faults, "ELECTED_OFFSETS_CATCH_UP", 0.2)
    by_addr = {MASTER.addr: Broker({0: 40, 1: 41}), SLAVE.addr: Broker({0: 30, 1: 41}, up=elected_up)}
    brokers = Brokers(by_addr)
    reads = 0
    served = brokers.broker_consume_stats

    async def consume_stats(addr: str) -> BrokerConsumeStats:
        nonlocal reads
        if addr == SLAVE.addr:
            reads += 1
            if reads > commits:
                by_addr[addr].offsets = {0: 45, 1: 46}
        return await served(addr)

    monkeypatch.setattr(brokers, "broker_consume_stats", consume_stats)

    async def run() -> History:
        ctx, history = _controller_context(by_addr, brokers, Topics(SLAVE.addr))
        monkeypatch.setattr(ctx, "record_slave_offset", _nothing)
        monkeypatch.setattr(ctx, "wait_in_sync_state_set", _yes)
        await SCENARIOS["restart-old-master"].inject(ctx)
        assert ctx.aborted is None
        return history

    return asyncio.run(run())


def test_an_elected_masters_offsets_are_read_once_the_consumers_commits_reach_it(monkeypatch: Any) -> None:
    """A slave made master serves its last sync's offsets until the group commits there: read when they have
    caught up with the dead master's, not at the first read (148 messages of "regression" in one CI run)."""
    history = _after_election(monkeypatch, commits=3)
    (ev,) = [e for e in history.events if e.name == "offsets-at-return"]
    assert ev.data == {"master": {"0": 45, "1": 46}, "slave": {"0": 40, "1": 41}}
    regression = check_regression(history)
    assert regression is not None and regression.messages == 0


def test_an_elected_master_that_never_catches_up_is_a_regression(monkeypatch: Any) -> None:
    history = _after_election(monkeypatch, commits=10**9)
    (ev,) = [e for e in history.events if e.name == "offsets-at-return"]
    assert ev.data["master"] == {"0": 30, "1": 41} and "behind" in ev.detail
    regression = check_regression(history)
    assert regression is not None and (regression.queues, regression.messages) == (1, 10)


def test_an_elected_master_that_does_not_answer_leaves_its_offsets_unknown(monkeypatch: Any) -> None:
    """Not read is not 0: no regression of every message is counted for a master that could not be asked."""
    history = _after_election(monkeypatch, commits=10**9, elected_up=False)
    (ev,) = [e for e in history.events if e.name == "offsets-at-return"]
    assert ev.data == {"master": None, "slave": None} and "not known" in ev.detail
    assert check_regression(history) is None


def _returned_in_controller_mode(monkeypatch: Any, topics: Topics, old_master_up: bool) -> History:
    """The old master's return recorded with nothing taken before the fault: its offsets are read at the return."""
    monkeypatch.setattr(faults, "STEADY_POLL", 0.001)
    monkeypatch.setattr(faults, "ELECTED_OFFSETS_CATCH_UP", 0.01)
    by_addr = {MASTER.addr: Broker({0: 40, 1: 41}, up=old_master_up), SLAVE.addr: Broker({0: 45, 1: 46})}

    async def run() -> History:
        ctx, history = _controller_context(by_addr, Brokers(by_addr), topics)
        await ctx.record_offsets_at_return()
        return history

    return asyncio.run(run())


def test_a_route_that_cannot_be_read_at_the_return_leaves_the_regression_unknown(monkeypatch: Any) -> None:
    """No route is not "no other master to compare with" ({} on both sides, as it was recorded: no regression at all)."""
    history = _returned_in_controller_mode(monkeypatch, Topics(SLAVE.addr, answers=False), old_master_up=True)
    (ev,) = [e for e in history.events if e.name == "offsets-at-return"]
    assert ev.data == {"master": None, "slave": None} and "route" in ev.detail and "not known" in ev.detail
    assert check_regression(history) is None


def test_a_route_without_a_master_at_the_return_leaves_the_regression_unknown(monkeypatch: Any) -> None:
    """No master serves the group's offsets: nothing to read is not nothing behind."""
    history = _returned_in_controller_mode(monkeypatch, Topics(None), old_master_up=True)
    (ev,) = [e for e in history.events if e.name == "offsets-at-return"]
    assert ev.data == {"master": None, "slave": None} and "no master" in ev.detail and "not known" in ev.detail
    assert check_regression(history) is None


def test_an_old_master_that_does_not_answer_leaves_the_regression_unknown(monkeypatch: Any) -> None:
    """What the old master had is the other side of the comparison: not read is not known, not nothing behind."""
    history = _returned_in_controller_mode(monkeypatch, Topics(SLAVE.addr), old_master_up=False)
    (ev,) = [e for e in history.events if e.name == "offsets-at-return"]
    assert ev.data == {"master": None, "slave": None} and MASTER.addr in ev.detail and "not known" in ev.detail
    assert check_regression(history) is None
