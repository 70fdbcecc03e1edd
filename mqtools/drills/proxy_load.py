"""The kill-proxy drill's load: producers and consumers that reach the cluster only through its gRPC proxies.

RocketMQ 5's clients speak gRPC to a proxy (apache.rocketmq.v2.MessagingService), not remoting to the brokers,
and are given every proxy's address: when the one they use goes, their calls fail UNAVAILABLE and they go on
with another. These clients do the same with the generated stubs, as plainly as the drill needs: a producer
sends one message per SendMessage (at most three attempts, each on the next proxy after a transport failure,
within the send timeout, as the 5.x clients' maxAttempts); a consumer is a SimpleConsumer, long-polling
ReceiveMessage on the queues QueryAssignment gives it, one broker after the other, and acknowledging every
message it receives. A message received through a proxy that dies before the ack is seen again once its
invisible time ends: a duplicate, never a loss. The same schedule, message ids and history operations as
`load.Load`, which the runner drives the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
from mqtools.common.ids import UniqueKeyGenerator
from mqtools.common.security import ClientSecurity
from mqtools.drills.history import FAIL, OK, RECEIVE, SEND, UNKNOWN, History, Op
from mqtools.drills.load import BALANCE_TIMEOUT, SEQ_PROPERTY, LoadSchedule, LoadSpec

SERVICE = "/apache.rocketmq.v2.MessagingService/"
#: What a received message stays invisible for: Apache's proxy takes no less (minInvisibleTimeMillsForRecv).
INVISIBLE = 10.0
#: One ReceiveMessage's long poll: the proxy's smallest (grpcClientConsumerMinLongPollingTimeoutMillis).
LONG_POLL = 5.0
#: Attempts of one send, each on the next proxy after a transport failure (the 5.x producers' maxAttempts).
SEND_ATTEMPTS = 3
#: Transport failures: the proxy is gone or unreachable, so the call moves to the next one.
MOVE_ON = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED,
                     grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL})


class ProxyClient:
    """One client's channels to every proxy and the one it uses now; `move_on` takes the next. Before its first call
    to a proxy it opens a Telemetry stream there and reports its settings, as the 5.x clients do (Apache's proxy
    reads a consumer's settings in ReceiveMessage and has none for a client that never reported them)."""

    def __init__(self, name: str, proxies: list[str], security: ClientSecurity | None,
                 settings: pb.Settings) -> None:
        self.name = name
        self.settings = settings
        self.client_id = f"mq-drill-{name}-{id(self):x}"
        self.proxies = proxies
        self.current = 0
        credentials = None
        if security is not None and security.tls is not None:  # the cluster's CA, else the system's
            ca = security.tls.ca_file
            credentials = grpc.ssl_channel_credentials(Path(ca).read_bytes() if ca else None)
        self._channels = [grpc.aio.secure_channel(p, credentials) if credentials is not None
                          else grpc.aio.insecure_channel(p) for p in proxies]
        self._meta = (("x-mq-client-id", self.client_id), ("x-mq-language", "PYTHON"),
                      ("x-mq-client-version", "mq-drill"), ("x-mq-protocol", "v2"))
        self._telemetry: dict[int, tuple[asyncio.Queue[bytes | None], asyncio.Task]] = {}

    @property
    def proxy(self) -> str:
        return self.proxies[self.current]

    def move_on(self, failed: int) -> None:
        """The proxy `failed` (an index) did not answer: the next one, unless another call moved already."""
        if self.current == failed:
            self.current = (failed + 1) % len(self.proxies)

    def endpoints(self, at: int | None = None) -> pb.Endpoints:
        """The access point of the proxy `at` (an index; default: the one in use), as the requests name it."""
        host, port = self.proxies[self.current if at is None else at].rsplit(":", 1)
        return pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host=host, port=int(port))])

    async def _reported(self, at: int, timeout: float) -> None:
        """The proxy `at` has this client's settings: a Telemetry stream opened there once, its first command the
        settings, answered before the first call (a stream that broke is opened again)."""
        opened = self._telemetry.get(at)
        if opened is not None and not opened[1].done():
            return
        outbound: asyncio.Queue[bytes | None] = asyncio.Queue()
        settings = pb.Settings()
        settings.CopyFrom(self.settings)
        settings.access_point.CopyFrom(self.endpoints(at))
        outbound.put_nowait(spb.TelemetryCommand(settings=settings).SerializeToString())

        async def commands() -> Any:
            while (command := await outbound.get()) is not None:
                yield command

        stream = self._channels[at].stream_stream(SERVICE + "Telemetry")(commands(), metadata=self._meta)
        answered = asyncio.get_running_loop().create_future()

        async def read() -> None:
            with contextlib.suppress(grpc.aio.AioRpcError, asyncio.CancelledError):
                async for raw in stream:
                    if not answered.done():
                        answered.set_result(spb.TelemetryCommand.FromString(raw))
            if not answered.done():
                answered.set_exception(grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(),
                                                            grpc.aio.Metadata(), "the Telemetry stream ended"))

        answered.add_done_callback(lambda f: f.cancelled() or f.exception())  # read here or not at all
        self._telemetry[at] = (outbound, asyncio.create_task(read()))
        try:
            await asyncio.wait_for(asyncio.shield(answered), timeout)
        except TimeoutError:
            raise grpc.aio.AioRpcError(grpc.StatusCode.DEADLINE_EXCEEDED, grpc.aio.Metadata(), grpc.aio.Metadata(),
                                       "no answer to the client's settings") from None

    async def unary(self, method: str, request: Any, answer: type, timeout: float) -> Any:
        """The answer of the proxy in use; grpc.aio.AioRpcError for a transport failure."""
        at = self.current
        await self._reported(at, timeout)
        raw = await self._channels[at].unary_unary(SERVICE + method)(
            request.SerializeToString(), metadata=self._meta, timeout=timeout)
        return answer.FromString(raw)

    async def receive(self, request: spb.ReceiveMessageRequest) -> tuple[int, Any]:
        at = self.current
        await self._reported(at, LONG_POLL)
        return at, self._channels[at].unary_stream(SERVICE + "ReceiveMessage")(
            request.SerializeToString(), metadata=self._meta, timeout=LONG_POLL + 5)

    async def close(self) -> None:
        for outbound, reader in self._telemetry.values():
            outbound.put_nowait(None)
            reader.cancel()
        await asyncio.gather(*(r for _, r in self._telemetry.values()), return_exceptions=True)
        await asyncio.gather(*(c.close() for c in self._channels), return_exceptions=True)


class ProxyLoad(LoadSchedule):
    """`load.Load`'s schedule and history over gRPC producers and SimpleConsumers (see the module docstring)."""

    def __init__(self, proxies: list[str], topic: str, group: str, spec: LoadSpec, history: History,
                 clock: Callable[[], float], brokers_by_addr: dict[str, str], run_id: str,
                 security: ClientSecurity | None = None) -> None:
        super().__init__(topic, group, spec, history, clock, brokers_by_addr, run_id)
        self.proxies = proxies
        self.producers = [ProxyClient(f"producer-{i}", proxies, security, self._settings(pb.PRODUCER))
                          for i in range(max(1, spec.producers))]
        self.consumers = [ProxyClient(f"consumer-{i}", proxies, security, self._settings(pb.SIMPLE_CONSUMER))
                          for i in range(max(1, spec.consumers))]
        self._ids = UniqueKeyGenerator()
        self._receivers: list[asyncio.Task] = []
        self._queues: dict[str, list[pb.MessageQueue]] = {}
        self._stopping = False

    def _settings(self, kind: int) -> pb.Settings:
        """What a 5.x producer or SimpleConsumer reports of itself (the access point is added per proxy)."""
        settings = pb.Settings(client_type=kind, user_agent=pb.UA(language=pb.PYTHON, version="mq-drill"))
        settings.request_timeout.FromMilliseconds(int(self.spec.send_timeout * 1000))
        topic = pb.Resource(name=self.topic)
        if kind == pb.PRODUCER:
            settings.publishing.CopyFrom(pb.Publishing(topics=[topic], validate_message_type=True))
        else:
            settings.subscription.CopyFrom(pb.Subscription(group=pb.Resource(name=self.group), subscriptions=[
                pb.SubscriptionEntry(topic=topic, expression=pb.FilterExpression(type=pb.TAG, expression="*"))]))
            settings.subscription.long_polling_timeout.FromMilliseconds(int(LONG_POLL * 1000))
        return settings

    # life cycle ---------------------------------------------------------------------------

    async def start(self) -> bool:
        """Consumers learn their queues (QueryAssignment) and start receiving; False when none were given in time."""
        deadline = time.monotonic() + BALANCE_TIMEOUT
        assigned = False
        while time.monotonic() < deadline and not assigned:
            assigned = all([await self._assign(c) for c in self.consumers])
            if not assigned:
                await asyncio.sleep(0.2)
        self._receivers = [asyncio.create_task(self._receive_loop(c)) for c in self.consumers]
        return assigned

    async def warm_up(self, broker_names: list[str]) -> None:
        """Every producer's channel to its proxy open (a route query) before the first measured send."""
        request = spb.QueryRouteRequest(topic=pb.Resource(name=self.topic))
        for producer in self.producers:
            request.endpoints.CopyFrom(producer.endpoints())
            with contextlib.suppress(grpc.aio.AioRpcError):
                await producer.unary("QueryRoute", request, spb.QueryRouteResponse, self.spec.send_timeout)

    async def stop(self) -> None:
        self._stopping = True
        for task in self._receivers:
            task.cancel()
        await asyncio.gather(*self._receivers, return_exceptions=True)
        await asyncio.gather(*(c.close() for c in [*self.producers, *self.consumers]))

    # sending ------------------------------------------------------------------------------

    def _request(self, i: int) -> tuple[spb.SendMessageRequest, str]:
        drill_id = f"{self.run_id}-{i:07d}"
        sysp = pb.SystemProperties(message_id=self._ids.next(), keys=[drill_id], body_encoding=pb.IDENTITY,
                                   message_type=pb.NORMAL)
        sysp.born_timestamp.FromMilliseconds(int(time.time() * 1000))
        msg = pb.Message(topic=pb.Resource(name=self.topic), user_properties={SEQ_PROPERTY: str(i)},
                         system_properties=sysp, body=drill_id.encode().ljust(self.spec.size, b"."))
        return spb.SendMessageRequest(messages=[msg]), drill_id

    async def _send(self, i: int, planned: float) -> None:
        request, drill_id = self._request(i)
        producer = self.producers[i % len(self.producers)]
        invoke = self._sending(drill_id)
        op = Op(producer.name, SEND, drill_id, round(invoke, 4), invoke, UNKNOWN, seq=i, planned=round(planned, 4))
        maybe_stored = False
        deadline = invoke + self.spec.send_timeout
        for attempt in range(1, SEND_ATTEMPTS + 1):
            left = deadline - self.clock()
            if left <= 0:
                break
            op.attempts = attempt
            at = producer.current
            try:
                answer = await producer.unary("SendMessage", request, spb.SendMessageResponse, left)
            except grpc.aio.AioRpcError as exc:
                # the request may have reached the proxy, and the broker, before the proxy went
                maybe_stored = True
                op.error = f"{exc.code().name}: {producer.proxies[at]}: {exc.details()}"
                if exc.code() not in MOVE_ON:
                    break
                producer.move_on(at)
                continue
            entry = answer.entries[0] if answer.entries else None
            if answer.status.code == pb.OK and entry is not None:
                op.result, op.status, op.msg_id, op.offset, op.error = OK, "SEND_OK", entry.message_id, entry.offset, None
            else:
                # the proxy's own codes (apache.rocketmq.v2.Code), not remoting's: named in the error, no op.code
                op.result = UNKNOWN if maybe_stored else FAIL
                code = answer.status.code
                name = pb.Code.Name(code) if code in pb.Code.values() else f"code {code}"
                op.error = f"{name}: {producer.proxies[at]}: {answer.status.message}"
            break
        op.complete = round(self.clock(), 4)
        self._sent(op)

    # receiving ----------------------------------------------------------------------------

    async def _assign(self, consumer: ProxyClient) -> bool:
        """The queues QueryAssignment gives this consumer (one per broker); False when it gave none."""
        request = spb.QueryAssignmentRequest(topic=pb.Resource(name=self.topic), group=pb.Resource(name=self.group),
                                             endpoints=consumer.endpoints())
        at = consumer.current
        try:
            answer = await consumer.unary("QueryAssignment", request, spb.QueryAssignmentResponse,
                                          self.spec.send_timeout)
        except grpc.aio.AioRpcError as exc:
            if exc.code() in MOVE_ON:
                consumer.move_on(at)
            return False
        queues = [a.message_queue for a in answer.assignments] if answer.status.code == pb.OK else []
        if queues:
            self._queues[consumer.name] = queues
        return bool(queues)

    async def _receive_loop(self, consumer: ProxyClient) -> None:
        for turn in itertools.count():
            if self._stopping:
                return
            queues = self._queues.get(consumer.name)
            if not queues or turn % 50 == 49:  # a route that changed (a broker gone or back) is taken up
                if not await self._assign(consumer) and not self._queues.get(consumer.name):
                    await asyncio.sleep(0.2)
                    continue
                queues = self._queues[consumer.name]
            request = spb.ReceiveMessageRequest(group=pb.Resource(name=self.group),
                                                message_queue=queues[turn % len(queues)],
                                                filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"),
                                                batch_size=32, auto_renew=False)
            request.invisible_duration.FromMilliseconds(int(INVISIBLE * 1000))
            request.long_polling_timeout.FromMilliseconds(int(LONG_POLL * 1000))
            got: list[pb.Message] = []
            at = consumer.current
            try:
                at, call = await consumer.receive(request)
                async for raw in call:
                    answer = spb.ReceiveMessageResponse.FromString(raw)
                    if answer.WhichOneof("content") == "message":
                        got.append(answer.message)
            except grpc.aio.AioRpcError as exc:
                if exc.code() in MOVE_ON:
                    consumer.move_on(at)
                if not got:
                    await asyncio.sleep(0.1)  # no hot loop while every proxy is unreachable
            if got:
                self._received_batch(consumer, got)
                await self._ack(consumer, got)

    def _received_batch(self, consumer: ProxyClient, msgs: list[pb.Message]) -> None:
        now = round(self.clock(), 4)
        ops = []
        for m in msgs:
            sysp = m.system_properties
            seq = m.user_properties.get(SEQ_PROPERTY)
            ops.append(Op(consumer.name, RECEIVE, sysp.keys[0] if sysp.keys else f"foreign:{sysp.message_id}", now,
                          now, OK, seq=int(seq) if seq and seq.isdigit() else None, msg_id=sysp.message_id,
                          broker=self.brokers_by_addr.get(sysp.store_host), queue=sysp.queue_id,
                          offset=sysp.queue_offset, store_host=sysp.store_host or None))
        self._delivered(ops, now)

    async def _ack(self, consumer: ProxyClient, msgs: list[pb.Message]) -> None:
        """Acknowledge on the proxy in use now (a receipt handle is the broker's, so any proxy takes it); one that
        fails leaves the message to come back after its invisible time."""
        request = spb.AckMessageRequest(group=pb.Resource(name=self.group), topic=pb.Resource(name=self.topic),
                                        entries=[spb.AckMessageEntry(message_id=m.system_properties.message_id,
                                                                     receipt_handle=m.system_properties.receipt_handle)
                                                 for m in msgs])
        at = consumer.current
        try:
            await consumer.unary("AckMessage", request, spb.AckMessageResponse, self.spec.send_timeout)
        except grpc.aio.AioRpcError as exc:
            if exc.code() in MOVE_ON:
                consumer.move_on(at)

    async def settle(self, quiet: float, cap: float) -> None:
        """As `Load.settle`, waiting at least an invisible time and a long poll past the last delivery: a message
        its consumer could not acknowledge comes back only then."""
        quiet = max(quiet, INVISIBLE + LONG_POLL)
        await super().settle(quiet, max(cap, 2 * quiet))
