"""Every topic on one page: queues, permission, brokers, message count and put TPS.

A live view cannot afford a route lookup per topic on a cluster of thousands: the topic configs come
from one GET_ALL_TOPIC_CONFIG per broker set (its master, else a slave), and only the figures that exist
per topic (offsets, put statistics) are asked per topic of the replica that answered, a bounded number at
a time.
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
from mqtools.client.errors import MQClientError, UnreachableError
from mqtools.common.presentation import Unreachable
from mqtools.remoting.bodies import TopicConfig, TopicStatsTable
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import TopicRequestHeader


class TopicOverviewAdmin(AdminService):
    """One line per topic from each broker set's topic configs, with per-topic offsets and put TPS."""

    async def topic_overview(self, *, stats: bool = True) -> TopicOverview:
        """Every topic but retry and DLQ ones, sorted; without `stats`, messages and TPS are None (one request per
        broker set in all). Each set is read from its master, else a slave (its figures then come from that slave);
        a set no replica answered for, or whose master refused, is named in `unreachable`: its topics are missing
        and the figures of topics it also holds leave it out."""
        info = await self.admin.cluster_info()
        sets = {name: data.broker_addrs for name, data in info.broker_addr_table.items()}
        read = (await self.admin.read_sets(sets, self._configs)).doubt_slaves("topics", lambda table: not table)
        reserved = set(info.cluster_addr_table) | set(info.broker_addr_table)
        held: dict[str, list[tuple[str, str, TopicConfig]]] = defaultdict(list)
        missed = list(read.unreachable)
        for name, answer in sorted(read.reads.items()):
            if isinstance(answer.value, MQClientError):
                missed.append(Unreachable(name, answer.addr, str(answer.value)))
                continue
            for topic, config in answer.value.items():
                if topic_kind(topic, reserved) in ("normal", "system"):
                    held[topic].append((name, answer.addr, config))
        topics = sorted(held)
        if stats:
            figures = await _bounded([partial(self._topic_figures, t, [a for _, a, _ in held[t]]) for t in topics])
        else:
            figures = [(None, None)] * len(topics)
        lines = [_line(topic, topic_kind(topic, reserved), held[topic], messages, tps)
                 for topic, (messages, tps) in zip(topics, figures, strict=True)]
        slaves = [name for name in read.from_slaves() if not isinstance(read.reads[name].value, MQClientError)]
        return TopicOverview(lines, sorted(missed, key=lambda u: u.broker_name or ""), slaves)

    async def _configs(self, addr: str) -> dict[str, TopicConfig] | MQClientError:
        """A replica's topic configs; a refusal is its set's answer (no other replica is asked), kept as the error so
        that one refusing broker does not sink the page."""
        try:
            return await self.admin.topics.topic_configs(addr)
        except UnreachableError:
            raise
        except MQClientError as exc:
            return exc

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
