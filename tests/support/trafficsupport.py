"""Traffic for `mq admin` tests on topics, groups and offsets: messages placed on chosen queues, offsets
committed by a real pull consumer, a push consumer kept online while the CLI runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mqtools.client.producer import Producer
from mqtools.client.pull_consumer import PullConsumer
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult
from mqtools.common.message import Message, MessageExt
from mqtools.remoting.bodies import MessageQueue
from support.adminsupport import mq

Placement = dict[tuple[str, int], int]
"""(broker name, queue id) -> how many messages."""


async def send_to(namesrv: str, topic: str, placement: Placement, prefix: str = "m") -> list[str]:
    """Send the given number of messages to each queue, in order; returns the bodies sent."""
    bodies = []
    async with Producer(f"PG_{topic}", namesrv=namesrv) as producer:
        for (broker, queue_id), count in placement.items():
            for i in range(count):
                body = f"{prefix}-{broker}-{queue_id}-{i}"
                await producer.send(Message(topic, body.encode()), queue=MessageQueue(topic, broker, queue_id))
                bodies.append(body)
    return bodies


async def commit(namesrv: str, group: str, topic: str, offsets: Placement) -> None:
    """Consume the way a pull consumer does: pull each queue up to the offset, then commit it."""
    async with PullConsumer(group, namesrv=namesrv) as consumer:
        for (broker, queue_id), offset in offsets.items():
            mq = MessageQueue(topic, broker, queue_id)
            pulled = await consumer.pull(mq, "*", 0, max_nums=offset)
            assert len(pulled.messages) >= offset, (mq, pulled)
            await consumer.commit_offset(mq, offset)


@asynccontextmanager
async def online(namesrv: str, group: str, topic: str, got: list[MessageExt]) -> AsyncIterator[PushConsumer]:
    """A push consumer of the group, from the first offset, collecting into `got` while the block runs."""
    consumer = PushConsumer(group, namesrv=namesrv, rebalance_interval=1.0, persist_interval=1.0,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic).register_listener(lambda msgs: got.extend(msgs) or ConsumeResult.CONSUME_SUCCESS)
    async with consumer:
        yield consumer


async def amq(*args: str, **kwargs: Any) -> Any:
    """`mq` in a thread, so the consumers of the calling test keep running meanwhile."""
    return await asyncio.to_thread(mq, *args, **kwargs)
