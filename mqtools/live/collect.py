"""The jobs of one refresh round, and a runner that keeps a slow one from holding up the rest.

Every job is an MQAdmin call under a key; its outcome is published the moment it is known, so a
broker that answers late only delays its own rows. A job still running when the next round starts is
not started twice: the new round leaves it alone and runs everything else.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.models.brokers import ClusterSnapshot
from mqtools.client.admin.models.groups import (
    ConsumerProgress,
    ConsumerRunningInfo,
    GroupConnections,
    GroupSummary,
)
from mqtools.client.admin.models.topics import TopicStatus
from mqtools.client.errors import MQClientError
from mqtools.diagnose.collect import read_group, sample_group
from mqtools.live.state import Outcome
from mqtools.live.verdicts import GROUP_SAMPLE_EVERY
from mqtools.remoting.bodies import TopicRouteData

#: How often each broker's config is read again (the limits its verdict is held against).
CONFIG_EVERY = 60.0
#: Groups sampled for a verdict each round: the used ones with the largest lag (a sample is four requests).
VERDICT_GROUPS = 50
Publish = Callable[[Outcome], None]
Launch = Callable[[str, Callable[[], Awaitable[Any]]], None]


@dataclass(frozen=True, slots=True)
class Wanted:
    """What a round asks for beyond the brokers, HA and name servers, which every round polls."""

    topics: bool = False
    groups: bool = False
    topic_details: tuple[str, ...] = ()
    group_details: tuple[str, ...] = ()
    proxies: tuple[str, ...] = ()
    """Proxies' remoting addresses whose gRPC clients to read (`mq top --proxy`)."""


@dataclass(frozen=True, slots=True)
class TopicDetail:
    route: TopicRouteData
    status: TopicStatus


@dataclass(frozen=True, slots=True)
class GroupDetail:
    progress: ConsumerProgress
    connections: GroupConnections | None
    """None when nobody is online."""
    holders: dict[tuple[str, str, int], str] = field(default_factory=dict)
    """(topic, broker name, queue id) -> client id holding it, from the clients' running info; empty
    where the clients do not report it (mq's own Python clients do not)."""


def describe(exc: BaseException) -> str:
    """One line for a failed job: the admin error's own message, or the exception's type for anything
    else (a broker answering garbage fails a parser, not the admin API)."""
    if isinstance(exc, MQClientError):
        return str(exc) or type(exc).__name__
    if isinstance(exc, TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class Collector:
    """Runs rounds of jobs on one MQAdmin; `procs` (optional) samples a local cluster's processes."""

    def __init__(self, admin: MQAdmin, publish: Publish, procs: Callable[[], Any] | None = None) -> None:
        self.admin = admin
        self.publish = publish
        self.procs = procs
        self.inflight: set[str] = set()
        self.last_started: dict[str, float] = {}
        """Monotonic time each periodic job (`config:ADDR`, `sample:GROUP`) was last started."""

    async def round(self, wanted: Wanted) -> float:
        """Start every job not already running, wait for the ones this round started (and what they
        start in turn); returns the round's wall time in seconds."""
        began = time.perf_counter()
        tasks: list[asyncio.Task[None]] = []

        def launch(key: str, make: Callable[[], Awaitable[Any]]) -> None:
            if key in self.inflight:
                return
            self.inflight.add(key)
            tasks.append(asyncio.get_running_loop().create_task(self._run(key, make)))

        self._plan(wanted, launch)
        while tasks:
            await tasks.pop(0)
        return time.perf_counter() - began

    def _plan(self, wanted: Wanted, launch: Launch) -> None:
        admin = self.admin
        launch("snapshot", lambda: self._snapshot(launch))
        launch("probe", admin.namesrv_probes.namesrv_probe)
        if self.procs is not None:
            launch("procs", lambda: asyncio.to_thread(self.procs))  # type: ignore[arg-type]
        if wanted.topics:
            launch("topics", admin.topic_views.topic_overview)
        if wanted.groups:
            launch("groups", lambda: self._groups(launch))
        if wanted.proxies:
            launch("proxies", lambda: admin.proxies.proxy_clients(list(wanted.proxies)))
        for topic in wanted.topic_details:
            launch(f"topic:{topic}", lambda t=topic: self.topic_detail(t))
        for group in wanted.group_details:
            if f"group:{group}" not in self.inflight:
                # the drilled-into group's read is also its sample for the verdict when one is due
                due = self._due(f"sample:{group}", GROUP_SAMPLE_EVERY)
                launch(f"group:{group}", lambda g=group, d=due: self.group_detail(g, sample=d))

    def _due(self, key: str, every: float) -> bool:
        """Whether `key` was last started `every` seconds ago or more (and is not running); marks it started."""
        now = time.monotonic()
        if now - self.last_started.get(key, -every) < every or key in self.inflight:
            return False
        self.last_started[key] = now
        return True

    def _every(self, launch: Launch, key: str, every: float, make: Callable[[], Awaitable[Any]]) -> None:
        """Launch `key` when it was last started `every` seconds ago or more."""
        if self._due(key, every):
            launch(key, make)

    def _sample(self, launch: Launch, group: str) -> None:
        """A sample of the group for its verdict (mqtools.live.verdicts), every GROUP_SAMPLE_EVERY."""
        self._every(launch, f"sample:{group}", GROUP_SAMPLE_EVERY, lambda: sample_group(self.admin, group))

    async def _run(self, key: str, make: Callable[[], Awaitable[Any]]) -> None:
        try:
            value, error = await make(), None
        except Exception as exc:  # noqa: BLE001 - every failure of a job is shown in its rows
            value, error = None, describe(exc)
        finally:
            self.inflight.discard(key)
        self.publish(Outcome(key, value, error, time.time(), time.monotonic()))

    async def _snapshot(self, launch: Launch) -> ClusterSnapshot:
        """The name servers' broker table; then each broker's runtime, each master's replication (HA status,
        or its and its slaves' runtime offsets where the master has no HA status) and, in controller mode, its
        group at the controllers, as jobs of their own."""
        snap = await self.admin.cluster.cluster_snapshot(runtime=False)
        for row in snap.brokers:
            launch(f"runtime:{row.addr}", lambda a=row.addr: self.admin.brokers.broker_runtime_info(a))
            self._every(launch, f"config:{row.addr}", CONFIG_EVERY, lambda a=row.addr: self.admin.brokers.broker_config(a))
            if row.is_master:
                slaves = [s.addr for s in snap.brokers if s.broker_name == row.broker_name and not s.is_master]
                launch(f"ha:{row.addr}", lambda a=row.addr, s=slaves: self.admin.ha.master_replication(a, s))
                launch(f"controller:{row.addr}",
                       lambda a=row.addr, n=row.broker_name: self.admin.ha.controller_view(a, n))
        return snap

    async def _groups(self, launch: Launch) -> list[GroupSummary]:
        """Every configured group but the system ones, one line each; then a sample of each of the
        VERDICT_GROUPS used groups with the largest lag, for their verdicts."""
        names = [e.group for e in (await self.admin.groups.group_list()).entries if not e.system]
        summaries = await self.admin.overview.group_summaries(names) if names else []
        used = [s for s in summaries if s.online or s.diff_total]
        for s in sorted(used, key=lambda s: -(s.diff_total or 0))[:VERDICT_GROUPS]:
            self._sample(launch, s.group)
        return summaries

    async def topic_detail(self, topic: str) -> TopicDetail:
        route, status = await asyncio.gather(self.admin.topics.topic_route(topic), self.admin.overview.topic_status(topic))
        return TopicDetail(route, status)

    async def group_detail(self, group: str, *, sample: bool = False) -> GroupDetail:
        """The group's consume stats, connections and who holds which queue; with `sample`, the same read
        is published as the group's sample (`sample:GROUP`) too."""
        reading = await read_group(self.admin, group, for_sample=sample)
        if sample:
            self.publish(Outcome(f"sample:{group}", reading.sample(), None, time.time(), time.monotonic()))
        if isinstance(reading.progress, MQClientError):
            raise reading.progress
        conns = reading.connections
        if not isinstance(conns, GroupConnections):
            return GroupDetail(reading.progress, None)
        holders = {(mq.topic, mq.broker_name, mq.queue_id): info.client_id for info in reading.infos
                   if isinstance(info, ConsumerRunningInfo) for mq in info.queues}
        return GroupDetail(reading.progress, conns, holders)


async def collect_once(admin: MQAdmin, wanted: Wanted, procs: Callable[[], Any] | None = None) -> list[Outcome]:
    """Every outcome of one full round, in the order they finished (`mq top --once`, benchmarks)."""
    outcomes: list[Outcome] = []
    await Collector(admin, outcomes.append, procs).round(wanted)
    return outcomes
