"""One broker at a time: runtime figures, config, HA status, stats, every group's lag."""

from __future__ import annotations

import json

from mqtools.client.admin.base import AdminService
from mqtools.client.admin.models.brokers import BrokerConsumeStats, BrokerRuntime, QueueLag
from mqtools.client.admin.models.ha import HAStatus
from mqtools.client.admin.models.parse import queue_key
from mqtools.client.errors import MQClientError
from mqtools.common.javaprops import parse_properties, render_properties
from mqtools.remoting.bodies import BrokerStatsData, ConsumeStatsList, KVTable
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.headers import GetConsumeStatsInBrokerHeader, ViewBrokerStatsDataRequestHeader


class BrokerAdmin(AdminService):
    """One broker at a time: runtime figures, config, HA status, stats, every group's lag."""

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
