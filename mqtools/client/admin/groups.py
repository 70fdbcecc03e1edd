"""Consumer and producer groups: subscription configs, progress, connections, running info."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from typing import Any

from mqtools.client.admin.base import AdminService
from mqtools.client.admin.models.groups import (
    ClientConnection,
    ConsumerProgress,
    ConsumerRunningInfo,
    GroupCatalogue,
    GroupChange,
    GroupConnections,
    GroupEntry,
    GroupPlacement,
    PopFigures,
    ProducerClients,
    QueueProgress,
    producer_connections,
)
from mqtools.client.admin.models.parse import queue_key
from mqtools.client.errors import (
    ConsumerNotOnlineError,
    MQBrokerError,
    MQClientError,
    SubscriptionGroupNotExistError,
    UnreachableError,
)
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.presentation import ReadSource
from mqtools.common.topics import is_retry_topic
from mqtools.remoting.bodies import (
    ConsumerConnection,
    ConsumeStats,
    MessageQueue,
    OffsetWrapper,
    ProducerConnection,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
)
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import (
    ConsumerGroupRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
)
from mqtools.remoting.pop_stats import PopInFlightBody, PopInFlightRequestHeader


def _pop_figures(answers: list[PopInFlightBody | None], unreachable: bool) -> PopFigures | None:
    """The group's POP sums over the sets' answers; None when no set gave one. A set that gave none (its broker
    is Apache's, or a slave, which tracks nothing) or could not be read makes them incomplete, whatever order
    the sets come in."""
    given = [pop for pop in answers if pop is not None]
    if not given:
        return None
    out = PopFigures(complete=len(given) == len(answers) and not unreachable)
    for pop in given:
        out.popped = out.popped or pop.popped
        out.inflight += sum(q.in_flight + q.revive_due for q in pop.queues)
        out.revive_due += sum(q.revive_due for q in pop.queues)
        out.retry_inflight += sum(q.in_flight + q.revive_due for q in pop.queues if is_retry_topic(q.topic))
        out.revived += pop.revived
    return out


def _queue(mq: MessageQueue, w: OffsetWrapper, source: ReadSource = ReadSource.MASTER) -> QueueProgress:
    consumer = w.consumer_offset if w.consumer_offset >= 0 else None
    # A 4.x broker's OffsetWrapper has no pullOffset (it reads as 0 here): unknown, not "nothing pulled".
    pull = None if w.pull_offset <= 0 < w.consumer_offset else w.pull_offset
    return QueueProgress(mq, w.broker_offset, consumer, w.last_timestamp if w.last_timestamp > 0 else None, pull,
                         source)


class GroupAdmin(AdminService):
    """Consumer and producer groups: subscription configs, progress, connections, running info."""

    async def create_subscription_group(self, config: SubscriptionGroupConfig, *, cluster: str | None = None,
                                        broker_addr: str | None = None, exist_ok: bool = True) -> list[str]:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP on one broker or every master of a cluster.

        Without `exist_ok`, a group already configured on any of them is refused before anything is written.
        Every master settles before this answers: PartialWriteError names where it applied and where not.
        """
        addrs = await self.admin._targets(cluster, broker_addr)
        if not exist_ok:
            held = [a for a, c in (await self.group_configs_at(config.group_name, addrs)).items() if c is not None]
            if held:
                raise MQClientError(f"group {config.group_name} already exists on {', '.join(held)}; update it instead")
        body = config.to_json()
        await self.admin._each(addrs, lambda a: self.admin.call(a, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                                                                body=body), f"creating group {config.group_name}")
        return addrs

    async def update_subscription_group(self, group: str, changes: Mapping[str, Any], *, cluster: str | None = None,
                                        broker_addr: str | None = None) -> list[GroupChange]:
        """Change the given SubscriptionGroupConfig fields of an existing group and keep the rest, per broker.

        Targets: one broker, every master of a cluster, or (neither given) every master holding the
        group; SubscriptionGroupNotExistError when none of them holds it.
        """
        if cluster is None and broker_addr is None:
            entry = await self.subscription_group(group)
            current: dict[str, SubscriptionGroupConfig | None] = {p.addr: p.config for p in entry.placements}
        else:
            current = await self.group_configs_at(group, await self.admin._targets(cluster, broker_addr))
        base = next((c for c in current.values() if c is not None), None)
        if base is None:
            raise SubscriptionGroupNotExistError(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                                 f"subscription group {group} does not exist on {', '.join(current)}")
        names = {addr: name for name, addr in (await self.admin.master_addrs()).items()}
        updated = sorted((GroupChange(names.get(a), a, old, dataclasses.replace(old or base, **changes))
                          for a, old in current.items()), key=lambda c: (c.broker_name or "", c.addr))
        bodies = {c.addr: c.new.to_json() for c in updated}
        await self.admin._each(list(bodies), lambda a: self.admin.call(
            a, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=bodies[a]), f"updating group {group}")
        return updated

    async def delete_subscription_group(self, group: str, *, cluster: str | None = None,
                                        broker_addr: str | None = None, clean_offset: bool = False) -> list[str]:
        """DELETE_SUBSCRIPTIONGROUP on one broker or every master of a cluster, every one settled (PartialWriteError
        names where it applied and where not); the addresses."""
        addrs = await self.admin._targets(cluster, broker_addr)
        ext = DeleteSubscriptionGroupRequestHeader(group, clean_offset).to_ext()
        await self.admin._each(addrs, lambda a: self.admin.call(a, RequestCode.DELETE_SUBSCRIPTIONGROUP, ext),
                               f"deleting group {group}")
        return addrs

    async def subscription_groups(self, broker_addr: str) -> dict[str, SubscriptionGroupConfig]:
        resp = await self.admin.call(broker_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        return SubscriptionGroupWrapper.from_json(resp.body or b"{}").subscription_group_table

    async def group_configs_at(self, group: str, addrs: list[str]) -> dict[str, SubscriptionGroupConfig | None]:
        """The group's config on each broker (None where it does not exist)."""
        tables = await asyncio.gather(*(self.subscription_groups(a) for a in addrs))
        return {addr: table.get(group) for addr, table in zip(addrs, tables, strict=True)}

    async def group_list(self) -> GroupCatalogue:
        """Every group configured on any broker set (read from its master, else a slave), with the brokers
        that hold it, sorted by name; the sets no replica answered for are named."""
        read = await self.admin.read_sets(await self.admin.all_sets(), self.subscription_groups)
        found: dict[str, list[GroupPlacement]] = {}
        for name, r in sorted(read.reads.items()):
            for group, config in r.value.items():
                found.setdefault(group, []).append(GroupPlacement(name, r.addr, config))
        return GroupCatalogue([GroupEntry(g, found[g]) for g in sorted(found)], read.unreachable, read.from_slaves())

    async def subscription_group(self, group: str) -> GroupEntry:
        """Where a group is configured; SubscriptionGroupNotExistError when every set's master answered without it,
        UnreachableError naming the sets when one that did not answer (or answered from a slave) may hold it."""
        listed = await self.group_list()
        entry = next((e for e in listed.entries if e.group == group), None)
        if entry is not None:
            return entry
        raise listed.not_found([group])

    async def consumer_progress(self, group: str, topic: str | None = None, *, cluster: str | None = None,
                                known: bool = False) -> ConsumerProgress:
        """GET_CONSUME_STATS on every broker set of the group (or of `cluster`), each from its master, else a
        slave: offsets, lag and last consume time per queue; the sets no replica answered for are named.
        From the same replica, mq's private GET_POP_IN_FLIGHT: what a POP group has popped and not acknowledged
        per queue (None where the broker does not say). SubscriptionGroupNotExistError for a group no broker
        knows, unless `known` (a caller that listed the groups: one request a set, no POP figures)."""
        sets = await (self.admin.all_sets(cluster) if cluster is not None else self.admin.group_sets(group, topic))

        async def both(addr: str) -> tuple[ConsumeStats, PopInFlightBody | None] | None:
            stats, pop = await asyncio.gather(self._consume_stats(addr, group, topic),
                                              asyncio.sleep(0, None) if known else self._pop_in_flight(addr, group, topic))
            return None if stats is None else (stats, pop)

        _, read = await asyncio.gather(asyncio.sleep(0) if known else self.subscription_group(group),
                                       self.admin.read_sets(sets, both))
        # a slave with no offsets of the group may not have them yet: not "nothing to consume there"
        read.doubt_slaves("group", lambda value: value is None or not value[0].offset_table)
        progress = ConsumerProgress(group)
        answers: list[PopInFlightBody | None] = []
        for _, r in sorted(read.reads.items()):
            if r.value is None:
                continue
            stats, pop = r.value
            answers.append(pop)
            progress.consume_tps = (progress.consume_tps or 0.0) + stats.consume_tps
            per_queue = {(q.topic, q.queue_id): q for q in pop.queues} if pop is not None else {}
            for mq, w in stats.offset_table.items():
                queue = _queue(mq, w, r.source)
                if pop is not None:
                    found = per_queue.get((mq.topic, mq.queue_id))
                    queue = dataclasses.replace(queue, pop_inflight=found.in_flight + found.revive_due if found else 0,
                                                revive_due=found.revive_due if found else 0)
                progress.queues.append(queue)
        progress.queues.sort(key=lambda q: queue_key(q.queue))
        progress.unreachable = read.unreachable
        progress.pop = _pop_figures(answers, bool(read.unreachable))
        if progress.unreachable:
            progress.consume_tps = None
        return progress

    async def _pop_in_flight(self, addr: str, group: str, topic: str | None) -> PopInFlightBody | None:
        """mq's private GET_POP_IN_FLIGHT; None where the broker does not answer it (Apache: not supported, or
        refused by an ACL that does not know the code) or tracks nothing (a slave)."""
        resp = await self.admin.call(addr, RequestCode.GET_POP_IN_FLIGHT,
                                     PopInFlightRequestHeader(group, topic).to_ext(),
                                     ok=(ResponseCode.SUCCESS, ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                         ResponseCode.NO_PERMISSION))
        if resp.code != ResponseCode.SUCCESS or not resp.body:
            return None
        body = PopInFlightBody.from_json(resp.body)
        return body if body.tracked else None

    async def _consume_stats(self, addr: str, group: str, topic: str | None) -> ConsumeStats | None:
        resp = await self.admin.call(addr, RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(group, topic).to_ext(),
                                     ok=(ResponseCode.SUCCESS, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                         ResponseCode.TOPIC_NOT_EXIST))
        return ConsumeStats.from_json(resp.body) if resp.code == ResponseCode.SUCCESS and resp.body else None

    async def online_connections(self, group: str) -> GroupConnections | None:
        """Who is online in a configured group; None when nobody is (SubscriptionGroupNotExistError when no
        master knows the group): what `group connections` and MCP's group_connections show."""
        await self.subscription_group(group)
        try:
            return await self.consumer_connections(group)
        except ConsumerNotOnlineError:
            return None

    async def consumer_connections(self, group: str, broker_addr: str | None = None) -> GroupConnections:
        """Who is online in a group, with its subscriptions, as the group's brokers (or `broker_addr`)
        see it; ConsumerNotOnlineError when nobody is. Consumers heartbeat to slaves too, so a slave answers
        for a set whose master is gone or does not answer."""
        ext = ConsumerGroupRequestHeader(group).to_ext()
        resp = await self._ask_about_clients(group, RequestCode.GET_CONSUMER_CONNECTION_LIST, ext, broker_addr)
        return GroupConnections.from_wire(group, ConsumerConnection.from_json(resp.body or b"{}"))

    async def consumer_running_info(self, group: str, client_id: str, *, jstack: bool = False) -> ConsumerRunningInfo:
        """GET_CONSUMER_RUNNING_INFO, which a broker relays to the client; NotAvailable where the broker
        or the client does not offer it (C++ clients before 2.x, for one)."""
        ext = {"consumerGroup": group, "clientId": client_id, "jstackEnable": str(jstack).lower()}
        resp = await self._ask_about_clients(group, RequestCode.GET_CONSUMER_RUNNING_INFO, ext)
        return ConsumerRunningInfo.from_json(client_id, resp.body or b"{}")

    async def _ask_about_clients(self, group: str, code: int, ext: dict[str, str],
                                 broker_addr: str | None = None) -> RemotingCommand:
        """The first answer to a question about the group's clients, asked of `broker_addr`, else of each of the
        group's broker sets in turn: its master, then its slaves (clients heartbeat to both, so a slave answers
        for a set whose master is gone or does not answer). A set that answers with a refusal (nobody online
        there, the client not connected) passes the question to the next set; the last failure is raised."""
        last: MQClientError | None = None
        if broker_addr:
            replicas = [[broker_addr]]
        else:
            sets = await self.admin.group_sets(group, None)
            replicas = [[ids[i] for i in sorted(ids, key=lambda i: (i != MASTER_ID, i))] for _, ids in sorted(sets.items())]
        for addrs in replicas:
            for addr in addrs:
                try:
                    return await self.admin.call(addr, code, ext)
                except UnreachableError as exc:
                    last = exc
                except MQBrokerError as exc:
                    last = exc
                    break
        raise last or MQClientError(f"no broker to ask about group {group}")

    async def producer_connections(self, group: str, topic: str) -> ProducerClients:
        """Online producers of a group, over every master serving the topic, each client once; a master that
        does not answer is named (a set without one has no producer connected: producers send to masters)."""
        ext = GetProducerConnectionListRequestHeader(group).to_ext()
        masters = sorted((await self.admin.route_masters(topic)).items())
        answered, missed = await self.admin.ask_each(masters, RequestCode.GET_PRODUCER_CONNECTION_LIST, ext,
                                                     ok=(ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR))
        seen: dict[str, ClientConnection] = {}
        for _, _, resp in answered:
            if resp.code != ResponseCode.SUCCESS or not resp.body:
                continue
            for conn in producer_connections(ProducerConnection.from_json(resp.body)):
                seen.setdefault(conn.client_id, conn)
        return ProducerClients(list(seen.values()), missed)
