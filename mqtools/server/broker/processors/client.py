"""Client management requests (RocketMQ's ClientManageProcessor, with the consumer-list and
queue-lock requests): heartbeats, unregistration, group membership, orderly queue locks.

HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP, GET_CONSUMER_CONNECTION_LIST,
GET_PRODUCER_CONNECTION_LIST, GET_ALL_PRODUCER_INFO, LOCK_BATCH_MQ, UNLOCK_BATCH_MQ, and GET_CONSUMER_RUNNING_INFO, which is
relayed to the member's own connection (RocketMQ's AdminBrokerProcessor does the same). Registering also hooks the
server's connection-close callback (a closed channel leaves its groups at once) and the
consumer manager's ids-changed listener (oneway NOTIFY_CONSUMER_IDS_CHANGED to each member).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from mqtools.common.perm import PERM_READ, PERM_WRITE
from mqtools.common.topics import retry_topic
from mqtools.common.validation import ValidationError, check_group
from mqtools.remoting.bodies import (
    Connection,
    ConsumerConnection,
    ConsumerData,
    ConsumerListBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    ProducerConnection,
    ProducerInfo,
    ProducerTableInfo,
)
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingError
from mqtools.remoting.headers import (
    ConsumerGroupRequestHeader,
    GetProducerConnectionListRequestHeader,
    UnregisterClientRequestHeader,
)
from mqtools.remoting.server import RemotingServer
from mqtools.server.broker.clients import ClientChannelInfo, language_name
from mqtools.server.broker.context import BrokerContext
from mqtools.server.broker.processors.durable import when_written

if TYPE_CHECKING:
    from mqtools.remoting.transport import RemotingConnection

log = logging.getLogger(__name__)

#: How long a member has to answer a relayed GET_CONSUMER_RUNNING_INFO (RocketMQ waits 5 s too).
RUNNING_INFO_TIMEOUT_S = 5.0


class ClientProcessor:
    def __init__(self, controller: BrokerContext) -> None:
        self.c = controller

    # ------------------------------------------------------------------ wiring

    def notify_ids_changed(self, group: str, members: list[ClientChannelInfo]) -> None:
        """Oneway NOTIFY_CONSUMER_IDS_CHANGED to every member, if the group wants it."""
        config = self.c.groups.find(group, create=False)
        if config is not None and not config.notify_consumer_ids_changed_enable:
            return
        for info in members:
            conn = info.channel
            if not conn.is_open:
                continue
            cmd = RemotingCommand.request(
                RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                ConsumerGroupRequestHeader(consumer_group=group).to_ext(),
                oneway=True,
            )
            try:
                conn.invoke_oneway(cmd)
            except (RemotingError, OSError) as exc:  # a dying connection must not break the others
                log.info("notify %s of %s failed: %s", info.client_id, group, exc)

    def channel_closed(self, conn: RemotingConnection) -> None:
        self.c.consumers.channel_closed(conn)
        self.c.producers.channel_closed(conn)

    # ------------------------------------------------------------------ handlers

    def heart_beat(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand | Awaitable[RemotingCommand]:
        data = HeartbeatData.from_request(req.body or b"{}")  # a bad body is the server's BodyError answer
        if not data.client_id:
            return req.response(ResponseCode.SYSTEM_ERROR, "heartbeat without clientID")
        groups = [c.group_name for c in data.consumer_data_set] + [p.group_name for p in data.producer_data_set]
        try:  # group names key the client tables and name the retry topics
            for group in groups:
                check_group(group)
        except ValidationError as exc:
            return req.response(ResponseCode.INVALID_PARAMETER, str(exc))
        for consumer in data.consumer_data_set:
            self._register_consumer(conn, req, data.client_id, consumer)
        for producer in data.producer_data_set:
            info = ClientChannelInfo(conn, data.client_id, req.language, req.version, conn.peer)
            self.c.producers.register(producer.group_name, info)
        return when_written(req.response(ResponseCode.SUCCESS), self.c.groups, self.c.topics)

    def _register_consumer(self, conn: RemotingConnection, req: RemotingCommand, client_id: str,
                           consumer: ConsumerData) -> None:
        group = consumer.group_name
        config = self.c.groups.find(group)
        notify = True
        if config is not None:
            notify = config.notify_consumer_ids_changed_enable
            self.c.topics.create_topic_in_send_message_back_method(
                retry_topic(group), config.retry_queue_nums, PERM_WRITE | PERM_READ, 0
            )
        info = ClientChannelInfo(conn, client_id, req.language, req.version, conn.peer)
        self.c.consumers.register(
            group,
            info,
            consumer.consume_type,
            consumer.message_model,
            consumer.consume_from_where,
            consumer.subscription_data_set,
            notify=notify,
        )

    def unregister_client(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = UnregisterClientRequestHeader.from_ext(req.ext_fields)
        if header.producer_group:
            self.c.producers.unregister(header.producer_group, conn)
        if header.consumer_group:
            config = self.c.groups.find(header.consumer_group, create=False)
            notify = config is None or config.notify_consumer_ids_changed_enable
            self.c.consumers.unregister(header.consumer_group, conn, notify=notify)
        return req.response(ResponseCode.SUCCESS)

    def get_consumer_list_by_group(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = ConsumerGroupRequestHeader.from_ext(req.ext_fields)
        group_info = self.c.consumers.find(header.consumer_group)
        ids = group_info.client_ids() if group_info is not None else []
        if not ids:
            return req.response(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {header.consumer_group}")
        return req.response(ResponseCode.SUCCESS, body=ConsumerListBody(consumer_id_list=ids).to_json())

    def get_consumer_connection_list(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = ConsumerGroupRequestHeader.from_ext(req.ext_fields)
        group_info = self.c.consumers.find(header.consumer_group)
        if group_info is None:
            return req.response(ResponseCode.CONSUMER_NOT_ONLINE,
                                f"the consumer group[{header.consumer_group}] not online")
        body = ConsumerConnection(
            connection_set=[_connection(i) for i in group_info.channels.values()],
            subscription_table=dict(group_info.subscriptions),
            consume_type=group_info.consume_type,
            message_model=group_info.message_model,
            consume_from_where=group_info.consume_from_where,
        )
        return req.response(ResponseCode.SUCCESS, body=body.to_json())

    def get_producer_connection_list(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = GetProducerConnectionListRequestHeader.from_ext(req.ext_fields)
        members = self.c.producers.connections(header.producer_group)
        if not members:
            return req.response(ResponseCode.SYSTEM_ERROR, f"the producer group[{header.producer_group}] not exist")
        body = ProducerConnection(connection_set=[_connection(i) for i in members])
        return req.response(ResponseCode.SUCCESS, body=body.to_json())

    def get_all_producer_info(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """Every producer group's producers on this broker (AdminBrokerProcessor's getAllProducerInfo)."""
        table = {group: [ProducerInfo(i.client_id, f"/{i.addr}", language_name(i.language), i.version,
                                      int(i.last_update * 1000)) for i in channels.values()]
                 for group, channels in self.c.producers.groups.items()}
        return req.response(body=ProducerTableInfo(table).to_json())

    async def get_consumer_running_info(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """Ask the member itself (its connection to this broker) and hand its answer back."""
        group, client_id = req.ext_fields.get("consumerGroup", ""), req.ext_fields.get("clientId", "")
        group_info = self.c.consumers.find(group)
        member = next((i for i in group_info.channels.values() if i.client_id == client_id), None) \
            if group_info is not None else None
        if member is None:
            return req.response(ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
        relay = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, dict(req.ext_fields))
        try:
            answer = await member.channel.invoke(relay, RUNNING_INFO_TIMEOUT_S)
        except RemotingError as exc:
            return req.response(ResponseCode.SYSTEM_ERROR, f"invoke the consumer <{group}> <{client_id}> failed: {exc}")
        return req.response(answer.code, answer.remark, body=answer.body)

    def lock_batch_mq(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        body = LockBatchRequestBody.from_request(req.body or b"{}")
        try:
            check_group(body.consumer_group)
        except ValidationError as exc:
            return req.response(ResponseCode.INVALID_PARAMETER, str(exc))
        locked = self.c.locks.try_lock_batch(body.consumer_group, body.mq_set, body.client_id)
        return req.response(ResponseCode.SUCCESS, body=LockBatchResponseBody(lock_ok_mq_set=locked).to_json())

    def unlock_batch_mq(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        body = LockBatchRequestBody.from_request(req.body or b"{}")
        self.c.locks.unlock_batch(body.consumer_group, body.mq_set, body.client_id)
        return req.response(ResponseCode.SUCCESS)


def _connection(info: ClientChannelInfo) -> Connection:
    return Connection(client_id=info.client_id, client_addr=info.addr, language=language_name(info.language),
                      version=info.version)


def register(server: RemotingServer, controller: BrokerContext) -> ClientProcessor:
    """Wire the handlers, the close hook and the ids-changed listener into a broker."""
    proc = ClientProcessor(controller)
    controller.consumers.on_ids_changed = proc.notify_ids_changed
    server.add_close_hook(proc.channel_closed)
    server.register(RequestCode.HEART_BEAT, proc.heart_beat)
    server.register(RequestCode.UNREGISTER_CLIENT, proc.unregister_client)
    server.register(RequestCode.GET_CONSUMER_LIST_BY_GROUP, proc.get_consumer_list_by_group)
    server.register(RequestCode.GET_CONSUMER_CONNECTION_LIST, proc.get_consumer_connection_list)
    server.register(RequestCode.GET_PRODUCER_CONNECTION_LIST, proc.get_producer_connection_list)
    server.register(RequestCode.GET_ALL_PRODUCER_INFO, proc.get_all_producer_info)
    server.register(RequestCode.LOCK_BATCH_MQ, proc.lock_batch_mq)
    server.register(RequestCode.UNLOCK_BATCH_MQ, proc.unlock_batch_mq)
    server.register(RequestCode.GET_CONSUMER_RUNNING_INFO, proc.get_consumer_running_info)
    return proc
