"""Topics: list, route, create on a broker or every master, delete, per-queue stats."""

from __future__ import annotations

from mqtools.client.admin.models import queue_key
from mqtools.client.admin.namesrv import NamesrvAdmin
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
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.headers import (
    CreateTopicRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetTopicsByClusterRequestHeader,
    TopicRequestHeader,
)


class TopicAdmin(NamesrvAdmin):
    """Topics: list, route, create on a broker or every master, delete, per-queue stats."""

    async def topic_list(self) -> list[str]:
        resp = await self.call(None, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return sorted(TopicList.from_json(resp.body or b"{}").topic_list)

    async def topics_by_cluster(self, cluster: str) -> list[str]:
        resp = await self.call(None, RequestCode.GET_TOPICS_BY_CLUSTER, GetTopicsByClusterRequestHeader(cluster).to_ext())
        return sorted(TopicList.from_json(resp.body or b"{}").topic_list)

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The name server's route; TopicNotExistError for an unknown topic."""
        return (await self._route(topic)).data


    async def create_topic(self, config: TopicConfig, *, cluster: str | None = None,
                           broker_addr: str | None = None) -> list[str]:
        """UPDATE_AND_CREATE_TOPIC on one broker or every master of a cluster; returns the addresses."""
        addrs = await self._targets(cluster, broker_addr)
        ext = CreateTopicRequestHeader(
            topic=config.topic_name, default_topic=AUTO_CREATE_TOPIC_KEY, read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums, perm=config.perm, topic_filter_type=config.topic_filter_type,
            topic_sys_flag=config.topic_sys_flag, order=config.order,
        ).to_ext()
        await self._each(addrs, lambda a: self.call(a, RequestCode.UPDATE_AND_CREATE_TOPIC, ext))
        if config.order and cluster is not None:
            masters = await self.master_addrs(cluster)
            layout = ";".join(f"{name}:{config.write_queue_nums}" for name in masters)
            await self.put_kv(NAMESPACE_ORDER_TOPIC_CONFIG, config.topic_name, layout)
        return addrs

    async def delete_topic(self, topic: str, cluster: str) -> list[str]:
        """DELETE_TOPIC_IN_BROKER on every master of the cluster, then DELETE_TOPIC_IN_NAMESRV everywhere."""
        addrs = await self._targets(cluster, None)
        ext = TopicRequestHeader(topic).to_ext()
        await self._each(addrs, lambda a: self.call(a, RequestCode.DELETE_TOPIC_IN_BROKER, ext))
        await self._each_namesrv(RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader(topic).to_ext())
        if await self.get_kv(NAMESPACE_ORDER_TOPIC_CONFIG, topic) is not None:
            await self.delete_kv(NAMESPACE_ORDER_TOPIC_CONFIG, topic)
        return addrs

    async def topic_configs(self, broker_addr: str) -> dict[str, TopicConfig]:
        resp = await self.call(broker_addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        return TopicConfigSerializeWrapper.from_json(resp.body or b"{}").topic_config_table

    async def topic_stats(self, topic: str) -> dict[MessageQueue, TopicOffset]:
        """Min/max offset and last update per queue, over every broker serving the topic, sorted."""
        ext = TopicRequestHeader(topic).to_ext()
        answers = await self._each(list((await self.route_masters(topic)).values()),
                                   lambda a: self.call(a, RequestCode.GET_TOPIC_STATS_INFO, ext))
        table: dict[MessageQueue, TopicOffset] = {}
        for resp in answers.values():
            table.update(TopicStatsTable.from_json(resp.body or b"{}").offset_table)
        return dict(sorted(table.items(), key=lambda kv: queue_key(kv[0])))

    async def topic_consumed_by(self, topic: str) -> list[str]:
        ext = TopicRequestHeader(topic).to_ext()
        answers = await self._each(list((await self.route_masters(topic)).values()),
                                   lambda a: self.call(a, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, ext))
        return sorted({g for r in answers.values() for g in GroupList.from_json(r.body or b"{}").group_list})
