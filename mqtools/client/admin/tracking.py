"""Views that join topics, groups and brokers: whether each group consumed a message (mqadmin's
message track) and per topic and group backlog, TPS and 24-hour counts (statsAll)."""

from __future__ import annotations

import asyncio

from mqtools.client.admin.base import NO_MASTER, AdminService
from mqtools.client.admin.models.brokers import StatsAll, TopicGroupStats
from mqtools.client.admin.models.messages import MessageTrack, MessageTracks
from mqtools.client.errors import MQBrokerError, MQClientError
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.message import MessageExt
from mqtools.common.presentation import Unreachable, sets_missed
from mqtools.common.topics import is_dlq_topic, is_retry_topic
from mqtools.remoting.bodies import BrokerStatsData
from mqtools.remoting.codes import ResponseCode

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
GROUP_GET_NUMS = "GROUP_GET_NUMS"


class TrackingAdmin(AdminService):
    """Message tracks and statsAll: answers that need topics, groups and brokers together."""

    async def message_tracks(self, msg: MessageExt) -> MessageTracks:
        """For each group consuming the message's topic: consumed, not yet, offline or pulling; and the sets
        whose groups could not be read."""
        consumers = await self.admin.topics.topic_consumed_by(msg.topic)
        tracks = []
        for group in consumers.groups:
            try:
                conns = await self.admin.groups.consumer_connections(group)
            except MQBrokerError as exc:
                kind = "NOT_ONLINE" if exc.code == ResponseCode.CONSUMER_NOT_ONLINE else "UNKNOWN"
                tracks.append(MessageTrack(group, kind, f"CODE:{exc.code} DESC:{exc.remark}"))
                continue
            except MQClientError as exc:
                tracks.append(MessageTrack(group, "UNKNOWN", str(exc)))
                continue
            if conns.consume_type == "CONSUME_ACTIVELY":
                tracks.append(MessageTrack(group, "PULL"))
            elif conns.consume_type == "CONSUME_PASSIVELY":
                tracks.append(MessageTrack(group, await self._push_track(msg, group, conns.subscriptions)))
            else:
                tracks.append(MessageTrack(group, "UNKNOWN"))
        return MessageTracks(tracks, consumers.unreachable)

    async def _push_track(self, msg: MessageExt, group: str, subscriptions: dict[str, str]) -> str:
        """CONSUMED once the group's offset on the message's queue (at its storing master) is past it."""
        host, port = msg.store_host
        masters = await self.admin.route_masters(msg.topic)
        progress = await self.admin.groups.consumer_progress(group, msg.topic)
        consumed = any(q.queue.queue_id == msg.queue_id and masters.get(q.queue.broker_name) == f"{host}:{port}"
                       and (q.consumer_offset or 0) > msg.queue_offset for q in progress.queues)
        if not consumed:
            return "NOT_CONSUME_YET"
        expression = subscriptions.get(msg.topic)
        tags = {t.strip() for t in expression.split("||") if t.strip()} if expression else set()
        return "CONSUMED" if not tags or "*" in tags or msg.tags in tags else "CONSUMED_BUT_FILTERED"

    async def stats_all(self, topic: str | None = None, *, active_only: bool = False) -> StatsAll:
        """statsAll: per topic (all but retry and DLQ topics) and consuming group, backlog, TPS over the
        last minute and messages in and out over 24 hours; a broker that cannot be asked makes a
        figure None, a counter a broker never started counts 0 (nothing happened there). A set with no
        master, or whose groups no replica answered for, is named: its figures are not in the sums."""
        topics = [topic] if topic else [t for t in await self.admin.topics.topic_list()
                                        if not is_retry_topic(t) and not is_dlq_topic(t)]
        rows: list[TopicGroupStats] = []
        missed: list[Unreachable] = []
        for name in topics:
            rows += await self._topic_stats_rows(name, active_only, missed)
        return StatsAll(rows, sets_missed([missed]))

    async def _topic_stats_rows(self, topic: str, active_only: bool,
                                missed: list[Unreachable]) -> list[TopicGroupStats]:
        """The topic's rows; the sets left out of its figures are added to `missed`."""
        sets = await self.admin.topics.topic_sets(topic)
        masters = [addrs[MASTER_ID] for addrs in sets.values() if MASTER_ID in addrs]
        in_tps, in_24h = await self.summed(masters, TOPIC_PUT_NUMS, topic)
        consumers = await self.admin.topics.topic_consumed_by(topic)
        missed += consumers.unreachable  # first: its reason says the master is gone too, where it is
        missed += [Unreachable(name, None, f"{NO_MASTER}: the put and get counters are its master's")
                   for name, addrs in sets.items() if MASTER_ID not in addrs]
        groups = consumers.groups
        if not groups:
            if active_only and not in_24h:
                return []
            return [TopicGroupStats(topic, None, 0, in_tps, None, in_24h, None)]
        rows = []
        for group in groups:
            out_tps, out_24h = await self.summed(masters, GROUP_GET_NUMS, f"{topic}@{group}")
            progress = await self.admin._settled(self.admin.groups.consumer_progress(group, topic))
            backlog = None if isinstance(progress, MQClientError) else progress.total_diff
            if active_only and not in_24h and not out_24h:
                continue
            rows.append(TopicGroupStats(topic, group, backlog, in_tps, out_tps, in_24h, out_24h))
        return rows

    async def summed(self, addrs: list[str], stats_name: str, key: str) -> tuple[float | None, int | None]:
        """A stats item's minute TPS and day total summed over brokers; (None, None) when one could not be asked."""
        answers = await asyncio.gather(*(self.admin._settled(self.admin.brokers.broker_stats(a, stats_name, key)) for a in addrs))
        if any(isinstance(a, MQClientError) and not isinstance(a, MQBrokerError) for a in answers):
            return None, None
        known = [a for a in answers if isinstance(a, BrokerStatsData)]
        return sum(a.stats_minute.tps for a in known), sum(_day_sum(a) for a in known)


def _day_sum(data: BrokerStatsData) -> int:
    """mqadmin's compute24HourSum: the day's sum, else the hour's, else the minute's."""
    return data.stats_day.sum or data.stats_hour.sum or data.stats_minute.sum
