"""Consumer-side requests (RocketMQ's ConsumerManageProcessor, SendMessageProcessor's send-back and
the group requests of AdminBrokerProcessor): offsets, retry / DLQ, group admin, consume stats, reset.

QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET, CONSUMER_SEND_MSG_BACK,
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP, GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
GET_ALL_CONSUMER_OFFSET, GET_CONSUME_STATS, GET_BROKER_CONSUME_STATS, INVOKE_BROKER_TO_RESET_OFFSET.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from mqtools.common import properties as P
from mqtools.common.javanum import INT_MAX, LONG_MAX, LONG_MIN
from mqtools.common.message import MessageExt, MessageExtBrokerInner, reput_copy
from mqtools.common.perm import PERM_READ, PERM_WRITE, is_writeable
from mqtools.common.topics import dlq_topic, retry_topic
from mqtools.common.validation import ValidationError, check_group, check_topic
from mqtools.remoting.bodies import (
    ConsumeStats,
    ConsumeStatsList,
    MessageQueue,
    MessageQueueForC,
    OffsetWrapper,
    ResetOffsetBody,
    ResetOffsetBodyForC,
    SubscriptionGroupConfig,
)
from mqtools.remoting.codes import LanguageCode, RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingError
from mqtools.remoting.headers import (
    ConsumerSendMsgBackRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    ResetOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from mqtools.remoting.server import RemotingServer
from mqtools.server.broker.clients import ConsumerGroupInfo
from mqtools.server.broker.context import BrokerContext
from mqtools.server.broker.processors.durable import when_written

if TYPE_CHECKING:
    from mqtools.remoting.transport import RemotingConnection

log = logging.getLogger(__name__)

DLQ_NUMS_PER_GROUP = 1
#: RocketMQ 4.9.2+ creates DLQ topics readable too, so tools can fetch dead messages.
DLQ_PERM = PERM_WRITE | PERM_READ


def _validation(req: RemotingCommand, exc: ValidationError) -> RemotingCommand:
    return req.response(ResponseCode.INVALID_PARAMETER, str(exc))


class ConsumerProcessor:
    def __init__(self, controller: BrokerContext, rng: random.Random | None = None) -> None:
        self.c = controller
        self.rng = rng or random.Random()

    # ------------------------------------------------------------------ offsets

    def query_consumer_offset(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = QueryConsumerOffsetRequestHeader.from_ext(req.ext_fields)
        offset = self.c.offsets.query_offset(h.consumer_group, h.topic, h.queue_id)
        if offset >= 0:
            return req.response(ResponseCode.SUCCESS, ext_fields=OffsetResponseHeader(offset=offset).to_ext())
        if h.set_zero_if_not_found is not False and self._starts_in_memory(h.topic, h.queue_id):
            # A new group on a queue whose history is all still in page cache starts at 0,
            # as RocketMQ does, so nothing produced before the first consumer started is skipped.
            return req.response(ResponseCode.SUCCESS, ext_fields=OffsetResponseHeader(offset=0).to_ext())
        return req.response(ResponseCode.QUERY_NOT_FOUND,
                            "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")

    def _starts_in_memory(self, topic: str, queue_id: int) -> bool:
        """The queue still starts at offset 0 and that message is not yet "in disk" (RocketMQ's rule)."""
        store = self.c.store
        return (store.get_min_offset_in_queue(topic, queue_id) <= 0
                and not store.check_in_disk_by_consume_offset(topic, queue_id, 0))

    def update_consumer_offset(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = UpdateConsumerOffsetRequestHeader.from_ext(req.ext_fields)
        try:
            check_group(h.consumer_group)
            check_topic(h.topic)
        except ValidationError as exc:
            return _validation(req, exc)
        if h.queue_id < 0 or h.commit_offset < 0:
            return req.response(ResponseCode.INVALID_PARAMETER,
                                f"bad queueId {h.queue_id} or commitOffset {h.commit_offset}")
        self.c.offsets.commit_offset(conn.peer, h.consumer_group, h.topic, h.queue_id, h.commit_offset)
        return req.response(ResponseCode.SUCCESS)

    # ------------------------------------------------------------------ send back

    async def consumer_send_msg_back(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = ConsumerSendMsgBackRequestHeader.from_ext(req.ext_fields)
        try:
            check_group(h.group)  # it names the retry and DLQ topics
        except ValidationError as exc:
            return _validation(req, exc)
        config = self.c.groups.find(h.group)
        if config is None:
            return req.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                f"subscription group not exist, {h.group}")
        if not is_writeable(self.c.config.broker_permission):
            return req.response(ResponseCode.NO_PERMISSION,
                                f"the broker[{self.c.config.broker_name}] sending message is forbidden")
        if config.retry_queue_nums <= 0:
            return req.response(ResponseCode.SUCCESS)
        msg = self.c.store.look_message_by_offset(h.offset)
        if msg is None:
            return req.response(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {h.offset}")
        # A negative value means "unset" (old C++ clients send -1); the group's setting applies.
        max_times = h.max_reconsume_times
        if max_times is None or max_times < 0:
            max_times = config.retry_max_times
        to_dlq = msg.reconsume_times >= max_times or h.delay_level < 0
        if to_dlq:
            topic, queue_nums, perm = dlq_topic(h.group), DLQ_NUMS_PER_GROUP, DLQ_PERM
        else:
            topic, queue_nums, perm = retry_topic(h.group), config.retry_queue_nums, PERM_WRITE | PERM_READ
        topic_config = self.c.topics.create_topic_in_send_message_back_method(topic, queue_nums, perm, 0)
        if topic_config is None:
            return req.response(ResponseCode.SYSTEM_ERROR, f"topic[{topic}] not exist")
        if not is_writeable(topic_config.perm):
            return req.response(ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden")
        queue_id = self.rng.randrange(max(1, min(queue_nums, topic_config.write_queue_nums)))
        delay_level = 0 if to_dlq else (h.delay_level or 3 + msg.reconsume_times)
        inner = self._retry_message(msg, topic, queue_id, delay_level)
        if delay_level > 0:
            self.c.schedule.redirect(inner)
        result = await self.c.store.put_message(inner)
        if result.ok:
            await self.c.topics.until_written()  # a retry or DLQ topic this created is on disk (durable.py)
            return req.response(ResponseCode.SUCCESS)
        return req.response(ResponseCode.SYSTEM_ERROR, result.status.name)

    def _retry_message(self, msg: MessageExt, topic: str, queue_id: int, delay_level: int) -> MessageExtBrokerInner:
        """The copy that goes to the retry (or dead-letter) topic, keeping the message's identity."""
        props = dict(msg.properties)
        props.setdefault(P.RETRY_TOPIC, msg.topic)
        if not props.get(P.ORIGIN_MESSAGE_ID):
            props[P.ORIGIN_MESSAGE_ID] = msg.msg_id
        # The count is a stored int32 that a producer may have set to its maximum: it stops there.
        reconsume_times = min(msg.reconsume_times + 1, INT_MAX)
        return reput_copy(msg, topic, queue_id, props, reconsume_times=reconsume_times, delay_level=delay_level)

    # ------------------------------------------------------------------ groups

    def update_and_create_subscription_group(self, conn: RemotingConnection, req: RemotingCommand
                                             ) -> RemotingCommand | Awaitable[RemotingCommand]:
        config = SubscriptionGroupConfig.from_request(req.body or b"")  # a bad body is the server's BodyError answer
        try:
            check_group(config.group_name)
        except ValidationError as exc:
            return _validation(req, exc)
        self.c.groups.update(config)
        return when_written(req.response(ResponseCode.SUCCESS), self.c.groups)

    def delete_subscription_group(self, conn: RemotingConnection, req: RemotingCommand
                                  ) -> RemotingCommand | Awaitable[RemotingCommand]:
        h = DeleteSubscriptionGroupRequestHeader.from_ext(req.ext_fields)
        self.c.groups.delete(h.group_name)  # an unknown group is not an error, as in RocketMQ
        if h.clean_offset:
            self.c.offsets.remove_group(h.group_name)
        return when_written(req.response(ResponseCode.SUCCESS), self.c.groups)

    def get_all_subscription_group_config(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        return req.response(ResponseCode.SUCCESS, body=self.c.groups.encode())

    def get_subscription_group_config(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """GET_SUBSCRIPTIONGROUP_CONFIG: one group's config (RocketMQ 5's proxy reads its orderliness and retry
        policy here), auto-created where the broker allows it, as Apache's findSubscriptionGroupConfig does."""
        group = req.ext_fields.get("group", "")
        config = self.c.groups.find(group)
        if config is None:
            return req.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "No group in this broker")
        return req.response(ResponseCode.SUCCESS, body=config.to_json())

    def get_all_consumer_offset(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        return req.response(ResponseCode.SUCCESS, body=self.c.offsets.encode())

    # ------------------------------------------------------------------ stats

    def get_consume_stats(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = GetConsumeStatsRequestHeader.from_ext(req.ext_fields)
        group = h.consumer_group
        topics = {h.topic} if h.topic else self.c.offsets.topics_of_group(group)
        online = self.c.consumers.find(group)
        stats = ConsumeStats()
        for topic in sorted(topics):
            topic_config = self.c.topics.select(topic)
            if topic_config is None:
                continue
            if online is not None and online.subscriptions and topic not in online.subscriptions:
                continue  # an online group that no longer subscribes to this topic
            for queue_id in range(topic_config.write_queue_nums):
                mq = MessageQueue(topic=topic, broker_name=self.c.config.broker_name, queue_id=queue_id)
                stats.offset_table[mq] = self._offset_wrapper(group, topic, queue_id)
            stats.consume_tps += self.c.stats.consume_tps(topic, group)
        return req.response(ResponseCode.SUCCESS, body=stats.to_json())

    def get_broker_consume_stats(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """Every subscription group's lag on this broker (mqadmin brokerConsumeStats), one ConsumeStats
        per topic the group has offsets for; with isOrder only order topics."""
        h = GetConsumeStatsInBrokerHeader.from_ext(req.ext_fields)
        answer = ConsumeStatsList(broker_addr=self.c.broker_addr)
        for group in sorted(self.c.groups.table):
            online = self.c.consumers.find(group)
            per_topic = []
            for topic in sorted(self.c.offsets.topics_of_group(group)):
                topic_config = self.c.topics.select(topic)
                if topic_config is None or (h.is_order and not topic_config.order):
                    continue
                if online is not None and online.subscriptions and topic not in online.subscriptions:
                    continue
                stats = ConsumeStats(consume_tps=self.c.stats.consume_tps(topic, group))
                for queue_id in range(topic_config.write_queue_nums):
                    wrapper = self._offset_wrapper(group, topic, queue_id)
                    stats.offset_table[MessageQueue(topic, self.c.config.broker_name, queue_id)] = wrapper
                    answer.total_diff += wrapper.broker_offset - wrapper.consumer_offset
                per_topic.append(stats)
            answer.consume_stats_list.append({group: per_topic})
        # Committed offsets are anything a client sent: the sum stays a Java long, as the body needs.
        answer.total_diff = min(max(answer.total_diff, LONG_MIN), LONG_MAX)
        return req.response(ResponseCode.SUCCESS, body=answer.to_json())

    def _offset_wrapper(self, group: str, topic: str, queue_id: int) -> OffsetWrapper:
        store = self.c.store
        broker_offset = max(0, store.get_max_offset_in_queue(topic, queue_id))
        consumer_offset = max(0, self.c.offsets.query_offset(group, topic, queue_id))
        wrapper = OffsetWrapper(broker_offset=broker_offset, consumer_offset=consumer_offset,
                                pull_offset=consumer_offset)
        if consumer_offset > 0:
            stamp = store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1)
            if stamp > 0:
                wrapper.last_timestamp = stamp
        return wrapper

    # ------------------------------------------------------------------ reset

    def invoke_broker_to_reset_offset(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = ResetOffsetRequestHeader.from_ext(req.ext_fields)
        topic_config = self.c.topics.select(h.topic)
        if topic_config is None:
            return req.response(ResponseCode.TOPIC_NOT_EXIST,
                                f"[reset-offset] reset offset failed, no topic in this broker. topic={h.topic}")
        table = self._reset_table(h, topic_config.write_queue_nums)
        online = self.c.consumers.find(h.group)
        if table is None and online is None:
            return req.response(ResponseCode.SYSTEM_ERROR, f"THe consumer group <{h.group}> not exist")
        if online is None or not online.channels:
            # as Apache's broker: nobody to tell, so nothing is reset; tools then commit offsets themselves
            return req.response(ResponseCode.CONSUMER_NOT_ONLINE,
                                f"Consumer not online, so can not reset offset, Group: {h.group} Topic: {h.topic} "
                                f"Timestamp: {h.timestamp}")
        table = table or {}
        for mq, offset in table.items():
            self.c.offsets.commit_offset(conn.peer, h.group, mq.topic, mq.queue_id, offset)
        self._push_reset(h, table, online)
        return req.response(ResponseCode.SUCCESS, body=ResetOffsetBody(offset_table=table).to_json())

    def _reset_table(self, h: ResetOffsetRequestHeader, queue_nums: int) -> dict[MessageQueue, int] | None:
        """Target offset per queue; None when the group never committed on this topic here.

        Not forced: a queue only moves back (never skips messages forward). A queue the group never
        committed on takes the target as is.
        """
        store = self.c.store
        committed = self.c.offsets.query_offsets(h.group, h.topic)
        if not committed and self.c.consumers.find(h.group) is None:
            return None
        table = {}
        for queue_id in range(queue_nums):
            if h.timestamp == -1:
                target = store.get_max_offset_in_queue(h.topic, queue_id)
            else:
                target = store.get_offset_in_queue_by_time(h.topic, queue_id, h.timestamp)
            target = max(0, target)
            current = committed.get(queue_id, -1)
            if not h.is_force and 0 <= current <= target:
                target = current
            mq = MessageQueue(topic=h.topic, broker_name=self.c.config.broker_name, queue_id=queue_id)
            table[mq] = target
        return table

    def _push_reset(self, h: ResetOffsetRequestHeader, table: dict[MessageQueue, int],
                    online: ConsumerGroupInfo) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET (oneway) to every online member, in the form its language reads."""
        ext = ResetOffsetRequestHeader(topic=h.topic, group=h.group, timestamp=h.timestamp,
                                       is_force=h.is_force).to_ext()
        ext.pop("queueId", None)
        java_body = ResetOffsetBody(offset_table=table).to_json()
        c_body = ResetOffsetBodyForC(offset_table=[
            MessageQueueForC(topic=mq.topic, broker_name=mq.broker_name, queue_id=mq.queue_id, offset=off)
            for mq, off in table.items()
        ]).to_json()
        for info in online.channels.values():
            body = c_body if info.language == LanguageCode.CPP else java_body
            cmd = RemotingCommand.request(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, dict(ext), body, oneway=True)
            try:
                info.channel.invoke_oneway(cmd)
            except (RemotingError, OSError) as exc:  # one dead client must not stop the others
                log.info("reset push to %s failed: %s", info.client_id, exc)


def register(server: RemotingServer, controller: BrokerContext) -> ConsumerProcessor:
    proc = ConsumerProcessor(controller)
    server.register(RequestCode.QUERY_CONSUMER_OFFSET, proc.query_consumer_offset)
    server.register(RequestCode.UPDATE_CONSUMER_OFFSET, proc.update_consumer_offset)
    server.register(RequestCode.CONSUMER_SEND_MSG_BACK, proc.consumer_send_msg_back)
    server.register(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, proc.update_and_create_subscription_group)
    server.register(RequestCode.DELETE_SUBSCRIPTIONGROUP, proc.delete_subscription_group)
    server.register(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, proc.get_all_subscription_group_config)
    server.register(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, proc.get_subscription_group_config)
    server.register(RequestCode.GET_ALL_CONSUMER_OFFSET, proc.get_all_consumer_offset)
    server.register(RequestCode.GET_CONSUME_STATS, proc.get_consume_stats)
    server.register(RequestCode.GET_BROKER_CONSUME_STATS, proc.get_broker_consume_stats)
    server.register(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, proc.invoke_broker_to_reset_offset)
    return proc
