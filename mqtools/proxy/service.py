"""apache.rocketmq.v2.MessagingService: each gRPC method as Apache's proxy answers it (the *Activity classes).

Methods take a parsed request and a `Call` (the client's headers, its address, the time left) and return the
response message; a refusal is a `status` in the response, never an exception out of here (server.py turns an
unexpected one into INTERNAL with one log line). ReceiveMessage and Telemetry are streams (async generators).
The consuming methods (receive, ack, change of invisible time, dead letter) are consuming.py's.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
from mqtools.client.errors import MQClientError
from mqtools.client.instance import ClientInstance
from mqtools.common import properties as P
from mqtools.common.message import MessageExt
from mqtools.proxy import route as routes
from mqtools.proxy import settings as client_settings
from mqtools.proxy.call import Call, now_ms
from mqtools.proxy.clients import Clients
from mqtools.proxy.config import ProxyConfig
from mqtools.proxy.consuming import ConsumingActivities
from mqtools.proxy.convert import to_grpc, to_remoting, validate_group, validate_topic
from mqtools.proxy.errors import Code, ProxyError, ok, status, status_of
from mqtools.proxy.fault import SendFaultStrategy
from mqtools.proxy.metadata import Metadata
from mqtools.proxy.popping import Popper
from mqtools.proxy.renewal import Renewals
from mqtools.proxy.sending import Sender, Transactions
from mqtools.remoting.bodies import TopicRouteData
from mqtools.remoting.transaction import CheckTransactionStateRequestHeader

log = logging.getLogger(__name__)

class MessagingService(ConsumingActivities):
    """The proxy's gRPC methods over one ClientInstance (the proxy's link to the cluster)."""

    def __init__(self, config: ProxyConfig, instance: ClientInstance, *, port: int) -> None:
        self.config = config
        self.instance = instance
        self.port = port
        self.clients = Clients()
        self.metadata = Metadata(instance)
        self.transactions = Transactions(config.transaction_data_expire_millis)
        self.sender = Sender(instance, self.transactions, fault=SendFaultStrategy(
            enabled=config.send_latency_enable, detect_interval_ms=config.detect_interval))
        self.popper = Popper(instance)
        self._receiving = 0
        self._receive_turn = itertools.count()
        self._relayed_groups: set[str] = set()
        self._background: set[asyncio.Task] = set()
        self.renewals = Renewals()

    # ---------------------------------------------------------------- routes

    async def _route(self, topic: str) -> TopicRouteData:
        route = await self.instance.route(topic)
        if route is None:
            raise ProxyError(Code.TOPIC_NOT_FOUND, f"topic {topic} does not exist")
        return route.data

    def _broker_addrs(self, data: TopicRouteData) -> list[str]:
        return [bd.broker_addrs[0] for bd in data.broker_datas if 0 in bd.broker_addrs]

    def _endpoints(self, requested: pb.Endpoints) -> pb.Endpoints:
        if not requested.addresses and not self.config.grpc_advertised_host:
            raise ProxyError(Code.ILLEGAL_ACCESS_POINT, "the endpoints of the request are empty")
        return routes.proxy_endpoints(requested, self.config.grpc_advertised_host, self.port,
                                      requested_ports=self.config.use_endpoint_port_from_request)

    async def QueryRoute(self, req: spb.QueryRouteRequest, call: Call) -> spb.QueryRouteResponse:
        try:
            topic = validate_topic(req.topic.name)
            endpoints = self._endpoints(req.endpoints)
            data = await self._route(topic)
            kind = await self.metadata.topic_message_type(topic, self._broker_addrs(data))
            queues = routes.route_queues(req.topic, data, endpoints, kind)
        except (ProxyError, MQClientError) as exc:
            return spb.QueryRouteResponse(status=status_of(exc))
        return spb.QueryRouteResponse(status=ok(), message_queues=queues)

    async def QueryAssignment(self, req: spb.QueryAssignmentRequest, call: Call) -> spb.QueryAssignmentResponse:
        try:
            topic = validate_topic(req.topic.name)
            group = validate_group(req.group.name)
            endpoints = self._endpoints(req.endpoints)
            data = await self._route(topic)
            policy = await self.metadata.group_policy(group, self._broker_addrs(data))
            found = routes.assignments(req.topic, data, endpoints, policy.consume_message_orderly)
        except (ProxyError, MQClientError) as exc:
            return spb.QueryAssignmentResponse(status=status_of(exc))
        if not found:
            return spb.QueryAssignmentResponse(status=status(Code.FORBIDDEN, "no readable queue"))
        return spb.QueryAssignmentResponse(status=ok(), assignments=found)

    # ---------------------------------------------------------------- clients

    async def Heartbeat(self, req: spb.HeartbeatRequest, call: Call) -> spb.HeartbeatResponse:
        client = self.clients.touch(call.client_id, language=call.language, version=call.version, peer=call.peer)
        if client.settings is None:
            return spb.HeartbeatResponse(status=status(Code.UNRECOGNIZED_CLIENT_TYPE,
                                                       "cannot find client settings for this client"))
        if client.settings.client_type == pb.PRODUCER:
            await self._register_producer(client.publishing_topics)
        elif client.settings.client_type in (pb.PUSH_CONSUMER, pb.SIMPLE_CONSUMER):
            try:
                validate_group(req.group.name)
            except ProxyError as exc:
                return spb.HeartbeatResponse(status=status_of(exc))
        else:
            return spb.HeartbeatResponse(status=status(Code.UNRECOGNIZED_CLIENT_TYPE,
                                                       pb.ClientType.Name(client.settings.client_type)))
        return spb.HeartbeatResponse(status=ok())

    async def NotifyClientTermination(self, req: spb.NotifyClientTerminationRequest, call: Call
                                      ) -> spb.NotifyClientTerminationResponse:
        client = self.clients.remove(call.client_id)
        if client is None or client.settings is None:
            return spb.NotifyClientTerminationResponse(status=status(Code.UNRECOGNIZED_CLIENT_TYPE,
                                                                     "cannot find client settings for this client"))
        self._spawn(self.renewals.clear(call.client_id, self.popper.change_invisible))
        self._forget_groups()
        return spb.NotifyClientTerminationResponse(status=ok())

    async def _register_producer(self, topics: set[str]) -> None:
        """Producer group = topic (Apache): the proxy's instance heartbeats each as a producer group, so the
        brokers ask it about half messages of those topics; the checks are relayed to a producer's stream."""
        new = topics - self._relayed_groups
        if not new:
            return
        for topic in new:
            self._relayed_groups.add(topic)
            self.instance.producer_groups.add(topic)
            self.instance.transaction_checkers[topic] = self._on_transaction_check
            with contextlib.suppress(MQClientError):
                await self.instance.route(topic)
        await self.instance.heartbeat()

    def _forget_groups(self) -> None:
        """Stop relaying the producer groups no client publishes to any more, and unregister each from the
        brokers (UNREGISTER_CLIENT, as a Java producer's shutdown does): a group left to expire makes a broker
        close the channel its heartbeats came on 120 s later (ProducerManager.scanNotActiveChannel, Apache's
        and mq's), which is the proxy's one connection to that broker, failing every request in flight on it."""
        live = self.clients.published_topics()
        for topic in self._relayed_groups - live:
            self._relayed_groups.discard(topic)
            self.instance.producer_groups.discard(topic)
            self.instance.transaction_checkers.pop(topic, None)
            self._spawn(self.instance.unregister(producer_group=topic))

    def _spawn(self, work: Awaitable[None]) -> None:
        """Run `work` in the background, held until it ends (the loop keeps only weak references to tasks)."""
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def sweep(self) -> None:
        """Start renewing the held receipt handles that are due (not waited for: a hung broker's renewals must not
        hold up the next sweep), forget idle clients and start making what they held visible again (called every
        few seconds)."""
        self.renewals.renew_due(self.popper.change_invisible)
        gone = self.clients.expire()
        for client in gone:
            self._spawn(self.renewals.clear(client.client_id, self.popper.change_invisible))
        if gone:
            self._forget_groups()

    async def close(self, grace: float) -> None:
        """clearAllHandle: make every held message visible again soon; that and the other background work (nacks of
        messages a client never got) gets `grace` seconds, then what is left is cancelled (the proxy leaves the
        cluster next)."""
        self._spawn(self.renewals.clear(None, self.popper.change_invisible))
        _, late = await asyncio.wait(set(self._background), timeout=grace)
        for task in late:
            task.cancel()
        await self.metadata.close()

    def _broker_name_of(self, addr: str) -> str | None:
        for route in self.instance.routes.values():
            for name, addrs in route.broker_addrs.items():
                if addr in addrs.values():
                    return name
        return None

    def _on_transaction_check(self, broker_addr: str, header: CheckTransactionStateRequestHeader,
                              msg: MessageExt) -> None:
        """A broker asks about a half message: remember where it is, hand it to a producer of its topic."""
        group = msg.properties.get(P.PGROUP, "")
        transaction_id = header.transaction_id or msg.properties.get(P.UNIQ_KEY) or msg.msg_id
        broker_name = self._broker_name_of(broker_addr)
        if broker_name is None:
            log.warning("transaction check from %s, which is in no route known here", broker_addr)
            return
        self.transactions.add(group, broker_name, msg.topic, header.tran_state_table_offset,
                              header.commit_log_offset, transaction_id)
        command = spb.TelemetryCommand(recover_orphaned_transaction_command=spb.RecoverOrphanedTransactionCommand(
            message=to_grpc(msg, now_ms=now_ms()), transaction_id=transaction_id))
        if self.clients.send_to_one(self.clients.producers_of(group), command) is None:
            self.transactions.poll(group, transaction_id)
            log.warning("transaction check of %s (group %s): no producer of it is connected", transaction_id, group)

    async def Telemetry(self, requests: AsyncIterator[spb.TelemetryCommand | pb.Status], call: Call
                        ) -> AsyncIterator[spb.TelemetryCommand]:
        """Settings in, settings out; later the proxy's commands out. Ends when the client closes its side.

        A Status among `requests` stands for a command the server's gate refused: it is answered in its turn on the
        stream (GrpcMessagingApplication.writeResponse) and nothing of that command is taken."""
        client = self.clients.touch(call.client_id, language=call.language, version=call.version, peer=call.peer)
        outbound = self.clients.open_stream(client.client_id)
        done = asyncio.Event()

        async def read() -> None:
            try:
                async for command in requests:
                    if isinstance(command, pb.Status):
                        await outbound.put(spb.TelemetryCommand(status=command))
                        continue
                    self.clients.heard(client.client_id, outbound)
                    if command.WhichOneof("command") == "settings":
                        await outbound.put(await self._settings_answer(client.client_id, command.settings))
            finally:
                done.set()

        reader = asyncio.create_task(read())
        closed = asyncio.ensure_future(done.wait())
        getter: asyncio.Future | None = None
        try:
            while True:
                getter = asyncio.ensure_future(outbound.get())
                await asyncio.wait({getter, closed}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield getter.result()
                    continue
                while not outbound.empty():
                    yield outbound.get_nowait()
                break
            failure = reader.exception() if reader.done() and not reader.cancelled() else None
            if failure is not None:  # a refused or unreadable command: the stream ends with its status
                raise failure
        finally:
            for task in (getter, closed, reader):
                if task is not None:
                    task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.gather(*(t for t in (getter, closed, reader) if t is not None), return_exceptions=True)
            self.clients.close_stream(client.client_id, outbound)

    async def _settings_answer(self, client_id: str, reported: pb.Settings) -> spb.TelemetryCommand:
        """processAndWriteClientSettings: INVALID_ARGUMENT for settings with neither publishing nor subscription."""
        client = self.clients.touch(client_id)
        which = reported.WhichOneof("pub_sub")
        if which is None:
            raise ProxyError(Code.BAD_REQUEST, "there is no publishing or subscription data in settings")
        policy = None
        if which == "publishing":
            for topic in reported.publishing.topics:
                validate_topic(topic.name)
            client.settings = reported
            await self._register_producer(client.publishing_topics)
        else:
            group = validate_group(reported.subscription.group.name)
            client.settings = reported
            addrs = sorted(self.instance.all_broker_addrs())
            for entry in reported.subscription.subscriptions:
                with contextlib.suppress(MQClientError, ProxyError):
                    addrs = self._broker_addrs(await self._route(entry.topic.name)) or addrs
            policy = await self.metadata.group_policy(group, addrs)
        answer = client_settings.answer(reported, self.config, policy)
        return spb.TelemetryCommand(status=ok(), settings=answer)

    # ---------------------------------------------------------------- producing

    async def SendMessage(self, req: spb.SendMessageRequest, call: Call) -> spb.SendMessageResponse:
        try:
            if not req.messages:
                raise ProxyError(Code.MESSAGE_CORRUPTED, "no message to send")
            topic = validate_topic(req.messages[0].topic.name)
            now = now_ms()
            items = []
            for msg in req.messages:
                if msg.topic.name != topic or msg.topic.resource_namespace != req.messages[0].topic.resource_namespace:
                    raise ProxyError(Code.MESSAGE_CORRUPTED, "topic in message is not same")
                items.append(to_remoting(msg, self.config, producer_group=topic, peer=call.peer, now_ms=now))
            await self._check_type(topic, items[0].message.properties)
            outcomes = await self.sender.send(topic, items)
        except (ProxyError, MQClientError) as exc:
            failed = status_of(exc)
            return spb.SendMessageResponse(status=failed, entries=[spb.SendResultEntry(status=failed)
                                                                   for _ in req.messages])
        entries = []
        for outcome in outcomes:
            name = outcome.status.value
            if name == "SEND_OK":
                entries.append(spb.SendResultEntry(status=ok(), message_id=outcome.message_id,
                                                   transaction_id=outcome.transaction_id, offset=outcome.offset))
                continue
            code = {"FLUSH_DISK_TIMEOUT": Code.MASTER_PERSISTENCE_TIMEOUT,
                    "FLUSH_SLAVE_TIMEOUT": Code.SLAVE_PERSISTENCE_TIMEOUT,
                    "SLAVE_NOT_AVAILABLE": Code.HA_NOT_AVAILABLE}.get(name, Code.INTERNAL_SERVER_ERROR)
            entries.append(spb.SendResultEntry(status=status(code, f"send message failed, sendStatus={name}")))
        codes = {e.status.code for e in entries}
        overall = status(Code.MULTIPLE_RESULTS) if len(codes) > 1 else status(codes.pop())
        return spb.SendMessageResponse(status=overall, entries=entries)

    async def _check_type(self, topic: str, props: dict[str, str]) -> None:
        """DefaultTopicMessageTypeValidator, when enableTopicMessageTypeCheck (the topic's type is known)."""
        if not self.config.enable_topic_message_type_check:
            return
        route = self.instance.routes.get(topic)
        if route is None:
            return
        expected = await self.metadata.topic_message_type(topic, self._broker_addrs(route.data))
        if props.get(P.TRAN_MSG) == "true":
            actual = "TRANSACTION"
        elif {P.DELAY, "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS"} & props.keys():
            actual = "DELAY"
        elif P.SHARDING_KEY in props:
            actual = "FIFO"
        else:
            actual = "NORMAL"
        if expected != routes.MIXED and actual != expected:
            raise ProxyError(Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, f"TopicMessageType validate failed, the "
                             f"expected type is {expected}, but actual type is {actual}")

    async def EndTransaction(self, req: spb.EndTransactionRequest, call: Call) -> spb.EndTransactionResponse:
        try:
            topic = validate_topic(req.topic.name)
            if not req.transaction_id.strip():
                raise ProxyError(Code.INVALID_TRANSACTION_ID, "transaction id cannot be empty")
            await self.sender.end_transaction(topic, req.transaction_id, req.message_id, req.resolution,
                                              req.source == pb.SOURCE_SERVER_CHECK)
        except (ProxyError, MQClientError) as exc:
            return spb.EndTransactionResponse(status=status_of(exc))
        return spb.EndTransactionResponse(status=ok())
