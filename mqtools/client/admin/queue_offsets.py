"""Queue offsets of a topic: each queue's min and max, and the offset of a time, from any node of its broker.

What a reader planning offset ranges needs (Spark's data source, `mq spark-load`): per queue, where it
starts, where it ends now, and where a point in time falls. A broker whose master is down answers
from its slave (same consume-queue offsets), so planning survives a master failure.
"""

from __future__ import annotations

import asyncio

from mqtools.client.admin.base import unreachable
from mqtools.client.admin.models import queue_key
from mqtools.client.admin.topics import TopicAdmin
from mqtools.client.client_api import queue_offset
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import RequestCode


class QueueOffsetAdmin(TopicAdmin):
    """Min/max offsets and offset-by-time per readable queue of a topic."""

    async def topic_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of a topic, sorted by broker name and queue id; TopicNotExistError if none."""
        route = await self._route(topic)
        return sorted(route.subscribe, key=queue_key)

    async def queue_bounds(self, topic: str) -> dict[MessageQueue, tuple[int, int]]:
        """queue -> (min offset, max offset), the max being the offset the next message will get."""
        queues = await self.topic_queues(topic)

        async def bounds(mq: MessageQueue) -> tuple[int, int]:
            with unreachable():
                return (await queue_offset(self.instance, mq, RequestCode.GET_MIN_OFFSET),
                        await queue_offset(self.instance, mq, RequestCode.GET_MAX_OFFSET))

        return dict(zip(queues, await asyncio.gather(*(bounds(mq) for mq in queues)), strict=True))

    async def offsets_for_time(self, topic: str, timestamp_ms: int) -> dict[MessageQueue, int]:
        """queue -> offset of the first message stored at or after `timestamp_ms` (the max offset if none)."""
        queues = await self.topic_queues(topic)

        async def search(mq: MessageQueue) -> int:
            with unreachable():
                return await queue_offset(self.instance, mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                                          timestamp=timestamp_ms)

        return dict(zip(queues, await asyncio.gather(*(search(mq) for mq in queues)), strict=True))
