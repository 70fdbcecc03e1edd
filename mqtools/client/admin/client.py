"""MQAdmin: the operations `mq admin`, `mq top` and drills are built on, as typed async methods.

Every method speaks plain RocketMQ remoting, so it works against mq servers and Apache RocketMQ alike
(the role of RocketMQ's DefaultMQAdminExt); the one mq-private request (GET_BROKER_LIVE_TABLE) raises
NotAvailable where the server lacks it, and snapshots then carry None for what it would have told.
Cluster-wide writes go to every master of the cluster (and, for topic deletes and write permission,
to every name server), as mqadmin does. Results are the typed models of `models.py`.
"""

from __future__ import annotations

import asyncio
import json
import time

from mqtools.client.admin.base import AdminBase, masters_of, unreachable
from mqtools.client.admin.models import (
    BrokerRow,
    BrokerRuntime,
    ClientConnection,
    ClusterSnapshot,
    ConsumerProgress,
    GroupConnections,
    HAStatus,
    Heartbeat,
    OffsetReset,
    QueueProgress,
    producer_connections,
    queue_key,
)
from mqtools.client.client_api import decode_pull_body, pull_once, queue_offset
from mqtools.client.errors import (
    MQBrokerError,
    MQClientError,
)
from mqtools.client.offset_store import RemoteOffsetStore
from mqtools.client.subscription import parse_subscription
from mqtools.common import properties as P
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.ids import decode_offset_msg_id
from mqtools.common.javaprops import parse_properties, render_properties
from mqtools.common.message import MessageExt
from mqtools.common.topics import (
    AUTO_CREATE_TOPIC_KEY,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    TOOLS_CONSUMER_GROUP,
)
from mqtools.remoting.bodies import (
    BrokerLiveTable,
    BrokerStatsData,
    ConsumerConnection,
    ConsumeStats,
    GroupList,
    KVTable,
    MessageQueue,
    ProducerConnection,
    ResetOffsetBody,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicOffset,
    TopicRouteData,
    TopicStatsTable,
)
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import (
    UNIQUE_KEY_QUERY,
    BrokerNameRequestHeader,
    ConsumerGroupRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetConsumeStatsRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicsByClusterRequestHeader,
    KVConfigRequestHeader,
    QueryMessageRequestHeader,
    ResetOffsetRequestHeader,
    TopicRequestHeader,
    ViewBrokerStatsDataRequestHeader,
    ViewMessageRequestHeader,
)

LATEST = -1
"""reset_offset_by_time's timestamp meaning 'skip to the end of every queue' (RocketMQ's wire convention)."""


class MQAdmin(AdminBase):
    """Async admin client; `async with MQAdmin("127.0.0.1:9876") as admin: ...`."""

    # name server ----------------------------------------------------------------------

    async def broker_live_tables(self) -> dict[str, BrokerLiveTable | None]:
        """mq's private GET_BROKER_LIVE_TABLE from every name server; None where one lacks it or is down."""
        answers = await self.remoting.invoke_each_namesrv(
            lambda: RemotingCommand.request(RequestCode.GET_BROKER_LIVE_TABLE), self.timeout)
        return {addr: BrokerLiveTable.from_json(resp.body or b"{}")
                if isinstance(resp, RemotingCommand) and resp.code == ResponseCode.SUCCESS else None
                for addr, resp in answers.items()}

    async def cluster_snapshot(self, *, runtime: bool = True) -> ClusterSnapshot:
        """Every broker the name servers know, with heartbeats per name server and, with `runtime`,
        each broker's runtime figures; a broker that cannot be asked gets `runtime=None` and an error."""
        info, live = await asyncio.gather(self.cluster_info(), self.broker_live_tables())
        rows = []
        for cluster, names in info.cluster_addr_table.items():
            for name in sorted(names):
                data = info.broker_addr_table.get(name)
                for broker_id, addr in sorted(data.broker_addrs.items()) if data else ():
                    rows.append(BrokerRow(cluster, name, broker_id, addr, heartbeats={
                        ns: _heartbeat(ns, table, addr) for ns, table in live.items()}))
        if runtime:
            answers = await asyncio.gather(*(self._settled(self.broker_runtime_info(r.addr)) for r in rows))
            for row, answer in zip(rows, answers, strict=True):
                if isinstance(answer, MQClientError):
                    row.error = str(answer)
                else:
                    row.runtime = answer
        return ClusterSnapshot(list(self.namesrv_addrs), {c: sorted(n) for c, n in info.cluster_addr_table.items()},
                               rows, any(t is not None for t in live.values()))

    async def topic_list(self) -> list[str]:
        resp = await self.call(None, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return sorted(TopicList.from_json(resp.body or b"{}").topic_list)

    async def topics_by_cluster(self, cluster: str) -> list[str]:
        resp = await self.call(None, RequestCode.GET_TOPICS_BY_CLUSTER, GetTopicsByClusterRequestHeader(cluster).to_ext())
        return sorted(TopicList.from_json(resp.body or b"{}").topic_list)

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The name server's route; TopicNotExistError for an unknown topic."""
        return (await self._route(topic)).data

    async def put_kv(self, namespace: str, key: str, value: str) -> None:
        await self._each_namesrv(RequestCode.PUT_KV_CONFIG, KVConfigRequestHeader(namespace, key, value).to_ext())

    async def get_kv(self, namespace: str, key: str) -> str | None:
        resp = await self.call(None, RequestCode.GET_KV_CONFIG, KVConfigRequestHeader(namespace, key).to_ext(),
                               ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND))
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        return GetKVConfigResponseHeader.from_ext(resp.ext_fields).value

    async def delete_kv(self, namespace: str, key: str) -> None:
        await self._each_namesrv(RequestCode.DELETE_KV_CONFIG, KVConfigRequestHeader(namespace, key).to_ext())

    async def kv_list(self, namespace: str) -> dict[str, str]:
        resp = await self.call(None, RequestCode.GET_KVLIST_BY_NAMESPACE,
                               GetKVListByNamespaceRequestHeader(namespace).to_ext(),
                               ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND))
        return KVTable.from_json(resp.body).table if resp.body else {}

    async def wipe_write_perm(self, broker_name: str) -> dict[str, int]:
        """Take write permission from a broker on every name server; topics affected per name server."""
        return await self._perm(RequestCode.WIPE_WRITE_PERM_OF_BROKER, broker_name, "wipeTopicCount")

    async def add_write_perm(self, broker_name: str) -> dict[str, int]:
        return await self._perm(RequestCode.ADD_WRITE_PERM_OF_BROKER, broker_name, "addTopicCount")

    async def _perm(self, code: int, broker_name: str, count_key: str) -> dict[str, int]:
        results = await self._each_namesrv(code, BrokerNameRequestHeader(broker_name).to_ext())
        return {addr: int(resp.ext_fields.get(count_key, 0)) for addr, resp in results.items()}

    # topics ---------------------------------------------------------------------------

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

    # subscription groups --------------------------------------------------------------

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

    # consumers and producers ----------------------------------------------------------

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

    # offsets -------------------------------------------------------------------------

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

    # messages -------------------------------------------------------------------------

    async def view_message(self, offset_msg_id: str) -> MessageExt:
        """By offsetMsgId: the id names the storing broker and the commit log offset."""
        try:
            (host, port), offset = decode_offset_msg_id(offset_msg_id)
        except ValueError as exc:
            raise MQClientError(f"not an offset message id: {offset_msg_id!r} ({exc})") from None
        resp = await self.call(f"{host}:{port}", RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset).to_ext())
        messages = decode_pull_body(resp.body)
        if not messages:
            raise MQClientError(f"no message at {offset_msg_id}")
        return messages[0]

    async def query_by_key(self, topic: str, key: str, *, max_num: int = 64, begin_ms: int = 0,
                           end_ms: int | None = None) -> list[MessageExt]:
        """QUERY_MESSAGE on every broker of the topic: messages whose KEYS hold `key`, oldest first."""
        return await self._query(topic, key, max_num, begin_ms, end_ms, unique=False)

    async def query_by_unique_key(self, topic: str, uniq_key: str, *, begin_ms: int = 0,
                                  end_ms: int | None = None) -> list[MessageExt]:
        """By msgId (the producer's UNIQ_KEY); more than one hit means the message was sent again."""
        found = await self._query(topic, uniq_key, 32, begin_ms, end_ms, unique=True)
        return [m for m in found if m.properties.get(P.UNIQ_KEY) == uniq_key]

    async def _query(self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int | None, *,
                     unique: bool) -> list[MessageExt]:
        end = end_ms if end_ms is not None else int(time.time() * 1000) + 60_000
        ext = QueryMessageRequestHeader(topic, key, max_num, begin_ms, end).to_ext()
        if unique:
            ext[UNIQUE_KEY_QUERY] = "true"
        answers = await self._each(list((await self.route_masters(topic)).values()), lambda a: self.call(
            a, RequestCode.QUERY_MESSAGE, ext, ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND)))
        found = [m for r in answers.values() if r.code == ResponseCode.SUCCESS for m in decode_pull_body(r.body)]
        return sorted(found, key=lambda m: (m.store_timestamp, m.commit_log_offset))[:max_num]

    async def message_at(self, mq: MessageQueue, offset: int, group: str = TOOLS_CONSUMER_GROUP) -> MessageExt | None:
        """The message at one queue offset, None past the end or before the start of the queue."""
        if MASTER_ID not in (await self._route(mq.topic)).broker_addrs.get(mq.broker_name, {}):
            raise MQClientError(f"broker {mq.broker_name} has no master serving {mq.topic}")
        with unreachable():
            result = await pull_once(self.instance, group, mq, parse_subscription(mq.topic, "*"), offset, max_nums=1)
        return next((m for m in result.messages if m.queue_offset == offset), None)

    # brokers --------------------------------------------------------------------------

    async def broker_runtime_info(self, broker_addr: str) -> BrokerRuntime:
        resp = await self.call(broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        return BrokerRuntime.from_table(KVTable.from_json(resp.body or b"{}").table)

    async def broker_config(self, broker_addr: str) -> dict[str, str]:
        resp = await self.call(broker_addr, RequestCode.GET_BROKER_CONFIG)
        return parse_properties((resp.body or b"").decode("utf-8"))

    async def update_broker_config(self, broker_addr: str, values: dict[str, str]) -> None:
        if not values:
            raise MQClientError("nothing to update")
        body = render_properties(values).encode("utf-8")
        await self.call(broker_addr, RequestCode.UPDATE_BROKER_CONFIG, body=body)

    async def ha_status(self, broker_addr: str) -> HAStatus:
        """GET_BROKER_HA_STATUS: a master with its slaves and their lag, or a slave with its HA client."""
        resp = await self.call(broker_addr, RequestCode.GET_BROKER_HA_STATUS)
        return HAStatus.from_json(json.loads(resp.body or b"{}"))

    async def broker_stats(self, broker_addr: str, stats_name: str, stats_key: str) -> BrokerStatsData:
        """VIEW_BROKER_STATS_DATA, e.g. ("TOPIC_PUT_NUMS", topic) or ("GROUP_GET_NUMS", "topic@group")."""
        resp = await self.call(broker_addr, RequestCode.VIEW_BROKER_STATS_DATA,
                               ViewBrokerStatsDataRequestHeader(stats_name, stats_key).to_ext())
        return BrokerStatsData.from_json(resp.body or b"{}")




def _heartbeat(namesrv: str, table: BrokerLiveTable | None, addr: str) -> Heartbeat | None:
    if table is None:
        return None
    entry = next((e for e in table.brokers if e.broker_addr == addr), None)
    if entry is None:
        return None
    return Heartbeat(namesrv, entry.last_update_timestamp, table.now, entry.heartbeat_timeout_millis)
