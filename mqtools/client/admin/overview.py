"""Views across topics, groups and brokers: a topic's status with its put TPS, every topic with its
consuming groups (mqadmin's topicList -c), and one line per group (consumerProgress without -g).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TypeVar

from mqtools.client.admin.base import AdminService
from mqtools.client.admin.models.groups import ConsumerProgress, GroupConnections, GroupSummary
from mqtools.client.admin.models.topics import QueueStats, TopicStatus, TopicUsage
from mqtools.client.admin.tracking import TOPIC_PUT_NUMS
from mqtools.client.errors import ConsumerNotOnlineError, MQClientError
from mqtools.common.presentation import ReadSource
from mqtools.common.topics import RETRY_GROUP_TOPIC_PREFIX

T = TypeVar("T")
FAN_OUT = 16
"""Topics or groups asked about at once, so a large cluster is not flooded."""


class OverviewAdmin(AdminService):
    """Views across topics, groups and brokers: topic status, topic usage, group summaries."""

    async def topic_status(self, topic: str, cluster: str | None = None) -> TopicStatus:
        """Every queue's min/max offset and last update, each broker set read from its master or else a
        slave (the queue says which), with the topic's put TPS over the last minute; the sets no replica
        answered for are named, and the TPS is then unknown."""
        topics = self.admin.topics
        read = await topics.topic_stats_read(topic, cluster)
        table = topics.stats_table(topic, read)
        answered = [r.addr for r in read.reads.values()]
        tps, _ = await self.admin.tracking.summed(answered, TOPIC_PUT_NUMS, topic)
        source = {name: r.source for name, r in read.reads.items()}
        queues = [QueueStats(mq, o.min_offset, o.max_offset, o.last_update_timestamp or None,
                             source.get(mq.broker_name, ReadSource.MASTER)) for mq, o in table.items()]
        return TopicStatus(topic, queues, None if read.unreachable else tps, read.unreachable)

    async def topic_usage(self) -> list[TopicUsage]:
        """Every topic but retry and DLQ ones, with its clusters and consuming groups (mqadmin's topicList -c)."""
        entries = [e for e in await self.admin.topics.topic_catalogue() if e.kind not in ("retry", "dlq")]
        groups = await _bounded([partial(self.admin._settled, self.admin.topics.topic_consumed_by(e.topic)) for e in entries])
        return [TopicUsage(e.topic, e.clusters, None, []) if isinstance(g, MQClientError) else
                TopicUsage(e.topic, e.clusters, g.groups, g.unreachable) for e, g in zip(entries, groups, strict=True)]

    async def consumer_groups(self) -> list[str]:
        """Groups that ever had a consumer online: those with a %RETRY% topic (how mqadmin finds them)."""
        return [t.removeprefix(RETRY_GROUP_TOPIC_PREFIX) for t in await self.admin.topics.topic_list()
                if t.startswith(RETRY_GROUP_TOPIC_PREFIX)]

    async def group_summaries(self, groups: list[str] | None = None) -> list[GroupSummary]:
        """One line per group (default: every group with a %RETRY% topic): online clients, lowest client
        version, consume type and model, TPS and total lag; most clients first, then most lag.
        SubscriptionGroupNotExistError when a group asked for is on no master."""
        if groups is not None:
            listed = await self.admin.groups.group_list()
            known = {e.group for e in listed.entries}
            missing = [g for g in groups if g not in known]
            if missing:
                raise listed.not_found(missing)
        names = groups if groups is not None else await self.consumer_groups()
        pop_groups = await self.admin.consume_modes.pop_groups()
        found = await _bounded([partial(self._summary, g, pop_groups) for g in names])
        return sorted(found, key=lambda s: (-(s.online or 0), -(s.diff_total or 0), s.group))

    async def _summary(self, group: str, pop_groups: set[str] | None) -> GroupSummary:
        """Each set's consume stats from its master, else a slave: a set no replica answers for is named, its
        lag left out of the total (the whole total unknown when no set answered)."""
        conns, stats = await asyncio.gather(self.admin._settled(self.admin.groups.consumer_connections(group)),
                                            self.admin._settled(self.admin.groups.consumer_progress(group, known=True)))
        read = stats if isinstance(stats, ConsumerProgress) else None
        tps = read.consume_tps if read else None
        diff = read.total_diff if read and (read.queues or not read.unreachable) else None
        missed = list(read.unreachable) if read else []
        pop = None if pop_groups is None else group in pop_groups
        if isinstance(conns, ConsumerNotOnlineError):
            return GroupSummary(group, 0, None, None, None, tps, diff, pop, missed)
        if not isinstance(conns, GroupConnections):
            return GroupSummary(group, None, None, None, None, tps, diff, pop, missed)
        return GroupSummary(group, len(conns.connections), min((c.version for c in conns.connections), default=None),
                            conns.consume_type, conns.message_model, tps, diff, pop, missed)


async def _bounded(jobs: list[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run the jobs FAN_OUT at a time, results in job order."""
    gate = asyncio.Semaphore(FAN_OUT)

    async def one(job: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await job()

    return list(await asyncio.gather(*(one(j) for j in jobs)))
