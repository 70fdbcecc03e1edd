"""The low-level consumer (RocketMQ's DefaultMQPullConsumer): list queues, pull from an offset, commit offsets.

Nothing runs in the background: the caller chooses the queue and the offset of every pull,
which is what a Spark executor reading a fixed offset range wants.
"""

from __future__ import annotations

from mqtools.client.client_api import ConsumerBase, pull_once
from mqtools.client.instance import ClientInstance
from mqtools.client.offset_store import RemoteOffsetStore
from mqtools.client.subscription import parse_subscription
from mqtools.client.types import PullResult
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.security import ClientSecurity
from mqtools.remoting.bodies import MessageQueue


class PullConsumer(ConsumerBase):
    """`async with PullConsumer("g", namesrv=...) as c: r = await c.pull(mq, "TagA", offset)`."""

    def __init__(self, group: str, *, namesrv: str | list[str] | None = None,
                 instance: ClientInstance | None = None, security: ClientSecurity | None = None) -> None:
        super().__init__(group, namesrv, instance, security)
        self.offsets = RemoteOffsetStore(self.instance, group)

    async def pull(self, mq: MessageQueue, expression: str | None, offset: int, max_nums: int = 32, *,
                   suspend: float = 0.0, decode: bool = True, broker_id: int = MASTER_ID) -> PullResult:
        """One pull from `offset`; `suspend` seconds lets the broker hold it until a message arrives.
        decode=False leaves the stored messages undecoded in the result's `body` (not tag-checked).
        `broker_id` names the node of the set to ask (another one when the route has no such node)."""
        await self._routed(mq)
        sub = parse_subscription(mq.topic, expression)
        return await pull_once(self.instance, self.group, mq, sub, offset, max_nums=max_nums,
                               suspend_ms=int(suspend * 1000), broker_id=broker_id, decode=decode)

    async def fetch_offset(self, mq: MessageQueue) -> int | None:
        await self._routed(mq)
        return await self.offsets.read(mq)

    async def commit_offset(self, mq: MessageQueue, offset: int) -> None:
        await self._routed(mq)
        await self.offsets.commit(mq, offset)

    async def commit_offsets(self, offsets: dict[MessageQueue, int]) -> list[MessageQueue]:
        """Commit many queues as a consumer's round does (RemoteOffsetStore.commit_all, tolerant): the queues that
        could not be committed now are returned."""
        for mq in offsets:
            await self._routed(mq)
        return await self.offsets.commit_all(offsets, tolerant=True)
