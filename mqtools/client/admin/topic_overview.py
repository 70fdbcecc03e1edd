"""Every topic on one page: queues, permission, brokers, message count and put TPS.

A live view cannot afford a route lookup per topic on a cluster of thousands: the topic configs come
from one GET_ALL_TOPIC_CONFIG per master, and only the figures that exist per topic (offsets, put
statistics) are asked per topic and master, a bounded number at a time.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from functools import partial

from mqtools.client.admin.base import AdminService
from mqtools.client.admin.models.live import TopicLine, TopicOverview
from mqtools.client.admin.models.topics import topic_kind
from mqtools.client.admin.overview import _bounded
from mqtools.client.admin.tracking import TOPIC_PUT_NUMS
from mqtools.client.errors import MQClientError
from mqtools.common.brokerrole import MASTER_ID
from mqtools.remoting.bodies import TopicConfig, TopicStatsTable
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import TopicRequestHeader


class TopicOverviewAdmin(AdminService):
    """One line per topic from the masters' topic configs, with per-topic offsets and put TPS."""

    async def topic_overview(self, *, stats: bool = True) -> TopicOverview:
        """Every topic but retry and DLQ ones, sorted; without `stats`, messages and TPS are None
        (one request per master in all). A master that cannot be asked is in `errors`."""
        info = await self.admin.cluster_info()
        masters = {name: data.broker_addrs[MASTER_ID] for name, data in sorted(info.broker_addr_table.items())
                   if MASTER_ID in data.broker_addrs}
        tables = await self.admin._each(list(masters.values()), lambda a: self.admin._settled(self.admin.topics.topic_configs(a)))
        reserved = set(info.cluster_addr_table) | set(info.broker_addr_table)
        held: dict[str, list[tuple[str, str, TopicConfig]]] = defaultdict(list)
        errors: dict[str, str] = {}
        for name, addr in masters.items():
            table = tables[addr]
            if isinstance(table, MQClientError):
                errors[addr] = str(table)
                continue
            for topic, config in table.items():
                if topic_kind(topic, reserved) in ("normal", "system"):
                    held[topic].append((name, addr, config))
        topics = sorted(held)
        if stats:
            figures = await _bounded([partial(self._topic_figures, t, [a for _, a, _ in held[t]]) for t in topics])
        else:
            figures = [(None, None)] * len(topics)
        lines = [_line(topic, topic_kind(topic, reserved), held[topic], messages, tps)
                 for topic, (messages, tps) in zip(topics, figures, strict=True)]
        return TopicOverview(lines, errors)

    async def _topic_figures(self, topic: str, addrs: list[str]) -> tuple[int | None, float | None]:
        """(messages held, put TPS) over the given masters; None for what one of them could not tell."""
        ext = TopicRequestHeader(topic).to_ext()
        answers, (tps, _) = await asyncio.gather(
            asyncio.gather(*(self.admin._settled(self.admin.call(a, RequestCode.GET_TOPIC_STATS_INFO, ext,
                                                     ok=(ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST)))
                             for a in addrs)),
            self.admin.tracking.summed(addrs, TOPIC_PUT_NUMS, topic))
        messages: int | None = 0
        for answer in answers:
            if isinstance(answer, MQClientError):
                messages = None
            elif messages is not None and answer.code == ResponseCode.SUCCESS:
                table = TopicStatsTable.from_json(answer.body or b"{}").offset_table
                messages += sum(o.max_offset - o.min_offset for o in table.values())
        return messages, tps


def _line(topic: str, kind: str, held: list[tuple[str, str, TopicConfig]], messages: int | None,
          tps: float | None) -> TopicLine:
    perms = {config.perm for _, _, config in held}
    return TopicLine(topic, kind, sorted(name for name, _, _ in held),
                     sum(c.read_queue_nums for _, _, c in held), sum(c.write_queue_nums for _, _, c in held),
                     perms.pop() if len(perms) == 1 else None, messages, tps)
