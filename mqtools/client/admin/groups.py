"""Consumer and producer groups: subscription configs, progress, connections and offset resets."""

from __future__ import annotations

import asyncio

from mqtools.client.admin.base import AdminBase, masters_of, unreachable
from mqtools.client.admin.models import (
    ClientConnection,
    ConsumerProgress,
    GroupConnections,
    OffsetReset,
    QueueProgress,
    producer_connections,
    queue_key,
)
from mqtools.client.client_api import queue_offset
from mqtools.client.errors import MQBrokerError, MQClientError
from mqtools.client.offset_store import RemoteOffsetStore
from mqtools.remoting.bodies import (
    ConsumerConnection,
    ConsumeStats,
    MessageQueue,
    ProducerConnection,
    ResetOffsetBody,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
)
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import (
    ConsumerGroupRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    ResetOffsetRequestHeader,
)

LATEST = -1
"""reset_offset_by_time's timestamp meaning 'skip to the end of every queue' (RocketMQ's wire convention)."""

class GroupAdmin(AdminBase):
    """Consumer and producer groups: subscription configs, progress, connections and offset resets."""

    async def create_subscription_group(self, config: SubscriptionGroupConfig, *, cluster: str | None = None,
                                        broker_addr: str | None = None) -> list[str]:
        addrs = await self._targets(cluster, broker_addr)
        body = config.to_json()
        await self._each(addrs, lambda a: self.call(a, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body))
        return addrs

    async def delete_subscription_group(self, group: str, *, cluster: str | None = None,
                                        broker_addr: str | None = None, clean_offset: bool = False) -> list[str]:
        addrs = await self._targets(cluster, broker_addr)
        ext = DeleteSubscriptionGroupRequestHeader(group, clean_offset).to_ext()
        await self._each(addrs, lambda a: self.call(a, RequestCode.DELETE_SUBSCRIPTIONGROUP, ext))
        return addrs

    async def subscription_groups(self, broker_addr: str) -> dict[str, SubscriptionGroupConfig]:
        resp = await self.call(broker_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        return SubscriptionGroupWrapper.from_json(resp.body or b"{}").subscription_group_table


    async def consumer_progress(self, group: str, topic: str | None = None) -> ConsumerProgress:
        """GET_CONSUME_STATS on every broker of the group: offsets, lag and last consume time per queue."""
        ext = GetConsumeStatsRequestHeader(group, topic).to_ext()
        brokers = await self._group_brokers(group, topic)
        answers = await self._each(list(brokers.values()), lambda a: self.call(
            a, RequestCode.GET_CONSUME_STATS, ext, ok=(ResponseCode.SUCCESS, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                                      ResponseCode.TOPIC_NOT_EXIST)))
        progress = ConsumerProgress(group)
        for resp in answers.values():
            if resp.code != ResponseCode.SUCCESS or not resp.body:
                continue
            stats = ConsumeStats.from_json(resp.body)
            progress.consume_tps = (progress.consume_tps or 0.0) + stats.consume_tps
            progress.queues.extend(
                QueueProgress(mq, w.broker_offset, w.consumer_offset if w.consumer_offset >= 0 else None,
                              w.last_timestamp if w.last_timestamp > 0 else None)
                for mq, w in stats.offset_table.items())
        progress.queues.sort(key=lambda q: queue_key(q.queue))
        return progress

    async def consumer_connections(self, group: str) -> GroupConnections:
        """Who is online in a group, with its subscriptions; ConsumerNotOnlineError when nobody is."""
        ext = ConsumerGroupRequestHeader(group).to_ext()
        last: MQBrokerError | None = None
        for addr in (await self._group_brokers(group, None)).values():
            try:
                resp = await self.call(addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, ext)
            except MQBrokerError as exc:
                last = exc
                continue
            return GroupConnections.from_wire(group, ConsumerConnection.from_json(resp.body or b"{}"))
        raise last or MQClientError(f"no broker to ask about group {group}")

    async def producer_connections(self, group: str, topic: str) -> list[ClientConnection]:
        """Online producers of a group, over every master serving the topic, each client once."""
        ext = GetProducerConnectionListRequestHeader(group).to_ext()
        seen: dict[str, ClientConnection] = {}
        for addr in (await self.route_masters(topic)).values():
            resp = await self.call(addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, ext,
                                   ok=(ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR))
            if resp.code != ResponseCode.SUCCESS or not resp.body:
                continue
            for conn in producer_connections(ProducerConnection.from_json(resp.body)):
                seen.setdefault(conn.client_id, conn)
        return list(seen.values())


    async def reset_offset_by_time(self, group: str, topic: str, timestamp_ms: int, *, force: bool = True,
                                   dry_run: bool = False) -> list[OffsetReset]:
        """Move a group's offsets on a topic to the first message stored at or after `timestamp_ms`.

        The dry run computes old -> new per queue without changing anything; the real run asks every
        master (INVOKE_BROKER_TO_RESET_OFFSET), which also pushes the new offsets to online consumers.
        Without `force` a queue only moves back. LATEST (-1) moves every queue to its end.
        """
        route = await self._route(topic)
        masters = masters_of(route)
        queues = [mq for mq in route.subscribe if mq.broker_name in masters]
        committed = RemoteOffsetStore(self.instance, group)
        with unreachable():
            read = await asyncio.gather(*(committed.read(mq) for mq in queues))
            old = [o if o is not None and o >= 0 else None for o in read]
            before = dict(zip(map(queue_key, queues), old, strict=True))
            if dry_run:
                planned = await asyncio.gather(*(self._planned(mq, timestamp_ms) for mq in queues))
                return [OffsetReset(mq, o, o if (not force and o is not None and o <= n) else n)
                        for mq, o, n in zip(queues, old, planned, strict=True)]
        ext = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp_ms, is_force=force).to_ext()
        answers = await self._each(list(masters.values()),
                                   lambda a: self.call(a, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext))
        rows = [OffsetReset(mq, before.get(queue_key(mq)), new)
                for resp in answers.values()
                for mq, new in ResetOffsetBody.from_json(resp.body or b"{}").offset_table.items()]
        return sorted(rows, key=lambda r: queue_key(r.queue))

    async def _planned(self, mq: MessageQueue, timestamp_ms: int) -> int:
        if timestamp_ms == LATEST:
            return await queue_offset(self.instance, mq, RequestCode.GET_MAX_OFFSET)
        return await queue_offset(self.instance, mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, timestamp=timestamp_ms)
