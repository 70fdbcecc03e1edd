"""One drill end to end: find (or bring up) the cluster, pre-flight, load, fault, settle, restore, history.

The cluster: a local one from its state dir (`--dir`), a fresh one from a preset (brought up in a
temporary dir and taken down afterwards, whatever happens), or one elsewhere (`-n`) whose faults are
the operator's --fault-cmd / --heal-cmd. The drill creates its own topic (on every master and slave, so
slaves can serve it before their metadata sync) and consumer group, and removes them at the end; a
local cluster is restored (paused processes resumed, killed ones started) so the next drill finds it
as this one did. A step that fails midway (a fault not applied, a master that cannot start again) aborts
the drill rather than ending it: the history is kept and its report FAILs saying why, and what the drill
could not restore is named (`leftBroken`). The cleanup holds off further signals (mqtools.drills.interrupts).
The result is a `History`; `report.build` judges it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mqtools import __version__
from mqtools.client.admin import MQAdmin
from mqtools.client.errors import MQBrokerError, MQClientError, UnreachableError
from mqtools.cluster import launcher
from mqtools.cluster import supervisor as sv
from mqtools.cluster.presets import PresetError
from mqtools.common.errors import ToolkitError
from mqtools.common.exitcodes import EXIT_UNREACHABLE, EXIT_USAGE
from mqtools.common.presentation import NA
from mqtools.common.security import ClientSecurity
from mqtools.common.topics import retry_topic
from mqtools.drills.actions import (
    PROBE_TIMEOUT,
    Actions,
    CommandActions,
    FaultNotApplied,
    LocalActions,
    remoting_probe,
)
from mqtools.drills.faults import DrillContext
from mqtools.drills.history import OK, History
from mqtools.drills.interrupts import Deferred
from mqtools.drills.interrupts import run as run_interruptible
from mqtools.drills.load import BALANCE_TIMEOUT, Counters, Load, LoadSchedule, LoadSpec
from mqtools.drills.monitor import Monitor
from mqtools.drills.preflight import UnknownTarget, choose_target, ha_verdict, layout
from mqtools.drills.proxy_load import ProxyLoad
from mqtools.drills.scenarios import PROXIES, SCENARIOS, Criteria, Node, ScenarioError
from mqtools.drills.txn_load import TransactionLoad, check_back
from mqtools.remoting.bodies import SubscriptionGroupConfig, TopicConfig

QUEUES_PER_BROKER = 4
SLAVE_SYNC_WAIT_S = 25.0
"""How long a slave that refuses topic writes may take to sync the drill's topic (Apache's: every 10 s)."""
SETTLE_QUIET = 3.0
SETTLE_CAP = 20.0
TXN_SETTLE_MARGIN = 15.0
"""Seconds past a broker's check period and timeout that open transactions may take to settle."""
TXN_SETTLE_DEFAULT = 90.0
"""The bound on settling when the master's config cannot be read (60 s checks + 6 s timeout, and margin)."""


class DrillError(ToolkitError):
    """The drill could not run; `exit_code` is the CLI's (2 usage, 3 unreachable)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.exit_code = code


@dataclass
class DrillSettings:
    scenario: str
    load: LoadSpec
    state_dir: Path | None = None
    preset: str | None = None
    base_port: int = launcher.DEFAULT_BASE_PORT
    namesrv_count: int | None = None
    overrides: dict[str, str] = field(default_factory=dict)
    namesrv: str | None = None
    fault_cmd: str | None = None
    heal_cmd: str | None = None
    target: str | None = None
    fault_at: float | None = None
    fault_for: float | None = None
    """None: the scenario's default."""
    max_rto: float | None = None
    max_lost: int | None = None
    max_duplicates: int | None = None
    seed: int | None = None
    security: ClientSecurity | None = None
    """For a cluster given by -n: TLS (and credentials) its clients need; a local cluster's come from its state."""
    tls: bool = False
    """With --preset: bring the cluster up with TLS on every port (mq cluster up --tls)."""
    proxies: list[str] = field(default_factory=list)
    """For a cluster given by -n: its gRPC proxies (host:port), in the order the proxied load's clients try them."""
    keep_logs: Path | None = None
    """With --preset: the nodes' logs are copied into this directory once the cluster is down (the cluster's
    temporary directory goes, and a failed drill's answer is often in its brokers' logs)."""


@dataclass(slots=True)
class DrillStatus:
    """What the progress display shows, every quarter second."""

    phase: str
    elapsed: float
    duration: float
    counters: Counters
    last_event: str = ""


Progress = Callable[[DrillStatus], None]


class DrillClock:
    """Seconds since the load started (monotonic): the one time base of a history."""

    def __init__(self) -> None:
        self.base = time.monotonic()

    def zero(self) -> None:
        self.base = time.monotonic()

    def __call__(self) -> float:
        return time.monotonic() - self.base


def run_drill(settings: DrillSettings, progress: Progress = lambda _: None) -> History:
    """Run one drill; DrillError for anything that kept it from running."""
    scenario = SCENARIOS.get(settings.scenario)
    if scenario is None:
        raise DrillError(f"unknown scenario {settings.scenario!r} (known: {', '.join(SCENARIOS)})", EXIT_USAGE)
    if settings.preset is None:
        return _run_on(settings, progress)
    root = Path(tempfile.mkdtemp(prefix="mq-drill-"))
    count = settings.namesrv_count or (2 if scenario.needs == "namesrv" else 1)
    try:
        try:
            launcher.up(launcher.UpOptions(settings.preset, root, count, settings.base_port, settings.overrides,
                                           timeout=60.0, tls=settings.tls, netns=scenario.netns,
                                           proxies=PROXIES if scenario.proxied else 0),
                        progress=lambda line: progress(
                DrillStatus("starting cluster", 0.0, settings.load.duration, Counters(), line)))
        except PresetError as exc:
            raise DrillError(str(exc), EXIT_USAGE) from None
        except sv.LaunchError as exc:
            raise DrillError(f"preset {settings.preset} did not come up: {_launch_reason(exc)}",
                             EXIT_UNREACHABLE) from None
        settings.state_dir = root
        return _run_on(settings, progress, fresh=True)
    finally:
        with Deferred():  # a second Ctrl-C or SIGTERM must not leave the cluster running in a temp dir
            with contextlib.suppress(sv.ClusterStateError):
                launcher.down(root, grace=5.0)
            if settings.keep_logs is not None:
                _keep_logs(root, settings.keep_logs)
            shutil.rmtree(root, ignore_errors=True)


def _keep_logs(root: Path, into: Path) -> None:
    """Copy every node's log (`<node>/<node>.log` under a cluster's directory) into `into`."""
    into.mkdir(parents=True, exist_ok=True)
    for log in root.glob("*/*.log"):
        shutil.copy2(log, into / log.name)


def _launch_reason(exc: sv.LaunchError) -> str:
    """One line from a LaunchError: which process and why, the child's own error leading (the temp dir and its log
    go with the cluster)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0].split(" (log ", 1)[0].rstrip(":") if lines else "launch failed"


def _first_line(exc: BaseException) -> str:
    """An unexpected error as one line: a toolkit error's own words, anything else with its type."""
    text = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    if isinstance(exc, ToolkitError):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _run_on(settings: DrillSettings, progress: Progress, *, fresh: bool = False) -> History:
    namesrv, root, security = _cluster(settings)
    return run_interruptible(_drill(settings, namesrv, root, progress, fresh, security))


def _cluster(settings: DrillSettings) -> tuple[str, Path | None, ClientSecurity | None]:
    """(name servers, local state dir or None, client security) for the drill, from --dir, -n or the
    default state dir."""
    if settings.state_dir is None and settings.namesrv is not None:
        if settings.fault_cmd is None:
            raise DrillError("a cluster given by -n needs --fault-cmd (faults on a local cluster: --dir or --preset)",
                             EXIT_USAGE)
        return settings.namesrv, None, settings.security
    root = (settings.state_dir or launcher.default_state_dir()).expanduser().resolve()
    try:
        state = sv.load_state(root)
    except sv.StateFileError as exc:
        raise DrillError(str(exc).split("; ", 1)[0], EXIT_USAGE) from None
    if state is None:
        raise DrillError(f"no cluster in {root} (start one with mq cluster up, or give --preset)", EXIT_USAGE)
    return state.namesrv_addr, root, settings.security or state.security()


async def _drill(settings: DrillSettings, namesrv: str, root: Path | None, progress: Progress,
                 fresh: bool, security: ClientSecurity | None) -> History:
    scenario = SCENARIOS[settings.scenario]
    if scenario.proxied and settings.load.keys:
        # the proxied load's clients send unordered (no message groups): the report says keys 0, not what was asked
        settings = replace(settings, load=replace(settings.load, keys=0))
    spec = settings.load
    seed = settings.seed if settings.seed is not None else random.randrange(1 << 31)
    run_id = f"{random.Random(seed).randrange(16 ** 8):08x}"
    topic, group = f"MQ_DRILL_{run_id}", f"MQ_DRILL_CG_{run_id}"
    state = sv.load_state(root) if root is not None else None
    names = {p.addr: p.name for p in state.procs} if state is not None else {}
    if state is not None and state.controller_addr:  # controller presets: controller n{i} runs in namesrv-{i}
        hosts = [p.name for p in state.procs if p.kind == "namesrv"]
        names.update(zip(state.controller_addr.split(";"), hosts, strict=False))
    history = History()
    clock = DrillClock()
    async with MQAdmin(namesrv, timeout=3.0, security=security) as admin, \
            MQAdmin(namesrv, timeout=PROBE_TIMEOUT, security=security) as probing:
        try:
            view = await layout(admin, names)
            view["proxies"] = [{"name": p.name, "addr": p.addr} for p in state.procs if p.kind == "proxy"] \
                if state is not None else [{"name": a, "addr": a} for a in settings.proxies]
            target = choose_target(view, settings.target, scenario.needs)
        except UnreachableError as exc:
            raise DrillError(f"cluster unreachable: {exc}", EXIT_UNREACHABLE) from None
        except (UnknownTarget, ScenarioError) as exc:
            raise DrillError(str(exc), EXIT_USAGE) from None
        except MQClientError as exc:
            raise DrillError(f"cluster unreachable: {exc}", EXIT_UNREACHABLE) from None
        preflight = await ha_verdict(admin, target)
        actions: Actions = LocalActions(root) if root is not None and settings.fault_cmd is None else \
            CommandActions(settings.fault_cmd or "", settings.heal_cmd, remoting_probe(probing))
        fault_at = settings.fault_at if settings.fault_at is not None else round(spec.duration / 3, 3)
        history.meta = _meta(settings, scenario.criteria_for(target.send_mode, target.controller_mode), view,
                             target.to_json(), preflight,
                             topic, group, run_id, seed, fault_at, root, fresh)
        await _create(admin, view, topic, group)
        txn = TransactionLoad(namesrv, topic, f"{group}_TX", spec, run_id, clock.base,
                              Path(tempfile.mkdtemp(prefix="mq-drill-txn-")), security) if scenario.transactional \
            else None
        brokers_by_addr = {b["addr"]: b["brokerName"] for b in view["brokers"]}
        load: Load | ProxyLoad = \
            ProxyLoad([p.addr for p in target.proxies], topic, group, spec, history, clock, brokers_by_addr, run_id,
                      security) if scenario.proxied else \
            Load(namesrv, topic, group, spec if txn is None else replace(spec, producers=0), history, clock,
                 brokers_by_addr, run_id, security)
        ctx = DrillContext(admin, actions, target, history, clock, topic=topic, group=group,
                           fault_for=history.meta["settings"]["faultFor"], poll_interval=spec.poll_interval)
        ctx.txn, ctx.txn_send_for = txn, max(2.0, spec.duration / 3)
        truth = history.meta["criteria"].get("toolkitTruth")
        monitor = Monitor(namesrv, topic, target, history, clock, security, truth_group=group if truth else None)
        ticker = Ticker(progress, load, history, clock, spec.duration)
        sending: asyncio.Task | None = None
        try:
            balanced = await load.start()
            await load.warm_up([b["brokerName"] for b in view["brokers"] if b["brokerId"] == 0])
            clock.zero()
            monitor.start()
            start = clock()
            history.event(start, "load-start", "consumers balanced" if balanced else
                          f"consumers not balanced after {BALANCE_TIMEOUT:.0f}s: starting anyway")
            ticker.phase = "load"
            if txn is None:
                sending = asyncio.create_task(load.run(start))
                await _inject(ctx, scenario.inject, load, start + fault_at, spec)
                await sending
            else:
                txn.clock_base = clock.base
                await txn.start(spec.duration)
                await _inject(ctx, scenario.inject, load, start + fault_at, spec)
                await _settle_transactions(txn, admin, target.master, history, clock, ticker)
            history.event(clock(), "load-end", f"{load.counters.sent} sends")
            ticker.phase = "consumers catching up"
            await load.settle(SETTLE_QUIET, SETTLE_CAP)
            history.event(clock(), "settled", f"{load.counters.received} deliveries")
        finally:
            with Deferred():  # a second Ctrl-C or SIGTERM must not cut the restore short
                ctx.stop_watching()
                if sending is not None and not sending.done():
                    sending.cancel()
                if isinstance(actions, LocalActions):
                    actions.resume_paused()  # before the clients say goodbye to a broker that cannot answer
                ticker.phase = "stopping clients"
                if txn is not None:
                    await asyncio.to_thread(txn.stop)
                    shutil.rmtree(txn.journals, ignore_errors=True)
                await monitor.stop()
                await load.stop()
                ticker.phase = "restoring the cluster"
                await _restore(actions, history, clock, fresh)
                if not fresh:
                    await _remove(admin, topic, group, view)
                    _left_broken(actions, history, clock)
                await ticker.stop()
        if ctx.aborted:
            history.meta["aborted"] = ctx.aborted
        history.meta["finishedUtc"] = _utc()
    return history


async def _inject(ctx: DrillContext, inject: Any, load: LoadSchedule, fault_at: float, spec: LoadSpec) -> None:
    """At the fault moment, run the scenario; then keep the load going at least a third of the duration."""
    await asyncio.sleep(max(0.0, fault_at - ctx.clock()))
    load.end = math.inf  # the schedule keeps going however long the scenario's steps take
    try:
        await inject(ctx)
        await ctx.observed()  # every fault's watch has its answer
    except (ScenarioError, FaultNotApplied) as exc:
        ctx.abort(str(exc))
    except MQClientError as exc:
        ctx.abort(f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # noqa: BLE001 - a master that cannot start (LaunchError), NetnsError, psutil's races:
        ctx.abort(_first_line(exc))  # an aborted drill with its report and history, not a traceback
    load.end = max(spec.duration, ctx.clock() + max(2.0, spec.duration / 3))


async def _settle_transactions(txn: TransactionLoad, admin: MQAdmin, master: Node | None, history: History,
                               clock: Callable[[], float], ticker: Ticker) -> None:
    """The transactional load's end: its last generation stops sending, the brokers' checks settle what
    the dead generation left open (bounded by the target master's own check period and timeout), and the
    journals become the history's send operations."""
    await txn.sending_done(timeout=txn.spec.duration + 60)
    ticker.phase = "brokers checking open transactions"
    cap = TXN_SETTLE_DEFAULT
    with contextlib.suppress(MQClientError, ValueError):
        config = await admin.brokers.broker_config(master.addr) if master is not None else {}
        cap = (int(config.get("transactionCheckInterval", 60_000)) + int(config.get("transactionTimeOut", 6_000))) \
            / 1000 + TXN_SETTLE_MARGIN
    left = await txn.settle(admin, cap)
    checks = txn.checks()
    history.meta["transactions"] = {"producerGroup": txn.group, "openAtKill": txn.open_at_kill(),
                                    "checkedCommit": checks["commit"], "checkedRollback": checks["rollback"],
                                    "openLeft": left, **check_back(checks["waits"])}
    history.event(clock(), "transactions-settled", f"{NA if left is None else left} transaction(s) left open",
                  open=left)
    ops = txn.ops()
    history.ops.extend(ops)
    ticker.load.expect(op.id for op in ops if op.result == OK)


class Ticker:
    """Feeds the progress display four times a second with the phase, the counters and the last event."""

    def __init__(self, progress: Progress, load: LoadSchedule, history: History, clock: Callable[[], float],
                 duration: float) -> None:
        self.progress = progress
        self.load = load
        self.history = history
        self.clock = clock
        self.duration = duration
        self.phase = "starting clients"
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            end = self.load.end
            total = end if math.isfinite(end) else max(self.duration, self.clock())
            last = self.history.events[-1] if self.history.events else None
            self.progress(DrillStatus(self.phase, max(0.0, self.clock()), total, self.load.counters,
                                      f"{last.name}: {last.detail}" if last else ""))
            await asyncio.sleep(0.25)

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def _create(admin: MQAdmin, view: dict[str, Any], topic: str, group: str) -> None:
    """The drill's topic and group on every master, then on every slave (a slave must serve the topic the
    moment its master dies). A slave that refuses writes (Apache's: "Can't modify topic ... from slave
    broker") gets them from its master's sync, every 10 s there: wait for the topic to show on it. Then
    wait until the route has every master."""
    brokers = sorted(view["brokers"], key=lambda b: b["brokerId"] != 0)
    config = TopicConfig(topic, QUEUES_PER_BROKER, QUEUES_PER_BROKER)
    unsynced: list[str] = []
    try:
        for b in brokers:
            try:
                await admin.topics.create_topic(config, broker_addr=b["addr"])
                await admin.groups.create_subscription_group(SubscriptionGroupConfig(group), broker_addr=b["addr"])
            except MQBrokerError:
                if b["brokerId"] == 0:
                    raise
                unsynced.append(b["addr"])
    except MQClientError as exc:
        raise DrillError(f"cannot create the drill's topic: {exc}", EXIT_UNREACHABLE) from None
    deadline = time.monotonic() + SLAVE_SYNC_WAIT_S
    while unsynced and time.monotonic() < deadline:
        for addr in list(unsynced):
            with contextlib.suppress(MQClientError):
                if topic in await admin.topics.topic_configs(addr):
                    unsynced.remove(addr)
        if unsynced:
            await asyncio.sleep(0.5)
    if unsynced:
        raise DrillError(f"the drill's topic {topic} never reached the slaves {', '.join(unsynced)}", EXIT_UNREACHABLE)
    masters = {b["brokerName"] for b in view["brokers"] if b["brokerId"] == 0}
    deadline = time.monotonic() + 15.0
    while time.monotonic() < deadline:
        with contextlib.suppress(MQClientError):
            route = await admin.topics.topic_route(topic)
            if {q.broker_name for q in route.queue_datas} >= masters:
                return
        await asyncio.sleep(0.1)
    raise DrillError(f"the drill's topic {topic} never appeared in the name servers' route", EXIT_UNREACHABLE)


async def _restore(actions: Actions, history: History, clock: Callable[[], float], fresh: bool) -> None:
    """Put the cluster back as the drill found it (a preset's cluster is taken down instead)."""
    if fresh and isinstance(actions, LocalActions):
        actions.resume_paused()
        return
    try:
        done = await actions.restore()
    except Exception as exc:  # noqa: BLE001 - whatever stopped the restore is reported, and the rest goes on
        history.event(clock(), "restore-failed", _first_line(exc))
        return
    if done:
        history.event(clock(), "restored", "; ".join(done))


def _left_broken(actions: Actions, history: History, clock: Callable[[], float]) -> None:
    """What the drill could not put back (`broker-a left down`): in the history's meta, where the report FAILs on
    it and the CLI names it."""
    try:
        broken = actions.left_broken()
    except Exception as exc:  # noqa: BLE001 - not knowing is said, not raised from a cleanup
        broken = [f"not known whether the cluster was restored ({_first_line(exc)})"]
    if broken:
        history.meta["leftBroken"] = broken
        history.event(clock(), "left-broken", "; ".join(broken))


async def _remove(admin: MQAdmin, topic: str, group: str, view: dict[str, Any]) -> None:
    """Best effort: the drill's topic and group leave the cluster with it."""
    for name in (topic, retry_topic(group)):
        with contextlib.suppress(MQClientError):
            await admin.topics.delete_topic(name)
    for addr in [b["addr"] for b in view["brokers"] if b["brokerId"] == 0]:
        with contextlib.suppress(MQClientError):
            await admin.groups.delete_subscription_group(group, broker_addr=addr, clean_offset=True)


def _utc() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _meta(settings: DrillSettings, defaults: Criteria, view: dict[str, Any], target: dict[str, Any],
          preflight: dict[str, Any], topic: str, group: str, run_id: str, seed: int, fault_at: float,
          root: Path | None, fresh: bool) -> dict[str, Any]:
    criteria = defaults
    overrides = {"max_rto": settings.max_rto, "max_lost": settings.max_lost,
                 "max_duplicates": settings.max_duplicates}
    given = {k: v for k, v in overrides.items() if v is not None}
    if given:
        criteria = replace(criteria, **given, **({"loss_explained": False} if "max_lost" in given else {}))
    return {
        "scenario": settings.scenario, "version": __version__, "startedUtc": _utc(), "runId": run_id, "seed": seed,
        "topic": topic, "group": group, "cluster": view, "target": target, "preflight": preflight,
        "criteria": criteria.to_json(),
        "settings": {**settings.load.to_json(), "faultAt": fault_at,
                     "faultFor": settings.fault_for if settings.fault_for is not None
                     else SCENARIOS[settings.scenario].fault_for,
                     "preset": settings.preset, "stateDir": str(root) if root and not fresh else None,
                     "faultCmd": settings.fault_cmd, "healCmd": settings.heal_cmd},
    }
