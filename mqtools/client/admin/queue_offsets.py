"""Queue offsets of a topic: each queue's min and max, and the offset of a time, from any node of its broker.

What a reader planning offset ranges needs (Spark's data source, `mq spark-load`): per queue, where it
starts, where it ends now, and where a point in time falls. A broker whose master is down answers
from its slave (same consume-queue offsets), so planning survives a master failure.
"""

from __future__ import annotations

import asyncio

from mqtools.client.admin.base import AdminService
from mqtools.client.admin.models.parse import queue_key
from mqtools.client.errors import MQClientError, UnreachableError
from mqtools.client.route import TopicRoute
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.headers import OffsetResponseHeader, QueueRequestHeader, SearchOffsetRequestHeader


class QueueOffsetAdmin(AdminService):
    """Min/max offsets and offset-by-time per readable queue of a topic."""

    async def topic_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of a topic, sorted by broker name and queue id; TopicNotExistError if none."""
        route = await self.admin._route(topic)
        return sorted(route.subscribe, key=queue_key)

    async def queue_bounds(self, topic: str, *, readable_only: bool = False) -> dict[MessageQueue, tuple[int, int]]:
        """queue -> (min offset, max offset), the max being the offset the next message will get. UnreachableError
        when no node of a queue's broker answers; with `readable_only` such queues are left out instead (a reader
        that knows where it stands in them keeps that, as a stream does across a broker's outage)."""
        route = await self.admin._route(topic)
        queues = sorted(route.subscribe, key=queue_key)

        async def bounds(mq: MessageQueue) -> tuple[int, int]:
            return (await self._any_node(route, mq, RequestCode.GET_MIN_OFFSET),
                    await self._any_node(route, mq, RequestCode.GET_MAX_OFFSET))

        found = await asyncio.gather(*(bounds(mq) for mq in queues), return_exceptions=readable_only)
        out: dict[MessageQueue, tuple[int, int]] = {}
        for mq, b in zip(queues, found, strict=True):
            if isinstance(b, UnreachableError):  # readable_only: no node of its broker answered
                continue
            if isinstance(b, BaseException):
                raise b
            out[mq] = b
        return out

    async def offsets_for_time(self, topic: str, timestamp_ms: int) -> dict[MessageQueue, int]:
        """queue -> offset of the first message stored at or after `timestamp_ms` (the max offset if none)."""
        route = await self.admin._route(topic)
        queues = sorted(route.subscribe, key=queue_key)

        async def search(mq: MessageQueue) -> int:
            return await self._any_node(route, mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, timestamp_ms)

        return dict(zip(queues, await asyncio.gather(*(search(mq) for mq in queues)), strict=True))

    async def _any_node(self, route: TopicRoute, mq: MessageQueue, code: RequestCode,
                        timestamp_ms: int | None = None) -> int:
        """Ask the broker's master, then its slaves in id order: a master that is down but still in the
        route (the name server has not noticed yet) must not stop a reader's planning."""
        addrs = [a for _, a in sorted(route.broker_addrs.get(mq.broker_name, {}).items())]
        if not addrs:
            raise MQClientError(f"broker {mq.broker_name} has no node in the route of {mq.topic}")
        failure: UnreachableError | None = None
        for addr in addrs:
            try:
                return await self.offset_at(addr, mq, code, timestamp_ms)
            except UnreachableError as exc:
                failure = exc
        raise UnreachableError(f"no node of broker {mq.broker_name} answered: {failure}")

    async def offset_at(self, addr: str, mq: MessageQueue, code: RequestCode, timestamp_ms: int | None = None) -> int:
        """GET_MIN_OFFSET, GET_MAX_OFFSET or (with `timestamp_ms`) SEARCH_OFFSET_BY_TIMESTAMP of a queue, asked of
        one node of its set; through the session, so a node that timed out is not asked again for a while."""
        if timestamp_ms is None:
            ext = QueueRequestHeader(mq.topic, mq.queue_id).to_ext()
        else:
            ext = SearchOffsetRequestHeader(mq.topic, mq.queue_id, timestamp_ms).to_ext()
        resp = await self.admin.call(addr, code, ext)
        return OffsetResponseHeader.from_ext(resp.ext_fields).offset
