"""The exporter's polls: jobs on the admin API every interval, each keeping its latest samples.

Every broker node, broker group, topic and consumer group is a job of its own, run concurrently: a slow
broker delays only its own series, and a job still running when the next round starts is left to finish,
not started twice. A scrape reads what the jobs last stored and never waits for one. A job that fails
drops its samples (absent, not stale and not 0) until it succeeds again; an item that left the cluster
(a topic deleted, a broker gone) drops its samples at the next round.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.models.brokers import BrokerRuntime, ClusterSnapshot
from mqtools.client.admin.models.groups import GroupConnections
from mqtools.client.errors import ConsumerNotOnlineError, MQClientError, UnreachableError
from mqtools.common.topics import is_system_topic
from mqtools.exporter.series import (
    Sample,
    broker_up_samples,
    commitlog_diffs,
    group_samples,
    ha_samples,
    heartbeat_samples,
    master_up_samples,
    namesrv_samples,
    node_samples,
    pop_samples,
    proxy_samples,
    runtime_samples,
    stats_sample,
    timer_samples,
    topic_samples,
)

log = logging.getLogger(__name__)
Job = Callable[[], Awaitable[list[Sample]]]


class ExporterPoller:
    """Runs the rounds on the calling loop; `samples()` may be called from any thread (the HTTP server's)."""

    def __init__(self, admin: MQAdmin, interval: float, clock: Callable[[], float] = time.monotonic,
                 proxies: list[str] | None = None) -> None:
        self.admin = admin
        self.interval = interval
        #: proxies' remoting addresses (mq exporter --proxy): their gRPC clients, which no broker knows of
        self.proxies = proxies or []
        self.clock = clock
        self.latest: dict[str, list[Sample]] = {}
        """job key -> the samples of its last successful poll."""
        self.polls: dict[str, tuple[float, bool]] = {}
        """job key -> (seconds its last poll took, whether it succeeded)."""
        self.snapshot: ClusterSnapshot | None = None
        self.runtimes: dict[str, BrokerRuntime] = {}
        self._inflight: dict[str, asyncio.Task[None]] = {}

    async def run(self) -> None:
        """A round every interval, until cancelled."""
        while True:
            began = self.clock()
            await self.round()
            await asyncio.sleep(max(0.0, self.interval - (self.clock() - began)))

    async def round(self) -> None:
        """Start every job of one round (the cluster's shape first: the per-broker jobs depend on it, and take the
        last shape read while the name servers do not answer; the proxies and the name servers' own probe answer
        whether the name servers do or not)."""
        if self.proxies:
            self._launch("proxies", self._proxies)
        self._launch("namesrvs", self._namesrvs)
        began = self.clock()
        try:
            snap = await self.admin.cluster.cluster_snapshot(runtime=False)
        except MQClientError as exc:
            # the shape's own series (heartbeat ages) are not known now; the brokers the last shape named still
            # answer for themselves, and the jobs that need the name servers fail and drop theirs
            log.warning("the name servers did not answer: %s", exc)
            self.polls["cluster"] = (self.clock() - began, False)
            self.latest.pop("cluster", None)
            if self.snapshot is None:
                return
            snap = self.snapshot
        else:
            self.polls["cluster"] = (self.clock() - began, True)
            self.snapshot = snap
            self.latest["cluster"] = heartbeat_samples(snap)
        nodes = {b.addr for b in snap.brokers}
        self._prune("runtime:", nodes)
        self._prune("stats:", {b.addr for b in snap.masters()})
        self._prune("ha:", {b.broker_name for b in snap.masters()})
        self.runtimes = {a: rt for a, rt in self.runtimes.items() if a in nodes}
        cluster_of = {b.broker_name: b.cluster for b in snap.brokers}
        for b in snap.brokers:
            self._launch(f"runtime:{b.addr}", lambda b=b: self._runtime(b.cluster, b.addr, b.is_master))
        for m in snap.masters():
            self._launch(f"stats:{m.addr}", lambda m=m: self._broker_stats(m.cluster, m.addr, m.broker_name))
            if len(snap.group(m.broker_name)) > 1:
                self._launch(f"ha:{m.broker_name}", lambda m=m: self._ha(m.broker_name))
        self._launch("topics", lambda: self._topics(cluster_of))
        self._launch("groups", lambda: self._groups(cluster_of))
        self._launch("timer", lambda: self._timer(cluster_of))

    def samples(self) -> list[Sample]:
        """Everything known now: the jobs' samples, the slaves' commitlog diffs and the polls' own figures."""
        out = [s for samples in list(self.latest.values()) for s in samples]
        if self.snapshot is not None:  # from the runtimes whose last poll succeeded: a failed one is not known
            known = {a: rt for a, rt in list(self.runtimes.items()) if f"runtime:{a}" in self.latest}
            out += commitlog_diffs(self.snapshot, known)
            answered = {key.removeprefix("runtime:"): ok for key, (_, ok) in list(self.polls.items())
                        if key.startswith("runtime:")}
            out += master_up_samples(self.snapshot, answered)
            out += broker_up_samples(self.snapshot, answered)
        for key, (seconds, ok) in list(self.polls.items()):
            out.append(Sample("mq_exporter_poll_seconds", (key,), round(seconds, 6)))
            out.append(Sample("mq_exporter_poll_ok", (key,), 1.0 if ok else 0.0))
        return out

    # -- jobs ------------------------------------------------------------------------------------

    def _launch(self, key: str, job: Job) -> None:
        if key in self._inflight:
            return
        self._inflight[key] = asyncio.get_running_loop().create_task(self._run(key, job), name=f"poll {key}")

    async def _run(self, key: str, job: Job) -> None:
        began = self.clock()
        try:
            self.latest[key] = await job()
            ok = True
        except Exception as exc:  # noqa: BLE001 - any failure of a poll drops its series, and is counted
            log.info("poll %s failed: %s", key, exc)
            self.latest.pop(key, None)
            ok = False
        finally:
            self._inflight.pop(key, None)
        self.polls[key] = (self.clock() - began, ok)

    def _masters(self) -> dict[str, str]:
        """broker name -> master address, as the last round saw them (where stats counters are asked)."""
        return {b.broker_name: b.addr for b in (self.snapshot.masters() if self.snapshot else [])}

    def _prune(self, prefix: str, keep: set[str]) -> None:
        """Forget the jobs under `prefix` whose item is no longer in the cluster."""
        for key in [k for k in list(self.latest) + list(self.polls) if k.startswith(prefix)]:
            if key[len(prefix):] not in keep:
                self.latest.pop(key, None)
                self.polls.pop(key, None)

    async def _runtime(self, cluster: str, addr: str, is_master: bool) -> list[Sample]:
        runtime = await self.admin.brokers.broker_runtime_info(addr)
        self.runtimes[addr] = runtime
        # as rocketmq-exporter: masters only (a slave's figures would add to the dashboard's sums); mq's own figures
        # of the process, every node
        return [*(runtime_samples(cluster, addr, runtime) if is_master else []),
                *node_samples(cluster, addr, runtime)]

    async def _broker_stats(self, cluster: str, addr: str, broker: str) -> list[Sample]:
        put, get = await asyncio.gather(self.admin.brokers.broker_stats(addr, "BROKER_PUT_NUMS", cluster),
                                        self.admin.brokers.broker_stats(addr, "BROKER_GET_NUMS", cluster),
                                        return_exceptions=True)
        # a broker without a counter yet answers an error (its series absent, the poll fine); one that did not answer
        # at all fails the poll, so that mq_exporter_poll_ok says so
        unreachable = [a for a in (put, get) if isinstance(a, UnreachableError)]
        if unreachable:
            raise unreachable[0]
        labels = (cluster, addr, broker)
        return [*_tps("rocketmq_broker_tps", labels, put), *_tps("rocketmq_broker_qps", labels, get)]

    async def _ha(self, broker_name: str) -> list[Sample]:
        return ha_samples(await self.admin.ha.ha_ready(broker_name))

    def _each(self, prefix: str, names: list[str], poll: Callable[[str], Awaitable[list[Sample]]]) -> list[Sample]:
        """One job per topic or group, keyed `prefix` + name, those gone from the cluster forgotten; their
        samples arrive as each job ends, so this step has none of its own."""
        self._prune(prefix, set(names))
        for name in names:
            self._launch(f"{prefix}{name}", lambda n=name: poll(n))
        return []

    async def _topics(self, cluster_of: dict[str, str]) -> list[Sample]:
        topics = [t for t in await self.admin.topics.topic_list() if not is_system_topic(t)]
        return self._each("topic:", topics, lambda t: self._topic(cluster_of, t))

    async def _topic(self, cluster_of: dict[str, str], topic: str) -> list[Sample]:
        status = await self.admin.overview.topic_status(topic)
        out = topic_samples(cluster_of, status)
        brokers = sorted({q.queue.broker_name for q in status.queues})
        return out + await self._minute_tps("rocketmq_producer_tps", "TOPIC_PUT_NUMS", [
            (b, topic, (cluster_of.get(b, ""), b, topic)) for b in brokers])

    async def _groups(self, cluster_of: dict[str, str]) -> list[Sample]:
        listed = await self.admin.groups.group_list()
        groups = {e.group for e in listed.entries if not e.system}
        if listed.doubted():  # a set not read (or read from a slave) may hold groups it did not list: not gone
            groups |= {k.removeprefix("group:") for k in self.polls if k.startswith("group:")}
        return self._each("group:", sorted(groups), lambda g: self._group(cluster_of, g))

    async def _group(self, cluster_of: dict[str, str], group: str) -> list[Sample]:
        progress = await self.admin.groups.consumer_progress(group)
        try:
            conns: GroupConnections | None = await self.admin.groups.consumer_connections(group)
        except ConsumerNotOnlineError:
            conns = None
        latency = await self._store_latency(progress.queues)
        out = group_samples(cluster_of, progress, conns, latency) + pop_samples(progress)
        pairs = sorted({(q.queue.broker_name, q.queue.topic) for q in progress.queues})
        return out + await self._minute_tps("rocketmq_consumer_tps", "GROUP_GET_NUMS", [
            (b, f"{t}@{group}", (cluster_of.get(b, ""), b, t, group)) for b, t in pairs])

    async def _namesrvs(self) -> list[Sample]:
        return namesrv_samples(await self.admin.namesrv_probes.namesrv_probe())

    async def _proxies(self) -> list[Sample]:
        return proxy_samples(await self.admin.proxies.proxy_clients(self.proxies))

    async def _timer(self, cluster_of: dict[str, str]) -> list[Sample]:
        return timer_samples(cluster_of, await self.admin.timer.timer_status())

    async def _minute_tps(self, name: str, stats_name: str,
                          asks: list[tuple[str, str, tuple[str, ...]]]) -> list[Sample]:
        """One VIEW_BROKER_STATS_DATA per (broker name, stats key, labels), to that broker's master, at once."""
        masters = self._masters()
        asks = [a for a in asks if a[0] in masters]
        answers = await asyncio.gather(*(self.admin.brokers.broker_stats(masters[b], stats_name, key) for b, key, _ in asks),
                                       return_exceptions=True)
        return [s for (_, _, labels), answer in zip(asks, answers, strict=True) for s in _tps(name, labels, answer)]

    async def _store_latency(self, queues: list) -> dict[tuple[str, str], int]:
        """Per (broker, topic): the age of the oldest message not yet consumed (0 for a caught-up queue), as
        rocketmq-exporter measures rocketmq_group_get_latency_by_storetime; where some queue's message cannot
        be read (or its offset is not known) the figure is not known and left out."""
        now_ms = int(time.time() * 1000)
        behind = [q for q in queues if q.consumer_offset is not None and q.diff > 0]
        found = await asyncio.gather(*(self.admin.messages.message_at(q.queue, q.consumer_offset) for q in behind),
                                     return_exceptions=True)
        out: dict[tuple[str, str], int] = {}
        unknown: set[tuple[str, str]] = set()
        for q in queues:
            out.setdefault((q.queue.broker_name, q.queue.topic), 0)
            if q.consumer_offset is None and q.broker_offset > 0:
                unknown.add((q.queue.broker_name, q.queue.topic))
        for q, msg in zip(behind, found, strict=True):
            key = (q.queue.broker_name, q.queue.topic)
            if isinstance(msg, BaseException) or msg is None:
                unknown.add(key)
            else:
                out[key] = max(out[key], now_ms - msg.store_timestamp)
        return {key: ms for key, ms in out.items() if key not in unknown}

def _tps(name: str, labels: tuple[str, ...], answer: object) -> list[Sample]:
    """A stats answer's minute TPS as a sample; nothing when the broker did not answer (an Apache broker
    without that counter yet answers an error)."""
    if isinstance(answer, BaseException):
        return []
    return list(stats_sample(name, labels, answer.stats_minute.tps))  # type: ignore[attr-defined]
