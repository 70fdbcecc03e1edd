"""One broker at a time: runtime figures, config, HA status, stats, every group's lag; a queue's consume-queue units
and the producers the masters know, broker set by broker set."""

from __future__ import annotations

import json

from mqtools.client.admin.base import NO_MASTER, AdminService, broker_sets
from mqtools.client.admin.models.brokers import BrokerConsumeStats, BrokerRuntime, QueueLag
from mqtools.client.admin.models.connections import ProducerInstance, ProducerTable
from mqtools.client.admin.models.consume_queue import BrokerQueueUnits, ConsumeQueueUnits, QueueUnit
from mqtools.client.admin.models.ha import HAStatus
from mqtools.client.admin.models.parse import queue_key
from mqtools.client.errors import MQClientError
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.javaprops import parse_properties, render_properties
from mqtools.common.presentation import Unreachable
from mqtools.remoting.bodies import (
    BrokerStatsData,
    ConsumeStatsList,
    KVTable,
    ProducerTableInfo,
    QueryConsumeQueueResponseBody,
)
from mqtools.remoting.body_codec import to_obj
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import (
    GetConsumeStatsInBrokerHeader,
    QueryConsumeQueueRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)


class BrokerAdmin(AdminService):
    """One broker at a time: runtime figures, config, HA status, stats, every group's lag; consume-queue units and
    producer tables."""

    async def broker_runtime_info(self, broker_addr: str) -> BrokerRuntime:
        resp = await self.admin.call(broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        return BrokerRuntime.from_table(KVTable.from_json(resp.body or b"{}").table)

    async def broker_config(self, broker_addr: str) -> dict[str, str]:
        resp = await self.admin.call(broker_addr, RequestCode.GET_BROKER_CONFIG)
        return parse_properties((resp.body or b"").decode("utf-8"))

    async def update_broker_config(self, broker_addr: str, values: dict[str, str]) -> None:
        if not values:
            raise MQClientError("nothing to update")
        body = render_properties(values).encode("utf-8")
        await self.admin.call(broker_addr, RequestCode.UPDATE_BROKER_CONFIG, body=body)

    async def ha_status(self, broker_addr: str) -> HAStatus:
        """GET_BROKER_HA_STATUS: a master with its slaves and their lag, or a slave with its HA client."""
        resp = await self.admin.call(broker_addr, RequestCode.GET_BROKER_HA_STATUS)
        return HAStatus.from_json(json.loads(resp.body or b"{}"))

    async def broker_stats(self, broker_addr: str, stats_name: str, stats_key: str) -> BrokerStatsData:
        """VIEW_BROKER_STATS_DATA, e.g. ("TOPIC_PUT_NUMS", topic) or ("GROUP_GET_NUMS", "topic@group")."""
        resp = await self.admin.call(broker_addr, RequestCode.VIEW_BROKER_STATS_DATA,
                               ViewBrokerStatsDataRequestHeader(stats_name, stats_key).to_ext())
        return BrokerStatsData.from_json(resp.body or b"{}")

    async def broker_consume_stats(self, broker_addr: str, *, order_only: bool = False,
                                   timeout: float | None = None) -> BrokerConsumeStats:
        """GET_BROKER_CONSUME_STATS: every group's offsets on one broker, queues in mqadmin's order."""
        resp = await self.admin.call(broker_addr, RequestCode.GET_BROKER_CONSUME_STATS,
                               GetConsumeStatsInBrokerHeader(order_only).to_ext(), timeout=timeout)
        answer = ConsumeStatsList.from_json(resp.body or b"{}")
        queues = [QueueLag(group, mq, w.broker_offset, w.consumer_offset, w.last_timestamp or None)
                  for per_group in answer.consume_stats_list for group, per_topic in per_group.items()
                  for stats in per_topic
                  for mq, w in sorted(stats.offset_table.items(), key=lambda kv: queue_key(kv[0]))]
        return BrokerConsumeStats(answer.broker_addr, answer.total_diff, queues)

    async def clean_expired_consume_queue(self, broker_addr: str) -> None:
        """CLEAN_EXPIRED_CONSUMEQUEUE: drop consume-queue data that points before the commitlog's start."""
        await self.admin.call(broker_addr, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)

    async def consume_queue_units(self, topic: str, queue_id: int, index: int, count: int, *,
                                  group: str | None = None, broker_addr: str | None = None) -> ConsumeQueueUnits:
        """QUERY_CONSUME_QUEUE: up to `count` units of queue `queue_id` from `index` (within the consume-queue file
        that holds it), from one broker, or from each set serving the topic: its master, else a slave (which
        holds the same queue). A set no replica answered for is named; a queue or index a broker does not hold
        is its answer's remark."""
        code = RequestCode.QUERY_CONSUME_QUEUE
        ext = QueryConsumeQueueRequestHeader(topic, queue_id, index, count, group).to_ext()
        ok = (ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR)

        async def ask(addr: str) -> RemotingCommand:
            return await self.admin.call(addr, code, ext, ok=ok)

        if broker_addr is not None:
            target = ((await self._names()).get(broker_addr), broker_addr)
            answered, missed = await self.admin.ask_each([target], code, ext, ok=ok)
            answers = {name: (addr, resp) for name, addr, resp in answered}
        else:
            read = await self.admin.read_sets(broker_sets(await self.admin._route(topic)), ask)
            answers = {name: (r.addr, r.value) for name, r in read.reads.items()}
            missed = read.unreachable
        brokers = [_queue_units(name, addr, index, resp)
                   for name, (addr, resp) in sorted(answers.items(), key=lambda kv: kv[0] or "")]
        return ConsumeQueueUnits(topic, queue_id, index, count, group, brokers, missed)

    async def producer_table(self, broker_addr: str | None = None) -> ProducerTable:
        """GET_ALL_PRODUCER_INFO of one broker, or of every master (producers connect to masters only: a set
        without one, or whose master does not answer, is named, its producers unknown)."""
        if broker_addr is not None:
            targets: list[tuple[str | None, str]] = [((await self._names()).get(broker_addr), broker_addr)]
            missed: list[Unreachable] = []
        else:
            sets = await self.admin.all_sets()
            targets = [(n, addrs[MASTER_ID]) for n, addrs in sorted(sets.items()) if MASTER_ID in addrs]
            missed = [Unreachable(n, None, f"{NO_MASTER}: producers connect to masters")
                      for n, addrs in sorted(sets.items()) if MASTER_ID not in addrs]
        answered, unreachable = await self.admin.ask_each(targets, RequestCode.GET_ALL_PRODUCER_INFO)
        producers: list[ProducerInstance] = []
        for name, addr, resp in answered:
            table = ProducerTableInfo.from_json(resp.body or b"{}").data
            producers += [ProducerInstance(name, addr, group, p.client_id, p.remote_ip, p.language, p.version,
                                           p.last_update_timestamp)
                          for group in sorted(table) for p in sorted(table[group], key=lambda p: p.client_id)]
        missed += unreachable
        return ProducerTable(producers, sorted(missed, key=lambda u: u.broker_name or ""))

    async def _names(self) -> dict[str, str]:
        """address -> broker name as the name servers list it; empty when they cannot be read (a broker given by
        address is still asked)."""
        try:
            return {a: n for n, addrs in (await self.admin.all_sets()).items() for a in addrs.values()}
        except MQClientError:
            return {}


def _queue_units(name: str | None, addr: str, index: int, resp: RemotingCommand) -> BrokerQueueUnits:
    """One broker's QUERY_CONSUME_QUEUE answer: SYSTEM_ERROR when it does not hold the queue, a success without a
    body when it does not hold the index (Apache's answers, both with a remark)."""
    if resp.code != ResponseCode.SUCCESS or not resp.body:
        return BrokerQueueUnits(name, addr, None, None, None, resp.remark or "no answer body")
    body = QueryConsumeQueueResponseBody.from_json(resp.body)
    sub = body.subscription_data
    units = [QueueUnit(index + i, u.physic_offset, u.physic_size, u.tags_code) for i, u in enumerate(body.queue_data or [])]
    return BrokerQueueUnits(name, addr, body.min_queue_index, body.max_queue_index, units, None,
                            sub.sub_string if sub is not None else None, body.filter_data,
                            dict(sorted(to_obj(sub).items())) if sub is not None else None)
