"""Offsets: move a group's committed offsets on a topic (to a time, an offset, by a shift, to either
end of each queue), skip to the end, copy one group's offsets to another.

A time or end-of-queue reset of every queue is the broker's own (INVOKE_BROKER_TO_RESET_OFFSET): it
commits and pushes the new offsets to online consumers at once. Explicit offsets are committed with
UPDATE_CONSUMER_OFFSET and then pushed the same way, asking the broker for a reset that moves nothing
(not forced, to the end: RocketMQ 4 then pushes each queue's committed offset) and naming each queue and its
target (RocketMQ 5's server-side reset then sets exactly that), which works on mq's brokers and Apache
RocketMQ's 4.x and 5.x alike. Every operation can be a dry run: the plan, nothing written.
"""

from __future__ import annotations

import asyncio
import dataclasses

from mqtools.client.admin.base import AdminBase, AdminService, broker_sets, masters_of
from mqtools.client.admin.models.groups import OffsetReset, ResetTarget
from mqtools.client.admin.models.parse import queue_key
from mqtools.client.client_api import queue_offset
from mqtools.client.errors import (
    ConsumerNotOnlineError,
    GroupOffsetNotExistError,
    MQClientError,
    PartialWriteError,
)
from mqtools.client.offset_store import RemoteOffsetStore
from mqtools.client.route import TopicRoute
from mqtools.common.topics import is_dlq_topic, is_retry_topic
from mqtools.remoting.bodies import MessageQueue, ResetOffsetBody
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import (
    OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    ResetOffsetRequestHeader,
)

LATEST = -1
"""reset_offset_by_time's timestamp meaning 'skip to the end of every queue' (RocketMQ's wire convention)."""


class OffsetAdmin(AdminService):
    """Offsets: reset by time, to explicit offsets, by a shift, to either end; skip; clone."""

    async def reset_group_to_latest(self, group: str) -> list[OffsetReset]:
        """Move the group to the end of every queue of every topic it has progress on (its retry and DLQ
        topics aside): `mq top`'s reset action. Every queue moved, old -> new."""
        progress = await self.admin.groups.consumer_progress(group)
        topics = sorted({q.queue.topic for q in progress.queues
                         if not is_retry_topic(q.queue.topic) and not is_dlq_topic(q.queue.topic)})
        return [r for topic in topics for r in await self.reset_offset_by_time(group, topic, LATEST)]

    async def reset_offset_by_time(self, group: str, topic: str, timestamp_ms: int, *, force: bool = True,
                                   dry_run: bool = False, cluster: str | None = None) -> list[OffsetReset]:
        """Move a group's offsets on a topic to the first message stored at or after `timestamp_ms`.

        The dry run computes old -> new per queue without changing anything; the real run asks every
        master (INVOKE_BROKER_TO_RESET_OFFSET), which also pushes the new offsets to online consumers.
        Without `force` a queue only moves back. LATEST (-1) moves every queue to its end. A broker
        that answers CONSUMER_NOT_ONLINE (Apache RocketMQ with nobody online), or that it holds no offset of
        the group (GroupOffsetNotExistError: never online there), gets the offsets committed directly, as
        mqadmin's fallback does. Every master is asked before anything is committed: one that failed the ask
        while none had moved leaves every queue where it was. Where some moved and others did not,
        PartialWriteError names both. `cluster` keeps to the masters `topic_masters` finds through it.
        SubscriptionGroupNotExistError for a group no master knows.
        """
        await self.admin.groups.subscription_group(group)
        route = await self.admin._route(topic)
        masters = self._writable(group, topic, route)
        if cluster is not None:
            masters = {n: a for n, a in (await self.admin.topics.topic_masters(topic, cluster)).items() if n in masters}
        queues = [mq for mq in route.subscribe if mq.broker_name in masters]
        before = await self._committed(group, queues)
        if dry_run:
            return await self._by_time(queues, before, timestamp_ms, force)
        what = f"resetting the offsets of group {group} on topic {topic}"
        ext = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp_ms, is_force=force).to_ext()
        asked = await self.admin.write_each(list(masters), lambda name: self.admin.call(
            masters[name], RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext))
        nobody = [n for n, exc in asked.failed.items() if isinstance(exc, ConsumerNotOnlineError)
                  or isinstance(exc, GroupOffsetNotExistError) and not await self._online_at(group, masters[n])]
        failed = {n: _online_refusal(exc, group) if isinstance(exc, GroupOffsetNotExistError) else exc
                  for n, exc in asked.failed.items() if n not in nobody}
        if failed and not asked.applied:
            raise PartialWriteError(what, [], failed)
        rows: list[OffsetReset] = []
        for answer in asked.applied.values():
            table = ResetOffsetBody.from_json(answer.body or b"{}").offset_table
            rows += [OffsetReset(mq, before.get(mq), new, pushed=True) for mq, new in table.items()]

        async def commit(name: str) -> list[OffsetReset]:
            plan = await self._by_time([mq for mq in queues if mq.broker_name == name], before, timestamp_ms, force)
            await self._commit(group, plan)
            return [dataclasses.replace(r, pushed=False) for r in plan]

        committed = await self.admin.write_each(nobody, commit)
        failed |= committed.failed
        if failed:
            raise PartialWriteError(what, sorted([*asked.applied, *committed.applied]), failed)
        rows += [r for plan in committed.applied.values() for r in plan]
        return sorted(rows, key=lambda r: queue_key(r.queue))

    async def _online_at(self, group: str, master: str) -> bool:
        """Whether `master` has consumers of `group` online. Its "THe consumer group <G> not exist" answer to a reset
        by time means only that a queue of the topic has no committed offset (Apache's Broker2Client says the same):
        with nobody online the offsets are committed directly, with consumers online they would commit over them."""
        try:
            return bool((await self.admin.groups.consumer_connections(group, master)).connections)
        except MQClientError:
            return False

    async def reset_offsets(self, group: str, topic: str, target: ResetTarget, *,
                            dry_run: bool = False) -> list[OffsetReset]:
        """Move a group's committed offsets on a topic (or one queue of it) to `target`, clamped to
        what each queue holds; returns old -> new per queue. A shift leaves out queues the group never
        committed on. SubscriptionGroupNotExistError for a group no master knows."""
        if target.kind in ("time", "latest") and not target.single_queue:
            stamp = LATEST if target.value is None else target.value
            return await self.reset_offset_by_time(group, topic, stamp, dry_run=dry_run)
        await self.admin.groups.subscription_group(group)
        queues = await self._queues(topic, target, group)
        plan = await self._plan(queues, await self._committed(group, queues), target)
        if not plan:
            raise MQClientError(f"group {group} has no committed offset on topic {topic} to shift; "
                                "give an offset, a time, --earliest or --latest instead")
        if not dry_run:
            await self._apply(group, topic, plan)
        return plan

    async def clone_group_offset(self, src_group: str, dest_group: str, topic: str, *,
                                 dry_run: bool = False) -> list[OffsetReset]:
        """Give `dest_group` the committed offsets `src_group` has on a topic (old = dest's before). A
        destination group not yet configured gets the source's subscription config on each master that
        has it, so the new group is known before its first consumer starts."""
        source = await self.admin.groups.subscription_group(src_group)
        queues = await self._queues(topic, None, dest_group)
        src, dest = await asyncio.gather(self._committed(src_group, queues), self._committed(dest_group, queues))
        plan = [OffsetReset(mq, dest.get(mq), offset) for mq, offset in src.items() if offset is not None]
        if not plan:
            raise MQClientError(f"group {src_group} has no committed offset on topic {topic}")
        if not dry_run:
            held = await self.admin.groups.group_configs_at(dest_group, [p.addr for p in source.placements])
            for place in source.placements:
                if held[place.addr] is None:
                    config = dataclasses.replace(place.config, group_name=dest_group)
                    await self.admin.groups.create_subscription_group(config, broker_addr=place.addr)
            await self._apply(dest_group, topic, plan)
        return plan

    async def committed_offsets(self, group: str, topic: str) -> dict[MessageQueue, int | None]:
        """The group's committed offset of each of the topic's queues, asked of each queue's master; None where
        it never committed. Unlike consume stats, whatever topics the broker thinks the group subscribes to."""
        return await self._committed(group, await self._queues(topic, None))

    @staticmethod
    def _writable(group: str, topic: str, route: TopicRoute) -> dict[str, str]:
        """The route's masters, when every set has one: offsets live on masters, and a reset that moved some
        queues and not others would leave the group half moved (NoMasterError names the sets, nothing moves)."""
        sets = broker_sets(route)
        AdminBase.masters_of_all(sets, f"the offsets of group {group} on topic {topic}")
        return masters_of(route)

    async def _queues(self, topic: str, target: ResetTarget | None, group: str | None = None) -> list[MessageQueue]:
        route = await self.admin._route(topic)
        masters = masters_of(route) if group is None else self._writable(group, topic, route)
        queues = [mq for mq in route.subscribe if mq.broker_name in masters]
        if target is None or not target.single_queue:
            return queues
        picked = [mq for mq in queues if (mq.broker_name, mq.queue_id) == (target.broker_name, target.queue_id)]
        if not picked:
            have = ", ".join(f"{mq.broker_name}:{mq.queue_id}" for mq in queues)
            raise MQClientError(f"{target.broker_name}:{target.queue_id} is not a queue of topic {topic} "
                                f"(queues: {have})")
        return picked

    async def _committed(self, group: str, queues: list[MessageQueue]) -> dict[MessageQueue, int | None]:
        """Each queue's committed offset; None where the group never committed (the broker is asked
        not to answer 0 for that, as it does for consumers starting up)."""

        async def read(mq: MessageQueue) -> int | None:
            ext = QueryConsumerOffsetRequestHeader(group, mq.topic, mq.queue_id, set_zero_if_not_found=False).to_ext()
            resp = await self.admin.call(self._master(mq), RequestCode.QUERY_CONSUMER_OFFSET, ext,
                                   ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND))
            offset = OffsetResponseHeader.from_ext(resp.ext_fields).offset if resp.code == ResponseCode.SUCCESS else -1
            return offset if offset >= 0 else None

        return dict(zip(queues, await asyncio.gather(*(read(mq) for mq in queues)), strict=True))

    def _master(self, mq: MessageQueue) -> str:
        addr = self.admin.instance.broker_addr(mq.broker_name)
        if addr is None:
            raise MQClientError(f"broker {mq.broker_name} has no master")
        return addr

    async def _offset(self, mq: MessageQueue, code: RequestCode, **extra: int) -> int:
        return await queue_offset(self.admin.instance, mq, code, **extra)

    async def _by_time(self, queues: list[MessageQueue], before: dict[MessageQueue, int | None], timestamp_ms: int,
                       force: bool) -> list[OffsetReset]:
        async def planned(mq: MessageQueue) -> int:
            if timestamp_ms == LATEST:
                return await self._offset(mq, RequestCode.GET_MAX_OFFSET)
            return await self._offset(mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, timestamp=timestamp_ms)

        targets = await asyncio.gather(*(planned(mq) for mq in queues))
        plan = []
        for mq, new in zip(queues, targets, strict=True):
            old = before[mq]
            plan.append(OffsetReset(mq, old, old if not force and old is not None and old <= new else new))
        return plan

    async def _plan(self, queues: list[MessageQueue], before: dict[MessageQueue, int | None],
                    target: ResetTarget) -> list[OffsetReset]:
        if target.kind == "time" and target.value is not None:
            return await self._by_time(queues, before, target.value, force=True)
        bounds = await asyncio.gather(*(asyncio.gather(self._offset(mq, RequestCode.GET_MIN_OFFSET),
                                                       self._offset(mq, RequestCode.GET_MAX_OFFSET))
                                        for mq in queues))
        plan = []
        for mq, (low, high) in zip(queues, bounds, strict=True):
            old = before[mq]
            if target.kind == "earliest":
                wanted = low
            elif target.kind == "latest":
                wanted = high
            elif target.kind == "offset" and target.value is not None:
                wanted = target.value
            elif old is not None and target.value is not None:
                wanted = old + target.value
            else:
                continue  # a shift of a queue the group never committed on
            plan.append(OffsetReset(mq, old, min(max(wanted, low), high)))
        return plan

    async def _commit(self, group: str, plan: list[OffsetReset]) -> None:
        store = RemoteOffsetStore(self.admin.instance, group)
        await store.commit_all({r.queue: r.new for r in plan})

    async def _apply(self, group: str, topic: str, plan: list[OffsetReset]) -> None:
        """Commit the plan, then have each broker push committed offsets to online consumers; an online
        consumer committing its own offsets in between is caught (the broker answers what it pushed)
        and the plan committed again, once."""
        masters = masters_of(await self.admin._route(topic))
        wanted = {r.queue: r.new for r in plan}
        for attempt in range(2):
            await self._commit(group, plan)
            by_broker: dict[str, list[MessageQueue]] = {}
            for mq in wanted:
                by_broker.setdefault(mq.broker_name, []).append(mq)
            tables = await asyncio.gather(*(self._push(masters[name], group, topic, sorted(mqs, key=queue_key), wanted)
                                            for name, mqs in sorted(by_broker.items())))
            pushed = {mq: offset for table in tables for mq, offset in table.items()}
            moved = [mq for mq, offset in wanted.items() if mq in pushed and pushed[mq] != offset]
            if not moved:
                return
            if attempt:
                raise MQClientError("an online consumer committed its own offsets during the reset of "
                                    f"{', '.join(f'{mq.broker_name}:{mq.queue_id}' for mq in moved)}; run it again")

    async def _push(self, addr: str, group: str, topic: str, queues: list[MessageQueue],
                    wanted: dict[MessageQueue, int]) -> dict[MessageQueue, int]:
        """One master's reset request per queue, naming the queue and its target: a RocketMQ 5 broker
        (useServerSideResetOffset, on by default) sets exactly that queue's offset and answers it alone,
        where a request without them would move every queue to its end; a 4.x broker (and mq's) ignores
        both fields, pushes every queue's committed offset and answers them all, so one request is
        enough there. What the broker answered it pushed, by queue."""
        pushed: dict[MessageQueue, int] = {}
        for mq in queues:
            if mq in pushed:
                continue
            ext = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=LATEST, is_force=False,
                                           queue_id=mq.queue_id, offset=wanted[mq]).to_ext()
            try:
                answer = await self.admin.call(addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext)
            except ConsumerNotOnlineError:
                return pushed  # nobody online to push to: the commit is the reset
            pushed.update(ResetOffsetBody.from_json(answer.body or b"{}").offset_table)
        return pushed


def _online_refusal(exc: GroupOffsetNotExistError, group: str) -> MQClientError:
    """A set whose broker could not push the reset (a queue without a committed offset) while consumers of the group
    are online there: committing directly would be overwritten by them, so the set is not moved."""
    return MQClientError(f"{exc.summary()}: a queue there has no committed offset "
                         f"of {group} while its consumers are online, so the broker cannot push the reset and a "
                         "direct commit would be overwritten; let the consumers commit first, or stop them")
