"""The gRPC clients connected to this proxy: who they are, what they reported, their Telemetry streams
(GrpcClientSettingsManager and GrpcChannelManager's roles).

A client is known by its `x-mq-client-id` header. Its Telemetry stream is an outbound queue the proxy writes
server commands into (RecoverOrphanedTransactionCommand); the queue is bounded, so a client that stops reading
costs at most `max_pending` commands. A client not heard from (a call, a command on its stream) for `idle_ms` is
forgotten, its stream open or not: a hung process keeps its connection and stream open (Apache drops a channel whose
heartbeats stopped for channelExpiredTimeout, 120 s, whatever its connection).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb

log = logging.getLogger(__name__)

#: ProxyConfig.channelExpiredTimeout: a client not heard from for this long is forgotten.
CHANNEL_EXPIRED_MS = 120_000


@dataclass
class GrpcClient:
    client_id: str
    language: str = ""
    version: str = ""
    peer: str = ""
    settings: pb.Settings | None = None
    streams: list[asyncio.Queue[spb.TelemetryCommand]] = field(default_factory=list)
    last_seen_ms: int = 0

    @property
    def publishing_topics(self) -> set[str]:
        if self.settings is None or not self.settings.HasField("publishing"):
            return set()
        return {t.name for t in self.settings.publishing.topics}

    @property
    def consumer_group(self) -> str | None:
        if self.settings is None or not self.settings.HasField("subscription"):
            return None
        return self.settings.subscription.group.name


class Clients:
    """Every client seen, by id."""

    def __init__(self, *, idle_ms: int = CHANNEL_EXPIRED_MS, max_pending: int = 64,
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.idle_ms = idle_ms
        self.max_pending = max_pending
        self._clock_ms = clock_ms
        self._clients: dict[str, GrpcClient] = {}
        self._turn = itertools.count()

    def __len__(self) -> int:
        return len(self._clients)

    def get(self, client_id: str) -> GrpcClient | None:
        return self._clients.get(client_id)

    def touch(self, client_id: str, *, language: str = "", version: str = "", peer: str = "") -> GrpcClient:
        client = self._clients.get(client_id)
        if client is None:
            client = self._clients[client_id] = GrpcClient(client_id)
        client.language = language or client.language
        client.version = version or client.version
        client.peer = peer or client.peer
        client.last_seen_ms = self._clock_ms()
        return client

    def open_stream(self, client_id: str) -> asyncio.Queue[spb.TelemetryCommand]:
        queue: asyncio.Queue[spb.TelemetryCommand] = asyncio.Queue(self.max_pending)
        self.touch(client_id).streams.append(queue)
        return queue

    def heard(self, client_id: str, queue: asyncio.Queue[spb.TelemetryCommand]) -> GrpcClient:
        """A command on the client's open stream `queue`: the client is alive, and known again with that stream if
        it was forgotten meanwhile (paused past idle_ms), so the proxy's commands reach it again."""
        client = self.touch(client_id)
        if queue not in client.streams:
            client.streams.append(queue)
        return client

    def close_stream(self, client_id: str, queue: asyncio.Queue[spb.TelemetryCommand]) -> None:
        """The stream ended; no word from the client (grpc ends a hung client's stream too)."""
        client = self._clients.get(client_id)
        if client is not None and queue in client.streams:
            client.streams.remove(queue)

    def remove(self, client_id: str) -> GrpcClient | None:
        return self._clients.pop(client_id, None)

    def all(self) -> list[GrpcClient]:
        return list(self._clients.values())

    def consumers_of(self, group: str) -> list[GrpcClient]:
        """The clients whose settings name `group` as their consumer group."""
        return [c for c in self._clients.values() if group and c.consumer_group == group]

    def producers_of(self, topic: str) -> list[GrpcClient]:
        """Producers that publish `topic` and have a Telemetry stream open."""
        return [c for c in self._clients.values() if c.streams and topic in c.publishing_topics]

    def published_topics(self) -> set[str]:
        return {t for c in self._clients.values() for t in c.publishing_topics}

    def send_to_one(self, candidates: list[GrpcClient], command: spb.TelemetryCommand) -> GrpcClient | None:
        """Write the command on one candidate's stream (in turn); None when every stream is full or none is."""
        if not candidates:
            return None
        start = next(self._turn)
        for i in range(len(candidates)):
            client = candidates[(start + i) % len(candidates)]
            for queue in client.streams:
                try:
                    queue.put_nowait(command)
                except asyncio.QueueFull:
                    continue
                return client
        return None

    def expire(self) -> list[GrpcClient]:
        """Forget the clients not heard from for idle_ms, with a stream open or not; the ones forgotten."""
        now = self._clock_ms()
        gone = [c for c in self._clients.values() if now - c.last_seen_ms > self.idle_ms]
        for client in gone:
            del self._clients[client.client_id]
        return gone
