"""Views that join topics, groups and brokers: whether each group consumed a message (mqadmin's
message track) and per topic and group backlog, TPS and 24-hour counts (statsAll)."""

from __future__ import annotations

import asyncio

from mqtools.client.admin.base import NO_MASTER, AdminService, reason_of
from mqtools.client.admin.models.brokers import StatsAll, TopicGroupStats
from mqtools.client.admin.models.messages import MessageTrack, MessageTracks
from mqtools.client.client_api import decode_pull_body
from mqtools.client.errors import MQBrokerError, MQClientError, UnreachableError
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.codec import CorruptMessageError
from mqtools.common.message import MessageExt
from mqtools.common.presentation import Unreachable, sets_missed
from mqtools.common.topics import is_dlq_topic, is_retry_topic
from mqtools.remoting.bodies import BrokerStatsData
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import ViewMessageRequestHeader

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
GROUP_GET_NUMS = "GROUP_GET_NUMS"


class TrackingAdmin(AdminService):
    """Message tracks and statsAll: answers that need topics, groups and brokers together."""

    async def message_tracks(self, msg: MessageExt) -> MessageTracks:
        """For each group consuming the message's topic: consumed, not yet, offline or pulling; and the sets
        whose groups could not be read, or whose offsets a group's track needed and could not be read."""
        consumers = await self.admin.topics.topic_consumed_by(msg.topic)
        tracks: list[MessageTrack] = []
        missed: list[Unreachable] = []
        stored_by: str | Unreachable | None = None  # read once, when a push group needs it
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
                if stored_by is None:
                    stored_by = await self._stored_by(msg)
                tracks.append(await self._push_track(msg, group, conns.subscriptions, stored_by, missed))
            else:
                tracks.append(MessageTrack(group, "UNKNOWN"))
        return MessageTracks(tracks, sets_missed([consumers.unreachable, missed]))

    async def _stored_by(self, msg: MessageExt) -> str | Unreachable:
        """The broker set that stored the message (a master did): the one its store host is registered in, as
        master or, since an election, as a slave; else (that master left the route) the one whose commit log
        holds it at its offset, as a replica's is its master's byte for byte. Unreachable naming the store host
        when neither tells: no queue's offsets can then be compared with it."""
        host = f"{msg.store_host[0]}:{msg.store_host[1]}"
        sets = await self.admin._settled(self.admin.topics.topic_sets(msg.topic))
        if isinstance(sets, MQClientError):
            return Unreachable(None, host, f"its set not known: the route of {msg.topic}: {sets}")
        registered = [name for name, addrs in sorted(sets.items()) if host in addrs.values()]
        if registered:
            return registered[0]
        ext = ViewMessageRequestHeader(msg.commit_log_offset).to_ext()

        async def holds(addr: str) -> bool:
            resp = await self.admin.call(addr, RequestCode.VIEW_MESSAGE_BY_ID, ext, ok=tuple(ResponseCode))
            try:
                found = decode_pull_body(resp.body) if resp.code == ResponseCode.SUCCESS else []
            except CorruptMessageError:  # no entry starts at that offset of this set's commit log
                return False
            return any(tuple(m.store_host) == tuple(msg.store_host) and m.queue_offset == msg.queue_offset
                       for m in found)

        read = await self.admin.read_sets(sets, holds)
        holding = [name for name, r in read.reads.items() if r.value]
        if len(holding) == 1:
            return holding[0]
        return Unreachable(None, host, "not registered, and no one set of the topic answered that it holds the "
                                       "message: its set not known")

    async def _push_track(self, msg: MessageExt, group: str, subscriptions: dict[str, str],
                          stored_by: str | Unreachable, missed: list[Unreachable]) -> MessageTrack:
        """CONSUMED once the group's offset on the message's queue, in the set that stored it, is past it;
        UNKNOWN, and what was missed added to `missed`, when that set or its offsets of the group are not known."""
        if isinstance(stored_by, Unreachable):
            missed.append(stored_by)
            return MessageTrack(group, "UNKNOWN", str(stored_by))
        try:
            progress = await self.admin.groups.consumer_progress(group, msg.topic)
        except MQClientError as exc:
            return MessageTrack(group, "UNKNOWN", str(exc))
        lost = next((u for u in progress.unreachable if u.broker_name == stored_by), None)
        if lost is not None:
            missed.append(lost)
            return MessageTrack(group, "UNKNOWN", str(lost))
        consumed = any(q.queue.broker_name == stored_by and q.queue.queue_id == msg.queue_id
                       and (q.consumer_offset or 0) > msg.queue_offset for q in progress.queues)
        if not consumed:
            return MessageTrack(group, "NOT_CONSUME_YET")
        expression = subscriptions.get(msg.topic)
        tags = {t.strip() for t in expression.split("||") if t.strip()} if expression else set()
        return MessageTrack(group, "CONSUMED" if not tags or "*" in tags or msg.tags in tags
                            else "CONSUMED_BUT_FILTERED")

    async def stats_all(self, topic: str | None = None, *, active_only: bool = False) -> StatsAll:
        """statsAll: per topic (all but retry and DLQ topics) and consuming group, backlog, TPS over the
        last minute and messages in and out over 24 hours; a broker that cannot be asked makes a
        figure None, a counter a broker never started counts 0 (nothing happened there). A set with no
        master, whose master did not answer, or whose groups or offsets no replica answered for, is named:
        its figures are not in the sums, and each row says which of its figures leave a set out."""
        topics = [topic] if topic else [t for t in await self.admin.topics.topic_list()
                                        if not is_retry_topic(t) and not is_dlq_topic(t)]
        rows: list[TopicGroupStats] = []
        missed: list[Unreachable] = []
        for name in topics:
            rows += await self._topic_stats_rows(name, active_only, missed)
        return StatsAll(rows, sets_missed([missed]))

    async def _topic_stats_rows(self, topic: str, active_only: bool,
                                missed: list[Unreachable]) -> list[TopicGroupStats]:
        """The topic's rows; the sets left out of its figures are added to `missed`. `active_only` leaves a
        row out only when it is known to have had no traffic in 24 hours: its counts read from every set, 0."""
        sets = await self.admin.topics.topic_sets(topic)
        consumers = await self.admin.topics.topic_consumed_by(topic)
        missed += consumers.unreachable  # first: its reason says the master is gone too, where it is
        missed += [Unreachable(name, None, f"{NO_MASTER}: the put and get counters are its master's")
                   for name, addrs in sets.items() if MASTER_ID not in addrs]
        masters = {name: addrs[MASTER_ID] for name, addrs in sets.items() if MASTER_ID in addrs}
        left_out = len(masters) < len(sets)  # a set left out of the sums may have had traffic
        in_tps, in_24h = await self._summed_over(masters, TOPIC_PUT_NUMS, topic, missed)
        groups = consumers.groups
        if not groups:
            if active_only and not left_out and in_24h == 0:
                return []
            return [TopicGroupStats(topic, None, 0, in_tps, None, in_24h, None, sums_partial=left_out)]
        rows = []
        for group in groups:
            out_tps, out_24h = await self._summed_over(masters, GROUP_GET_NUMS, f"{topic}@{group}", missed)
            progress = await self.admin._settled(self.admin.groups.consumer_progress(group, topic))
            backlog: int | None = None
            backlog_partial = False
            if not isinstance(progress, MQClientError):
                backlog = progress.total_diff
                backlog_partial = bool(progress.unreachable)
                missed += progress.unreachable  # the backlog leaves out the sets it could not read
            if active_only and not left_out and in_24h == 0 and out_24h == 0:
                continue
            rows.append(TopicGroupStats(topic, group, backlog, in_tps, out_tps, in_24h, out_24h, sums_partial=left_out,
                                        backlog_partial=backlog_partial))
        return rows

    async def summed(self, addrs: list[str], stats_name: str, key: str) -> tuple[float | None, int | None]:
        """A stats item's minute TPS and day total summed over brokers; (None, None) when one could not be asked."""
        return _sums(await self._stats(addrs, stats_name, key))

    async def _summed_over(self, masters: dict[str, str], stats_name: str, key: str,
                           missed: list[Unreachable]) -> tuple[float | None, int | None]:
        """`summed` over the masters of named sets; a master that could not be asked is added to `missed`, as
        its figure, and so the sum, is not known (a hung master is still registered)."""
        answers = await self._stats(list(masters.values()), stats_name, key)
        missed += [Unreachable(name, addr, reason_of(a) if isinstance(a, UnreachableError) else str(a))
                   for (name, addr), a in zip(masters.items(), answers, strict=True) if _unasked(a)]
        return _sums(answers)

    async def _stats(self, addrs: list[str], stats_name: str, key: str) -> list[BrokerStatsData | MQClientError]:
        return list(await asyncio.gather(*(self.admin._settled(self.admin.brokers.broker_stats(a, stats_name, key))
                                           for a in addrs)))


def _unasked(answer: BrokerStatsData | MQClientError) -> bool:
    """The broker could not be asked (a refusal is an answer: it never counted the item)."""
    return isinstance(answer, MQClientError) and not isinstance(answer, MQBrokerError)


def _sums(answers: list[BrokerStatsData | MQClientError]) -> tuple[float | None, int | None]:
    """Minute TPS and day total summed over the answers; (None, None) when a broker could not be asked."""
    if any(_unasked(a) for a in answers):
        return None, None
    known = [a for a in answers if isinstance(a, BrokerStatsData)]
    return sum(a.stats_minute.tps for a in known), sum(_day_sum(a) for a in known)


def _day_sum(data: BrokerStatsData) -> int:
    """mqadmin's compute24HourSum: the day's sum, else the hour's, else the minute's."""
    return data.stats_day.sum or data.stats_hour.sum or data.stats_minute.sum
