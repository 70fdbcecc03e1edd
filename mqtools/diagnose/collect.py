"""What the judges read, through the admin API: samples of a group, or of a broker's nodes, over a window.

Each sample asks concurrently for the group's consume stats (every broker's offsets for its queues, the
retry queue among them), its connections, each member's running info (relayed by a broker to the member)
and the size of its dead-letter queue. A figure that cannot be read is None in the sample, so the judge
can say which one it missed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mqtools.client.admin.base import NO_MASTER
from mqtools.client.admin.models.groups import ConsumerProgress, ConsumerRunningInfo, GroupConnections
from mqtools.client.errors import (
    ConsumerNotOnlineError,
    MQClientError,
    TopicNotExistError,
    UnknownTargetError,
    settled,
)
from mqtools.common.mqversion import version_desc
from mqtools.common.presentation import Unreachable, sets_missed
from mqtools.common.topics import dlq_topic, is_retry_topic
from mqtools.diagnose.broker import BrokerDiagnosis
from mqtools.diagnose.broker import judge as judge_broker
from mqtools.diagnose.broker import unknown as broker_unknown
from mqtools.diagnose.group import (
    DEFAULTS,
    GroupDiagnosis,
    GroupSample,
    HeldQueue,
    Member,
    PopSample,
    QueueSample,
    Thresholds,
    judge,
    unknown,
)
from mqtools.remoting.bodies import MessageQueue

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.brokers import BrokerRuntime
    from mqtools.client.admin.models.groups import ClientConnection

#: Samples per window: its two ends and the middle, so a rebalance inside the window is seen.
SAMPLES = 3


def _member(conn: ClientConnection, info: ConsumerRunningInfo | MQClientError) -> Member:
    """The member as its running info describes it."""
    if isinstance(info, MQClientError):
        return Member(conn.client_id, version_desc(conn.version))
    held = {mq: HeldQueue(pq.locked, pq.last_consume_ms, pq.cached) for mq, pq in info.process_queues.items()}
    held.update({mq: HeldQueue() for mq in info.queues if mq not in held})
    return Member(conn.client_id, version_desc(conn.version), info.orderly, held)


async def _dlq_size(admin: MQAdmin, group: str) -> int | None:
    try:
        bounds = await admin.queue_offsets.queue_bounds(dlq_topic(group))
    except TopicNotExistError:
        return 0  # no message was ever moved there
    except MQClientError:
        return None
    return sum(high for _low, high in bounds.values())


@dataclass(frozen=True, slots=True)
class GroupReading:
    """What one read of a group returned, each answer or its error: a sample for the judge is made of it,
    and `mq top`'s group view shows the same answers, so a drilled-into group is read once a round."""

    at: float
    progress: ConsumerProgress | MQClientError
    connections: GroupConnections | MQClientError
    infos: list[ConsumerRunningInfo | MQClientError]
    """Each connection's running info, in the connections' order."""
    dlq: int | None = None
    hidden: dict[MessageQueue, QueueSample] = field(default_factory=dict)
    """Queues of topics some member subscribes to that the consume stats leave out (read for a sample)."""
    grpc: list[Member] | None = field(default_factory=list)
    """The group's gRPC clients on the proxies asked (they pop, holding no queue; the brokers never see them);
    None when a proxy asked did not answer."""
    hidden_unreachable: tuple[Unreachable, ...] = ()
    """Sets whose queues of those topics are not in `hidden`: their committed offsets could not be read."""

    def sample(self) -> GroupSample:
        queues = {} if isinstance(self.progress, MQClientError) else {
            q.queue: QueueSample(q.broker_offset, q.consumer_offset, q.last_timestamp_ms, q.source)
            for q in self.progress.queues}
        read = () if isinstance(self.progress, MQClientError) else self.progress.unreachable
        lost = tuple(sets_missed([read, self.hidden_unreachable]))
        members: list[Member] | None
        if isinstance(self.connections, ConsumerNotOnlineError):
            members = []
        elif isinstance(self.connections, MQClientError):
            members = None
        else:
            members = [_member(c, info) for c, info in zip(self.connections.connections, self.infos, strict=True)]
        if members is not None:  # nobody at the brokers and a proxy that did not answer: not known
            members = None if self.grpc is None and not members else members + (self.grpc or [])
        pop = None
        if not isinstance(self.progress, MQClientError) and self.progress.pop is not None and self.progress.pop.popped:
            p = self.progress.pop
            pop = PopSample(p.inflight, p.revive_due, p.revived, p.complete)
        return GroupSample(self.at, queues | self.hidden, members, self.dlq, lost, pop)


async def _grpc_members(admin: MQAdmin, group: str, proxies: Sequence[str]) -> list[Member] | None:
    """The group's gRPC clients on `proxies`; None when one of them did not answer."""
    found = await asyncio.gather(*(settled(admin.proxies.consumers(p, group)) for p in proxies))
    if any(isinstance(f, MQClientError) for f in found):
        return None
    return [Member(c.client_id, c.version) for clients in found for c in clients]  # type: ignore[union-attr]


async def read_group(admin: MQAdmin, group: str, *, for_sample: bool = True,
                     clock: Callable[[], float] = time.monotonic, proxies: Sequence[str] = ()) -> GroupReading:
    """The group's consume stats, connections and each member's running info, and its gRPC clients on `proxies`;
    `for_sample` adds what only the judge needs (the dead-letter queue's size, the queues the consume stats
    leave out)."""
    at = clock()
    dlq_size = _dlq_size(admin, group) if for_sample else asyncio.sleep(0, None)
    progress, conns, dlq, grpc = await asyncio.gather(
        settled(admin.groups.consumer_progress(group)), settled(admin.groups.consumer_connections(group)), dlq_size,
        _grpc_members(admin, group, proxies) if proxies else asyncio.sleep(0, []))
    if isinstance(conns, MQClientError):
        return GroupReading(at, progress, conns, [], dlq, grpc=grpc)
    infos = list(await asyncio.gather(*(settled(admin.groups.consumer_running_info(group, c.client_id))
                                        for c in conns.connections)))
    hidden: dict[MessageQueue, QueueSample] = {}
    missed: list[Unreachable] = []
    if for_sample:
        # a topic some member subscribes to that the consume stats leave out: the brokers keep the
        # subscriptions of the latest heartbeat only, so members that subscribe differently hide each other's
        stats = set() if isinstance(progress, MQClientError) else {q.queue.topic for q in progress.queues}
        subscribed = {t for info in infos if not isinstance(info, MQClientError) for t in info.subscriptions}
        for topic in sorted({t for t in subscribed if not is_retry_topic(t)} - stats):
            queues, not_read = await _topic_queues(admin, group, topic)
            hidden.update(queues)
            missed += not_read
    return GroupReading(at, progress, conns, infos, dlq, hidden, grpc, tuple(missed))


async def sample_group(admin: MQAdmin, group: str, clock: Callable[[], float] = time.monotonic,
                       proxies: Sequence[str] = ()) -> GroupSample:
    return (await read_group(admin, group, clock=clock, proxies=proxies)).sample()


async def _topic_queues(admin: MQAdmin, group: str, topic: str) -> tuple[dict[MessageQueue, QueueSample],
                                                                           list[Unreachable]]:
    """The topic's queues with the group's offsets committed on each set's master, and the sets left out: one
    with no master registered, or every set when a master did not answer or a set's queues could not be read
    (each is read together). A queue without its committed offset would count as a backlog of the whole queue."""
    bounds, committed = await asyncio.gather(settled(admin.queue_offsets.queue_bounds(topic)),
                                             settled(admin.offsets.committed_offsets(group, topic)))
    if isinstance(bounds, TopicNotExistError):
        return {}, []  # no broker serves it: nothing waits there
    if isinstance(bounds, MQClientError):
        return {}, await _sets_of(admin, topic, f"the queues of {topic}: {bounds}")
    sets = sorted({mq.broker_name for mq in bounds})
    if isinstance(committed, MQClientError):
        return {}, [Unreachable(name, None, f"the group's offsets of {topic}: {committed}") for name in sets]
    read = {mq.broker_name for mq in committed}
    missed = [Unreachable(name, None, f"{NO_MASTER}: the group's offsets of {topic} are its master's")
              for name in sets if name not in read]
    return {mq: QueueSample(high, committed.get(mq), None) for mq, (_low, high) in bounds.items()
            if mq.broker_name in read}, missed


async def _sets_of(admin: MQAdmin, topic: str, reason: str) -> list[Unreachable]:
    """The topic's sets, named as not read for `reason`; the name servers when its route cannot be read either."""
    route = await settled(admin.topics.topic_route(topic))
    if isinstance(route, MQClientError):
        return [Unreachable(None, None, f"{reason} (its route: {route})")]
    return [Unreachable(name, None, reason) for name in sorted({qd.broker_name for qd in route.queue_datas})]


async def diagnose_group(admin: MQAdmin, group: str, window: float, thresholds: Thresholds = DEFAULTS, *,
                         clock: Callable[[], float] = time.monotonic,
                         sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                         proxies: Sequence[str] = ()) -> GroupDiagnosis:
    """SAMPLES samples spread over `window` seconds, then the verdict; the group's gRPC clients on `proxies`
    count as members (the brokers never see them)."""
    samples: list[GroupSample] = []
    for i in range(SAMPLES):
        if i:
            await sleep(max(0.0, samples[0].at + window * i / (SAMPLES - 1) - clock()))
        reading = await read_group(admin, group, clock=clock, proxies=proxies)
        samples.append(reading.sample())
    if not samples[-1].queues:  # why, from the last reading's consume stats (not read again: a hung set costs a timeout)
        progress, lost = reading.progress, samples[-1].unreachable
        if isinstance(progress, MQClientError):
            why = str(progress)
        elif lost:
            why = "could not read " + "; ".join(str(u) for u in lost)
        else:
            why = "no broker holds offsets of it"
        return unknown(group, samples[-1].at - samples[0].at, f"the group's consume stats: {why}", lost)
    return judge(group, samples, thresholds)


async def diagnose_broker(admin: MQAdmin, broker: str, window: float, *,
                          clock: Callable[[], float] = time.monotonic,
                          sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> list[BrokerDiagnosis]:
    """Each node of `broker` (a broker name: its master and slaves; or one address): SAMPLES runtime samples
    over `window` seconds and its config, judged."""
    info = await admin.cluster_info()
    nodes = [(name, addr) for name, data in info.broker_addr_table.items()
             for _bid, addr in sorted(data.broker_addrs.items()) if broker in (name, addr)]
    if not nodes:
        raise UnknownTargetError(f"no broker named {broker} (nor at that address) in the cluster")
    began = clock()
    samples: dict[str, list[BrokerRuntime]] = {addr: [] for _, addr in nodes}
    why: dict[str, MQClientError] = {}  # the last failure of each node's reads
    for i in range(SAMPLES):
        if i:
            await sleep(max(0.0, began + window * i / (SAMPLES - 1) - clock()))
        answers = await asyncio.gather(*(settled(admin.brokers.broker_runtime_info(addr)) for _, addr in nodes))
        for (_, addr), answer in zip(nodes, answers, strict=True):
            if isinstance(answer, MQClientError):
                why[addr] = answer
            else:
                samples[addr].append(answer)
    configs = await asyncio.gather(*(settled(admin.brokers.broker_config(addr)) for _, addr in nodes))
    out = []
    for (name, addr), config in zip(nodes, configs, strict=True):
        if not samples[addr]:
            out.append(broker_unknown(name, addr, clock() - began, "its runtime info (GET_BROKER_RUNTIME_INFO) "
                                                                   f"did not answer: {why[addr]}"))
            continue
        out.append(judge_broker(name, addr, samples[addr], None if isinstance(config, MQClientError) else config,
                                clock() - began))
    return out
