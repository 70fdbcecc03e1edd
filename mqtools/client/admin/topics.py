"""Topics: the catalogue, routes, create and update on a broker or every master, delete, per-queue stats."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import defaultdict

from mqtools.client.admin.base import AdminService, BrokerWrites, SetReads, broker_sets
from mqtools.client.admin.models.parse import queue_key
from mqtools.client.admin.models.topics import TopicChange, TopicConsumers, TopicEntry, topic_kind
from mqtools.client.errors import MQClientError, TopicNotExistError, UnreachableError
from mqtools.common.topic_attributes import MESSAGE_TYPE
from mqtools.common.topics import AUTO_CREATE_TOPIC_KEY, NAMESPACE_ORDER_TOPIC_CONFIG
from mqtools.remoting.bodies import (
    GroupList,
    MessageQueue,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicOffset,
    TopicRouteData,
    TopicStatsTable,
)
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import (
    CreateTopicRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetTopicsByClusterRequestHeader,
    KVConfigRequestHeader,
    TopicRequestHeader,
)


class TopicAdmin(AdminService):
    """Topics: the catalogue, routes, create and update on a broker or every master, delete, per-queue stats."""

    async def topic_list(self) -> list[str]:
        resp = await self.admin.call(None, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return sorted(TopicList.from_json(resp.body or b"{}").topic_list)

    async def topics_by_cluster(self, cluster: str) -> list[str]:
        resp = await self.admin.call(None, RequestCode.GET_TOPICS_BY_CLUSTER, GetTopicsByClusterRequestHeader(cluster).to_ext())
        return sorted(TopicList.from_json(resp.body or b"{}").topic_list)

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The name server's route; TopicNotExistError for an unknown topic."""
        return (await self.admin._route(topic)).data

    async def topic_clusters(self, topic: str) -> list[str]:
        """Clusters with at least one broker serving the topic; TopicNotExistError for an unknown topic."""
        info, route = await asyncio.gather(self.admin.cluster_info(), self.admin._route(topic))
        names = set(route.broker_addrs)
        return sorted(c for c, brokers in info.cluster_addr_table.items() if brokers & names)

    async def topic_catalogue(self, cluster: str | None = None) -> list[TopicEntry]:
        """Every topic (or one cluster's) with its kind and hosting clusters: one request per cluster."""
        info = await self.admin.cluster_info()
        if cluster is not None and cluster not in info.cluster_addr_table:
            raise MQClientError(f"cluster {cluster} not found (known: {', '.join(sorted(info.cluster_addr_table))})")
        clusters = [cluster] if cluster else sorted(info.cluster_addr_table)
        everything, *per_cluster = await asyncio.gather(self.topic_list(),
                                                        *(self.topics_by_cluster(c) for c in clusters))
        where: dict[str, list[str]] = defaultdict(list)
        for name, topics in zip(clusters, per_cluster, strict=True):
            for topic in topics:
                where[topic].append(name)
        reserved = set(info.cluster_addr_table) | set(info.broker_addr_table)
        names = everything if cluster is None else sorted(where)
        return [TopicEntry(t, topic_kind(t, reserved), where.get(t, [])) for t in names]

    async def create_topic(self, config: TopicConfig, *, cluster: str | None = None,
                           broker_addr: str | None = None, exist_ok: bool = True) -> list[str]:
        """UPDATE_AND_CREATE_TOPIC on one broker or every master of a cluster; returns the addresses.

        Without `exist_ok`, a topic already on any of those brokers is refused before anything is
        written. An ordered topic records its layout in the name servers' ORDER_TOPIC_CONFIG, as
        mqadmin does: the cluster's whole layout, or this broker's entry merged into the existing one.
        Every broker settles first; PartialWriteError names where it applied, where not, and the name servers
        that did not record the layout.
        """
        addrs = await self.admin._targets(cluster, broker_addr)
        if not exist_ok:
            held = [a for a, c in (await self._configs_at(config.topic_name, addrs)).items() if c is not None]
            if held:
                raise MQClientError(f"topic {config.topic_name} already exists on {', '.join(held)}; "
                                    "update it instead")
        writes = await self.admin.write_each(addrs, lambda a: self._write_topic(a, config, created=True))
        await self._settle(f"creating topic {config.topic_name}", writes, config if config.order else None,
                           cluster, broker_addr)
        return addrs

    async def update_topic(self, topic: str, *, cluster: str | None = None, broker_addr: str | None = None,
                           read_queue_nums: int | None = None, write_queue_nums: int | None = None,
                           perm: int | None = None, order: bool | None = None,
                           message_type: str | None = None) -> list[TopicChange]:
        """Change what is given of an existing topic and keep the rest, per broker (`message_type`: RocketMQ 5's
        `message.type` attribute, which its proxies check each send against).

        Targets: one broker, every master of a cluster, or (neither given) every master serving the
        topic. A target without the topic gets it, copied from one that has it (growing the topic to
        more brokers); TopicNotExistError when no target has it.
        """
        names = {addr: name for name, addr in (await self.admin.master_addrs()).items()}
        if cluster is None and broker_addr is None:
            addrs = self.admin.masters_of_all(broker_sets(await self.admin._route(topic)), f"topic {topic}'s change")
        else:
            addrs = await self.admin._targets(cluster, broker_addr)
        current = await self._configs_at(topic, addrs)
        base = next((c for c in current.values() if c is not None), None)
        if base is None:
            raise TopicNotExistError(ResponseCode.TOPIC_NOT_EXIST, f"topic {topic} does not exist on {', '.join(addrs)}")
        given: dict[str, object] = {"read_queue_nums": read_queue_nums, "write_queue_nums": write_queue_nums,
                                    "perm": perm, "order": order}
        if message_type is not None:
            given["attributes"] = {**base.attributes, MESSAGE_TYPE: message_type}
        changes = sorted((TopicChange(names.get(addr), addr, old, dataclasses.replace(
            old or base, **{k: v for k, v in given.items() if v is not None})) for addr, old in current.items()),
                         key=lambda c: (c.broker_name or "", c.addr))
        planned = {c.addr: c for c in changes}
        changed = {MESSAGE_TYPE: message_type} if message_type is not None else {}
        writes = await self.admin.write_each(addrs, lambda a: self._write_topic(
            a, planned[a].new, created=planned[a].old is None, changed=changed))
        await self._settle(f"updating topic {topic}", writes, changes[0].new if order else None, cluster, broker_addr)
        return changes

    async def _write_topic(self, addr: str, config: TopicConfig, *, created: bool,
                           changed: dict[str, str] | None = None) -> None:
        """UPDATE_AND_CREATE_TOPIC. Attributes travel as a modification (`+k=v`, `-k`): a topic new on the broker
        gets all of its own (keys given signed are sent as they are), an existing one only those `changed`
        (a broker keeps the rest, and refuses an unchangeable one sent again)."""
        own = config.attributes if created else (changed or {})
        attributes = ",".join(k if k.startswith("-") else f"{k}={v}" if k.startswith("+") else f"+{k}={v}"
                              for k, v in own.items()) or None
        ext = CreateTopicRequestHeader(
            topic=config.topic_name, default_topic=AUTO_CREATE_TOPIC_KEY, read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums, perm=config.perm, topic_filter_type=config.topic_filter_type,
            topic_sys_flag=config.topic_sys_flag, order=config.order, attributes=attributes,
        ).to_ext()
        await self.admin.call(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, ext)

    async def _settle(self, what: str, writes: BrokerWrites, order: TopicConfig | None, cluster: str | None,
                      broker_addr: str | None) -> None:
        """A topic write the brokers settled, then the ordered topic's layout on the name servers once every broker
        has the topic: one error naming where `what` applied, where not, and the name servers not updated."""
        if writes.failed:
            raise writes.error(what, self._not_asked() if order is not None and cluster is not None else None)
        if order is not None:
            layout = await self._order_layout(order, cluster, broker_addr)
            await self._on_namesrvs(what, writes, RequestCode.PUT_KV_CONFIG,
                                    KVConfigRequestHeader(NAMESPACE_ORDER_TOPIC_CONFIG, order.topic_name, layout).to_ext())

    def _not_asked(self) -> dict[str, MQClientError | None]:
        """Every name server, not asked: a step the brokers' failure left undone."""
        return dict.fromkeys(self.admin.namesrv_addrs)

    async def _on_namesrvs(self, what: str, brokers: BrokerWrites, code: int, ext: dict[str, str]) -> None:
        """A step on every name server after every broker applied `what`: PartialWriteError naming those that
        missed it (name servers do not tell each other)."""
        writes = await self.admin._namesrv_writes(code, ext)
        if writes.failed:
            raise brokers.error(what, writes.failed)

    async def _order_layout(self, config: TopicConfig, cluster: str | None, broker_addr: str | None) -> str:
        """The ORDER_TOPIC_CONFIG value an ordered topic records: its cluster's masters each with the topic's write
        queues, or one broker's entry merged into what is recorded."""
        masters = await self.admin.master_addrs(cluster)
        if broker_addr is not None:
            entries = dict(i.split(":", 1) for i in (await self.admin.namesrv.get_kv(NAMESPACE_ORDER_TOPIC_CONFIG, config.topic_name)
                                                     or "").split(";") if ":" in i)
            mine = [name for name, addr in masters.items() if addr == broker_addr]
            entries.update({name: str(config.write_queue_nums) for name in mine})
        else:
            entries = {name: str(config.write_queue_nums) for name in masters}
        return ";".join(f"{name}:{n}" for name, n in entries.items())

    async def _configs_at(self, topic: str, addrs: list[str]) -> dict[str, TopicConfig | None]:
        """The topic's config on each broker, None where the broker lacks it."""
        tables = await asyncio.gather(*(self.topic_configs(a) for a in addrs))
        return {addr: table.get(topic) for addr, table in zip(addrs, tables, strict=True)}

    async def delete_topic(self, topic: str, cluster: str | None = None) -> list[str]:
        """DELETE_TOPIC_IN_BROKER on every master of the cluster (None: of every cluster serving the
        topic), then DELETE_TOPIC_IN_NAMESRV on every name server; returns the broker addresses. The name servers
        are asked once every master applied it, as mqadmin's deleteTopic does; PartialWriteError names where it
        applied, where not, and the name servers not updated (still routing the topic)."""
        clusters = [cluster] if cluster is not None else await self.topic_clusters(topic)
        addrs = [a for c in clusters for a in await self.admin._targets(c, None)]
        what = f"deleting topic {topic}"
        ext = TopicRequestHeader(topic).to_ext()
        writes = await self.admin.write_each(addrs, lambda a: self.admin.call(a, RequestCode.DELETE_TOPIC_IN_BROKER, ext))
        if writes.failed:
            raise writes.error(what, self._not_asked())
        for name in clusters:
            await self._on_namesrvs(what, writes, RequestCode.DELETE_TOPIC_IN_NAMESRV,
                                    DeleteTopicFromNamesrvRequestHeader(topic, name).to_ext())
        if await self.admin.namesrv.get_kv(NAMESPACE_ORDER_TOPIC_CONFIG, topic) is not None:
            await self._on_namesrvs(what, writes, RequestCode.DELETE_KV_CONFIG,
                                    KVConfigRequestHeader(NAMESPACE_ORDER_TOPIC_CONFIG, topic).to_ext())
        return addrs

    async def topic_configs(self, broker_addr: str) -> dict[str, TopicConfig]:
        resp = await self.admin.call(broker_addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        return TopicConfigSerializeWrapper.from_json(resp.body or b"{}").topic_config_table

    async def topic_stats(self, topic: str, cluster: str | None = None) -> dict[MessageQueue, TopicOffset]:
        """Min/max offset and last update per queue, sorted, over every broker set serving the topic (its
        master, else a slave), or over the sets `cluster` leads to (mqadmin's `topicStatus -c`: a cluster
        name, or an LMQ parent topic whose route names the brokers). Sets no replica answered for are left
        out: `topic_stats_read` names them."""
        return self.stats_table(topic, await self.topic_stats_read(topic, cluster))

    async def topic_stats_read(self, topic: str, cluster: str | None = None
                               ) -> SetReads[dict[MessageQueue, TopicOffset] | None]:
        """Each broker set's queue stats (None where the set does not hold the topic), who answered, and the
        sets nobody answered for."""
        ext = TopicRequestHeader(topic).to_ext()

        async def stats(addr: str) -> dict[MessageQueue, TopicOffset] | None:
            resp = await self.admin.call(addr, RequestCode.GET_TOPIC_STATS_INFO, ext,
                                         ok=(ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST))
            if resp.code != ResponseCode.SUCCESS:
                return None
            return TopicStatsTable.from_json(resp.body or b"{}").offset_table

        return (await self.admin.read_sets(await self.topic_sets(topic, cluster), stats)).doubt_slaves("topic")

    @staticmethod
    def stats_table(topic: str, read: SetReads[dict[MessageQueue, TopicOffset] | None]
                    ) -> dict[MessageQueue, TopicOffset]:
        """The queues of a stats read, sorted; TopicNotExistError when no set that answered holds the topic
        (and every set answered)."""
        table: dict[MessageQueue, TopicOffset] = {}
        for r in read.reads.values():
            table.update(r.value or {})
        if not table and not read.unreachable:
            raise TopicNotExistError(ResponseCode.TOPIC_NOT_EXIST, f"topic {topic} is on none of those brokers")
        return dict(sorted(table.items(), key=lambda kv: queue_key(kv[0])))

    async def topic_sets(self, topic: str, cluster: str | None = None) -> dict[str, dict[int, str]]:
        """broker name -> {id: address} of the sets to ask about a topic, as `topic_masters` chooses them,
        master-less sets included."""
        if cluster is None:
            return broker_sets(await self.admin._route(topic))
        info = await self.admin.cluster_info()
        if cluster in info.cluster_addr_table:
            return {n: dict(info.broker_addr_table[n].broker_addrs) for n in sorted(info.cluster_addr_table[cluster])
                    if n in info.broker_addr_table}
        return broker_sets(await self.admin._route(cluster))

    async def topic_masters(self, topic: str, cluster: str | None = None) -> dict[str, str]:
        """broker name -> master address to ask about a topic: its route's, or `cluster`'s masters, or
        (`cluster` naming no cluster) those of the route of `cluster` as a topic (an LMQ parent topic)."""
        if cluster is None:
            return await self.admin.route_masters(topic)
        if cluster in (await self.admin.cluster_info()).cluster_addr_table:
            return await self.admin.master_addrs(cluster)
        return await self.admin.route_masters(cluster)

    async def topic_consumed_by(self, topic: str) -> TopicConsumers:
        """The groups consuming the topic, from each broker set of its route (its master, else a slave, which
        knows the groups by their synced offsets); a set no replica answers for is named as unreachable, and
        only when none answers is this UnreachableError (a hung master used to fail `msg get`'s tracks)."""
        ext = TopicRequestHeader(topic).to_ext()

        async def ask(addr: str) -> list[str]:
            resp = await self.admin.call(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, ext)
            return GroupList.from_json(resp.body or b"{}").group_list

        read = await self.admin.read_sets(await self.topic_sets(topic), ask)
        if read.unreachable and not read.reads:
            raise UnreachableError(f"could not read {read.unreachable[0]}")
        return TopicConsumers(sorted({g for r in read.reads.values() for g in r.value}), read.unreachable)

