"""The gRPC server of `mq proxy`: grpc.aio, MessagingService registered by hand over raw bytes.

Requests arrive as bytes and are parsed here, so a malformed protobuf is answered INVALID_ARGUMENT with what was
wrong (grpc's own deserializer would answer INTERNAL and log a traceback). A request over
grpcMaxInboundMessageSize is refused by grpc itself (RESOURCE_EXHAUSTED); an unknown method is UNIMPLEMENTED
("Method not found"); the methods of the 5.1.2 client's proto that this proxy does not serve are UNIMPLEMENTED
with a sentence naming them. An unexpected error in a method is INTERNAL with one log line, and the proxy keeps
serving the other calls.

Before a method runs, a call passes the `Gate`: the ACL 2.0 signature (authenticationEnabled, mqtools.proxy.auth),
the user's rules (authorizationEnabled, mqtools.proxy.authorize), then the client id; so does each command of a
Telemetry stream, as in Apache. A refusal there is the method's own response with a status (UNAUTHORIZED,
CLIENT_ID_REQUIRED), as Apache answers it; on a Telemetry stream, a TelemetryCommand with that status, the stream
going on. With tlsCertPath/tlsKeyPath the port takes TLS and plaintext (tls.server.mode permissive, through
mqtools.proxy.negotiator), or TLS only (enforcing).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import grpc
from google.protobuf.message import DecodeError, Message

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
from mqtools.client.instance import ClientInstance
from mqtools.common.configkeys import ConfigError
from mqtools.common.security import ClientSecurity, SessionCredentials, TlsClientOptions
from mqtools.common.tls import TlsMode, TlsServerSettings
from mqtools.common.tls_certificates import TlsCertificateManager
from mqtools.proxy.auth import Authenticator
from mqtools.proxy.authorize import Authorizer
from mqtools.proxy.call import Call
from mqtools.proxy.config import ProxyConfig, ProxyConfigError
from mqtools.proxy.errors import Code, ProxyError, status
from mqtools.proxy.fault import DETECT_ROUND_S
from mqtools.proxy.negotiator import ProtocolNegotiator
from mqtools.proxy.remoting import ProxyRemoting
from mqtools.proxy.service import MessagingService

log = logging.getLogger(__name__)

SERVICE = "apache.rocketmq.v2.MessagingService"

UNARY: dict[str, type[Message]] = {
    "QueryRoute": spb.QueryRouteRequest,
    "Heartbeat": spb.HeartbeatRequest,
    "SendMessage": spb.SendMessageRequest,
    "QueryAssignment": spb.QueryAssignmentRequest,
    "AckMessage": spb.AckMessageRequest,
    "ForwardMessageToDeadLetterQueue": spb.ForwardMessageToDeadLetterQueueRequest,
    "EndTransaction": spb.EndTransactionRequest,
    "NotifyClientTermination": spb.NotifyClientTerminationRequest,
    "ChangeInvisibleDuration": spb.ChangeInvisibleDurationRequest,
}
#: In the protos (and the 5.1.2 Python client's) but not served here yet.
NOT_SERVED = {
    "PullMessage": "unary_stream", "UpdateOffset": "unary_unary", "GetOffset": "unary_unary",
    "QueryOffset": "unary_unary", "RecallMessage": "unary_unary", "SyncLiteSubscription": "unary_unary",
}


def _headers(context: grpc.aio.ServicerContext) -> dict[str, str]:
    return {k: v for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)}


def _call(context: grpc.aio.ServicerContext, peers: Mapping[str, str]) -> Call:
    meta = _headers(context)
    remaining = context.time_remaining()
    peer = _peer_address(context.peer() or "")
    return Call(client_id=meta.get("x-mq-client-id", ""), language=meta.get("x-mq-language", ""),
                version=meta.get("x-mq-client-version", ""), peer=peers.get(peer, peer), time_left=remaining)


def _peer_address(peer: str) -> str:
    """grpc's `ipv4:127.0.0.1:5555` / `ipv6:[::1]:5555` as `host:port`."""
    for prefix in ("ipv4:", "ipv6:"):
        if peer.startswith(prefix):
            return peer[len(prefix):]
    return peer


def _parse(kind: type[Message], raw: bytes, method: str) -> Message:
    try:
        return kind.FromString(raw)
    except (DecodeError, RuntimeWarning, ValueError) as exc:
        raise ProxyError(Code.BAD_REQUEST, f"malformed {kind.DESCRIPTOR.name} in {method}: {exc}") from None


async def _abort_for(context: grpc.aio.ServicerContext, exc: BaseException, method: str) -> None:
    if isinstance(exc, ProxyError):
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, exc.message)
    log.warning("%s failed: %s: %s", method, type(exc).__name__, exc)
    await context.abort(grpc.StatusCode.INTERNAL, f"{method} failed: {type(exc).__name__}: {exc}")


class Admission(ProxyError):
    """A call refused before its method runs (authentication, no client id): Apache answers these in the
    response's status (GrpcMessagingApplication.writeResponse), the gRPC call itself ends OK."""


def _names(text: str) -> frozenset[str]:
    """A comma-separated whitelist of request names (apache.rocketmq.v2.QueryRouteRequest, ...)."""
    return frozenset(w.strip() for w in text.split(",") if w.strip())


class Gate:
    """What every call passes before its method: the ACL 2.0 signature check and the user's rules (each when
    enabled), then the client id (ContextInitPipeline, AuthenticationPipeline, AuthorizationPipeline, then
    validateContext, in Apache's order)."""

    def __init__(self, authenticator: Authenticator | None = None, authorizer: Authorizer | None = None,
                 peers: Mapping[str, str] | None = None) -> None:
        self.authenticator = authenticator
        self.authorizer = authorizer
        #: the negotiator's relay addresses -> the clients' own (permissive TLS); empty when grpc faces the clients
        self.peers: Mapping[str, str] = peers if peers is not None else {}

    async def admit(self, context: grpc.aio.ServicerContext, request: Message) -> Call:
        call = _call(context, self.peers)
        headers = _headers(context) if self.authenticator is not None or self.authorizer is not None else {}
        try:
            if self.authenticator is not None:
                await self.authenticator.authenticate(headers, request.DESCRIPTOR.full_name)
            if self.authorizer is not None:
                await self.authorizer.authorize(headers, request, call.peer.rpartition(":")[0] or None)
        except ProxyError as exc:
            raise Admission(exc.code, exc.message) from None
        if not call.client_id:
            raise Admission(Code.CLIENT_ID_REQUIRED, "client id cannot be empty")
        return call


def _unary(service: MessagingService, gate: Gate, name: str, kind: type[Message]) -> grpc.RpcMethodHandler:
    method: Callable[[Any, Call], Awaitable[Message]] = getattr(service, name)
    answer: type[Message] = getattr(spb, f"{name}Response")

    async def handle(raw: bytes, context: grpc.aio.ServicerContext) -> bytes:
        try:
            request = _parse(kind, raw, name)
            call = await gate.admit(context, request)
            response = await method(request, call)
        except Admission as refused:
            return answer(status=status(refused.code, refused.message)).SerializeToString()  # type: ignore[call-arg]
        except Exception as exc:
            await _abort_for(context, exc, name)
            raise
        return response.SerializeToString()

    return grpc.unary_unary_rpc_method_handler(handle)


def _receive(service: MessagingService, gate: Gate) -> grpc.RpcMethodHandler:
    async def handle(raw: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        try:
            request = _parse(spb.ReceiveMessageRequest, raw, "ReceiveMessage")
            try:
                call = await gate.admit(context, request)
            except Admission as refused:
                yield spb.ReceiveMessageResponse(status=status(refused.code, refused.message)).SerializeToString()
                return
            async for response in service.ReceiveMessage(request, call):
                yield response.SerializeToString()
        except Exception as exc:  # noqa: BLE001 - every failure becomes a status, the server goes on
            await _abort_for(context, exc, "ReceiveMessage")

    return grpc.unary_stream_rpc_method_handler(handle)


def _telemetry(service: MessagingService, gate: Gate) -> grpc.RpcMethodHandler:
    async def handle(raw_requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        async def parsed() -> AsyncIterator[spb.TelemetryCommand]:
            async for raw in raw_requests:
                yield _parse(spb.TelemetryCommand, raw, "Telemetry")

        try:
            call: Call | None = None
            commands = parsed()
            # the client's stream opens on its first admitted command (a peer refused from the start is never
            # recorded as a client); refusals before it are answered here, those after it on the open stream
            async for first in commands:
                try:
                    call = await gate.admit(context, first)
                except Admission as refused:  # every command gets the refusal until the client gives up
                    yield spb.TelemetryCommand(status=status(refused.code, refused.message)).SerializeToString()
                    continue
                break
            if call is None:
                return

            async def judged() -> AsyncIterator[spb.TelemetryCommand | pb.Status]:
                """Every command passes the gate, as each of Apache's does (its settings name what they publish
                or subscribe to); a refused one goes on as its status, nothing of it registered."""
                yield first
                async for command in commands:
                    try:
                        await gate.admit(context, command)
                    except Admission as refused:
                        yield status(refused.code, refused.message)
                        continue
                    yield command

            async for response in service.Telemetry(judged(), call):
                yield response.SerializeToString()
        except Exception as exc:  # noqa: BLE001
            await _abort_for(context, exc, "Telemetry")

    return grpc.stream_stream_rpc_method_handler(handle)


def _not_served(name: str, shape: str) -> grpc.RpcMethodHandler:
    text = f"{name} is not implemented by mq proxy (MessagingService methods served: " \
           f"{', '.join(sorted([*UNARY, 'ReceiveMessage', 'Telemetry']))})"

    async def unary(raw: bytes, context: grpc.aio.ServicerContext) -> bytes:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, text)
        raise AssertionError("abort returns by raising")

    async def stream(raw: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, text)
        yield b""  # pragma: no cover - abort raised

    if shape == "unary_stream":
        return grpc.unary_stream_rpc_method_handler(stream)
    return grpc.unary_unary_rpc_method_handler(unary)


def handlers(service: MessagingService, gate: Gate | None = None) -> grpc.GenericRpcHandler:
    gate = gate or Gate()
    table = {name: _unary(service, gate, name, kind) for name, kind in UNARY.items()}
    table["ReceiveMessage"] = _receive(service, gate)
    table["Telemetry"] = _telemetry(service, gate)
    table.update({name: _not_served(name, shape) for name, shape in NOT_SERVED.items()})
    return grpc.method_handlers_generic_handler(SERVICE, table)


def client_security(config: ProxyConfig) -> ClientSecurity | None:
    """The proxy's own side towards the cluster: TLS (tls.enable, the trusted CA) and its inner credentials."""
    tls = TlsClientOptions(config.tls_client_trust_cert_path or None) if config.tls_enable else None
    inner = config.inner_credentials()
    creds = SessionCredentials(*inner) if inner is not None else None
    return ClientSecurity(creds, tls) if tls is not None or creds is not None else None


def server_certificates(config: ProxyConfig) -> TlsCertificateManager:
    """tlsCertPath and tlsKeyPath as every port of the proxy serves them, loaded again when they change;
    ProxyConfigError when they do not load."""
    settings = TlsServerSettings(config.tls_mode, config.tls_cert_path or None, config.tls_key_path or None)
    try:
        return TlsCertificateManager(settings, interval_s=config.tls_cert_watch_interval_ms / 1000)
    except ConfigError as exc:
        raise ProxyConfigError(str(exc)) from None


def server_credentials(certificates: TlsCertificateManager) -> grpc.ServerCredentials | None:
    """TLS for the gRPC port when tls.server.mode is not disabled. grpc asks at each handshake for a newer pair
    than the one it holds, so a renewed certificate reaches new connections as it does on the remoting port."""
    if not certificates.enabled:
        return None
    held = certificates.generation

    def newer() -> grpc.ServerCertificateConfiguration | None:
        nonlocal held
        if held == certificates.generation:
            return None
        held = certificates.generation
        return grpc.ssl_server_certificate_configuration([certificates.pem_pair])

    return grpc.dynamic_ssl_server_credentials(grpc.ssl_server_certificate_configuration([certificates.pem_pair]),
                                               newer)


class ProxyServer:
    """`mq proxy start`'s service: the proxy's link to the cluster, its gRPC server and (cluster mode) its remoting
    port for the operators' tools (mqtools.proxy.remoting)."""

    def __init__(self, config: ProxyConfig, *, instance: ClientInstance | None = None) -> None:
        self.config = config
        self.instance = instance or ClientInstance(config.namesrv_list, instance_name=f"proxy-{id(self)}",
                                                   security=client_security(config))
        self.port = config.grpc_server_port
        self.service: MessagingService | None = None
        self._server: grpc.aio.Server | None = None
        self.negotiator: ProtocolNegotiator | None = None
        self.remoting: ProxyRemoting | None = None
        self._loops: list[asyncio.Task] = []
        #: The certificate the gRPC and remoting ports serve (set by start: a bad file is a ProxyConfigError there).
        self.tls: TlsCertificateManager | None = None

    async def start(self) -> None:
        self.tls = server_certificates(self.config)
        size = self.config.grpc_max_inbound_message_size
        self._server = grpc.aio.server(options=[
            ("grpc.max_receive_message_length", size), ("grpc.max_send_message_length", size),
            ("grpc.so_reuseport", 0), ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.min_ping_interval_without_data_ms", 5000)])
        bound = await self._bind()
        self.port = bound
        await self.tls.start()
        self.service = MessagingService(self.config, self.instance, port=bound)
        cfg = self.config
        users = Authenticator(self.instance, cfg.rocketmq_cluster_name, whitelist=_names(cfg.authentication_whitelist),
                              ttl=cfg.user_cache_refresh_second, max_users=cfg.user_cache_max_num)
        authorizer = Authorizer(users, whitelist=_names(cfg.authorization_whitelist), ttl=cfg.acl_cache_refresh_second,
                                max_acls=cfg.acl_cache_max_num) if cfg.authorization_enabled else None
        gate = Gate(users if cfg.authentication_enabled else None, authorizer,
                    self.negotiator.peers if self.negotiator is not None else None)
        self._server.add_generic_rpc_handlers((handlers(self.service, gate),))
        await self.instance.start()
        if cfg.proxy_mode.lower() == "cluster":
            # the remoting port follows tls.server.mode as the gRPC port does (permissive: TLS or plain per connection)
            tls = self.tls if self.tls.enabled else None
            self.remoting = ProxyRemoting(self.service.clients, cfg.grpc_bind_address, cfg.remoting_listen_port,
                                          authenticator=users if cfg.authentication_enabled else None,
                                          authorizer=authorizer, cluster=cfg.rocketmq_cluster_name, tls=tls)
            await self.remoting.start()
        await self._server.start()
        if self.negotiator is not None:
            await self.negotiator.start()
        self._loops.append(asyncio.create_task(self._every(2, "sweep", MessagingService.sweep)))
        if cfg.start_detector_enable:
            self._loops.append(asyncio.create_task(self._every(
                DETECT_ROUND_S, "detector round", lambda service: service.sender.detect(cfg.detect_timeout))))

    async def _bind(self) -> int:
        """The public gRPC port: grpc's own (plaintext, or TLS when enforcing), or in permissive mode the
        negotiator's, in front of a TLS and a plaintext loopback port of the same grpc server."""
        assert self._server is not None and self.tls is not None
        where = f"{self.config.grpc_bind_address}:{self.config.grpc_server_port}"
        credentials = server_credentials(self.tls)
        if credentials is not None and self.config.tls_mode is TlsMode.PERMISSIVE:
            inner = (self._server.add_secure_port("127.0.0.1:0", credentials), self._server.add_insecure_port(
                "127.0.0.1:0"))
            if 0 in inner:
                raise OSError("cannot listen on the loopback ports behind the gRPC port")
            self.negotiator = ProtocolNegotiator(self.config.grpc_bind_address, self.config.grpc_server_port,
                                                 tls_port=inner[0], plain_port=inner[1])
            try:
                return await self.negotiator.bind()
            except OSError as exc:
                raise OSError(f"cannot listen on {where}: {exc.strerror or exc}") from None
        bound = self._server.add_insecure_port(where) if credentials is None \
            else self._server.add_secure_port(where, credentials)
        if bound == 0:
            raise OSError(f"cannot listen on {where}")
        return bound

    async def _every(self, seconds: float, what: str, work: Callable[[MessagingService], Awaitable[None]]) -> None:
        """`work` on the service every `seconds` until cancelled; a failed round is logged and the next tries again
        (the sweep every 2 s; with startDetectorEnable, a detector round every DETECT_ROUND_S: fault.py)."""
        while True:
            await asyncio.sleep(seconds)
            if self.service is not None:
                try:
                    await work(self.service)
                except Exception as exc:  # noqa: BLE001 - the next round tries again
                    log.warning("proxy %s failed: %s: %s", what, type(exc).__name__, exc)

    async def shutdown(self, grace: float = 3.0) -> None:
        """Stop taking calls, let running ones end within `grace` seconds, make the messages the clients held
        visible again (within `grace` seconds more), then leave the cluster."""
        for task in self._loops:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._loops.clear()
        if self.tls is not None:
            await self.tls.shutdown()
        if self.negotiator is not None:
            await self.negotiator.close()
            self.negotiator = None
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
        if self.remoting is not None:
            await self.remoting.shutdown()
            self.remoting = None
        if self.service is not None:
            await self.service.close(grace)
        await self.instance.shutdown()
