"""Offset and message lookups (RocketMQ's QueryMessageProcessor and AdminBrokerProcessor):
GET_MAX_OFFSET, GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME,
QUERY_MESSAGE (by key and time range), VIEW_MESSAGE_BY_ID, QUERY_CONSUME_QUEUE (a queue's units).

Message bodies are the stored bytes, as RocketMQ sends them; the client decodes them.
QUERY_MESSAGE keeps only exact key matches (KEYS split on blanks, or the unique key),
because the index returns hash hits.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from mqtools.common import properties as P
from mqtools.remoting.bodies import ConsumeQueueData, QueryConsumeQueueResponseBody
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import (
    UNIQUE_KEY_QUERY,
    GetEarliestMsgStoretimeResponseHeader,
    OffsetResponseHeader,
    QueryConsumeQueueRequestHeader,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    QueueRequestHeader,
    SearchOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from mqtools.server.broker.context import BrokerContext

if TYPE_CHECKING:
    from mqtools.remoting.server import RemotingServer
    from mqtools.remoting.transport import RemotingConnection


def message_keys(properties: dict[str, str]) -> set[str]:
    keys = set((properties.get(P.KEYS) or "").split())
    uniq = properties.get(P.UNIQ_KEY)
    if uniq:
        keys.add(uniq)
    return keys


class QueryProcessor:
    def __init__(self, controller: BrokerContext) -> None:
        self.c = controller

    def get_max_offset(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = QueueRequestHeader.from_ext(req.ext_fields)
        offset = self.c.store.get_max_offset_in_queue(h.topic, h.queue_id)
        return req.response(ext_fields=OffsetResponseHeader(offset).to_ext())

    def get_min_offset(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = QueueRequestHeader.from_ext(req.ext_fields)
        offset = self.c.store.get_min_offset_in_queue(h.topic, h.queue_id)
        return req.response(ext_fields=OffsetResponseHeader(offset).to_ext())

    def search_offset(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = SearchOffsetRequestHeader.from_ext(req.ext_fields)
        offset = self.c.store.get_offset_in_queue_by_time(h.topic, h.queue_id, h.timestamp)
        return req.response(ext_fields=OffsetResponseHeader(offset).to_ext())

    def earliest_store_time(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = QueueRequestHeader.from_ext(req.ext_fields)
        ts = self.c.store.get_earliest_message_time(h.topic, h.queue_id)
        return req.response(ext_fields=GetEarliestMsgStoretimeResponseHeader(ts).to_ext())

    async def query_message(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = QueryMessageRequestHeader.from_ext(req.ext_fields)
        store = self.c.store
        max_num = h.max_num
        if req.ext_fields.get(UNIQUE_KEY_QUERY) == "true":  # RocketMQ's QueryMessageProcessor rule
            max_num = store.config.default_query_max_num
        # Index scans can touch many files: keep them off the event loop.
        hits = await asyncio.to_thread(store.query_message, h.topic, h.key, max_num, h.begin_timestamp,
                                       h.end_timestamp)
        parts: list[bytes] = []
        for msg in hits:
            if msg.topic != h.topic or h.key not in message_keys(msg.properties):
                continue
            raw = store.select_one_message_by_offset(msg.commit_log_offset, msg.store_size)
            if raw is not None:
                parts.append(bytes(raw))
        header = QueryMessageResponseHeader(int(self.c.clock() * 1000), store.max_phy_offset).to_ext()
        if not parts:
            return req.response(ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct",
                                header)
        return req.response(ext_fields=header, body=b"".join(parts))

    def view_message_by_id(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = ViewMessageRequestHeader.from_ext(req.ext_fields)
        raw = self.c.store.select_one_message_by_offset(h.offset)
        if raw is None:
            return req.response(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {h.offset}")
        return req.response(body=bytes(raw))

    def query_consume_queue(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """Up to `count` units of one queue from `index`, within the file that holds it (AdminBrokerProcessor's
        queryConsumeQueue); with a group, its subscription to the topic. An index the queue does not hold is a
        success with a remark and no body, as Apache answers it."""
        h = QueryConsumeQueueRequestHeader.from_ext(req.ext_fields)
        cq = self.c.store.dispatcher.cq(h.topic, h.queue_id)  # the queue's own units: a diagnostic read
        if cq is None:
            return req.response(ResponseCode.SYSTEM_ERROR, f"{h.queue_id}@{h.topic} is not exist!")
        body = QueryConsumeQueueResponseBody(max_queue_index=cq.max_offset, min_queue_index=cq.min_offset)
        if h.consumer_group is not None:
            body.subscription_data = self.c.consumers.find_subscription(h.consumer_group, h.topic)
            # Apache gives its SQL92 filter's data here, "null" for a tag subscription (mq filters by tag only)
            body.filter_data = "null" if body.subscription_data is not None \
                else f"{h.consumer_group}@{h.topic} is not online!"
        units = cq.unit_list(h.index, h.count)
        if units is None:
            return req.response(ResponseCode.SUCCESS, f"Index {h.index} of {h.queue_id}@{h.topic} is not exist!")
        body.queue_data = [ConsumeQueueData(phys, size, tags) for phys, size, tags in units]
        return req.response(body=body.to_json())


def register(server: RemotingServer, controller: BrokerContext) -> QueryProcessor:
    proc = QueryProcessor(controller)
    server.register(RequestCode.GET_MAX_OFFSET, proc.get_max_offset)
    server.register(RequestCode.GET_MIN_OFFSET, proc.get_min_offset)
    server.register(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, proc.search_offset)
    server.register(RequestCode.GET_EARLIEST_MSG_STORETIME, proc.earliest_store_time)
    server.register(RequestCode.QUERY_MESSAGE, proc.query_message)
    server.register(RequestCode.VIEW_MESSAGE_BY_ID, proc.view_message_by_id)
    server.register(RequestCode.QUERY_CONSUME_QUEUE, proc.query_consume_queue)
    return proc
