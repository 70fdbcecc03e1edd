"""Clients the proxy forgets and the messages they held (Apache's ClusterConsumerManager channel expiry and
DefaultReceiptHandleManager.clearGroup / clearAllHandle): a client not heard from for 120 s is forgotten though its
Telemetry stream is still open (a hung process keeps its connection), and whenever a client is forgotten, ends, or
the proxy stops, the messages it held are made visible again within a second rather than staying invisible for the
rest of their time. The brokers are faked at Popper.change_invisible."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
from mqtools.client.instance import ClientInstance
from mqtools.proxy.call import Call
from mqtools.proxy.clients import Clients
from mqtools.proxy.config import ProxyConfig
from mqtools.proxy.receipt import ReceiptHandle
from mqtools.proxy.renewal import CLEAR_INVISIBLE_MS
from mqtools.proxy.server import ProxyServer
from mqtools.proxy.service import MessagingService
from mqtools.proxy.settings import GroupPolicy

CALL = Call("hung", "JAVA", "5.0.7", "127.0.0.1:1", None)


def _held(offset: int) -> ReceiptHandle:
    return ReceiptHandle.decode(f"{offset} {int(time.time() * 1000)} 60000 2 0 broker-a 3 {offset} 8042")


def _service(now: list[int]) -> tuple[MessagingService, list[tuple[int, int]]]:
    """A service whose clients live by `now` (ms) and whose changes of invisible time are recorded."""
    service = MessagingService(ProxyConfig(), ClientInstance(["127.0.0.1:9876"]), port=0)
    service.clients = Clients(clock_ms=lambda: now[0])
    changed: list[tuple[int, int]] = []

    async def change_invisible(handle: ReceiptHandle, group: str, topic: str, invisible_ms: int) -> str:
        changed.append((handle.offset, invisible_ms))
        return handle.text

    service.popper.change_invisible = change_invisible  # type: ignore[method-assign]
    return service, changed


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def test_a_client_not_heard_from_for_120_s_is_forgotten_though_its_stream_is_open() -> None:
    now = [1_000_000]
    clients = Clients(clock_ms=lambda: now[0])
    clients.open_stream("hung")
    clients.open_stream("alive")
    now[0] += 119_000
    assert clients.expire() == []
    clients.touch("alive")  # a heartbeat
    now[0] += 2_000
    assert [c.client_id for c in clients.expire()] == ["hung"]
    assert clients.get("alive") is not None


def test_a_stream_that_ends_is_no_word_from_its_client() -> None:
    """grpc ends the stream of a SIGSTOPped client about a minute later: the 120 s still count from the client's
    last call, not from that end."""
    now = [1_000_000]
    clients = Clients(clock_ms=lambda: now[0])
    stream = clients.open_stream("hung")
    now[0] += 60_000
    clients.close_stream("hung", stream)
    now[0] += 61_000
    assert [c.client_id for c in clients.expire()] == ["hung"]


async def test_the_sweep_makes_a_silent_clients_held_messages_visible_again_in_a_second() -> None:
    """A SIGSTOPped push consumer with its stream open: its auto-renewed messages are no longer renewed for hours
    but changed to CLEAR_INVISIBLE_MS once the client is forgotten."""
    now = [1_000_000]
    service, changed = _service(now)
    service.clients.open_stream("hung")
    for offset in (7, 8):
        service.renewals.add("hung", "G", "T", f"M{offset}", _held(offset))
    now[0] += 121_000
    await service.sweep()
    await _settle()
    assert service.clients.get("hung") is None
    assert sorted(changed) == [(7, CLEAR_INVISIBLE_MS), (8, CLEAR_INVISIBLE_MS)] and CLEAR_INVISIBLE_MS == 1_000
    assert len(service.renewals) == 0


async def test_a_terminated_client_has_its_held_messages_made_visible_again_in_a_second() -> None:
    service, changed = _service([1_000_000])
    service.clients.touch("hung").settings = pb.Settings(client_type=pb.PUSH_CONSUMER,
                                                         subscription=pb.Subscription(group=pb.Resource(name="G")))
    service.renewals.add("hung", "G", "T", "M7", _held(7))
    service.renewals.add("other", "G", "T", "M9", _held(9))
    answer = await service.NotifyClientTermination(spb.NotifyClientTerminationRequest(group=pb.Resource(name="G")),
                                                   CALL)
    assert answer.status.code == pb.OK
    await _settle()
    assert changed == [(7, CLEAR_INVISIBLE_MS)]
    assert len(service.renewals) == 1  # the other client's handle is still renewed


class _Instance(ClientInstance):
    """The proxy's link to the cluster, recording when it is shut down."""

    def __init__(self, events: list[str]) -> None:
        super().__init__(["127.0.0.1:9876"])
        self.events = events

    async def shutdown(self) -> None:
        self.events.append("instance shut down")


async def test_a_proxy_stopping_makes_every_held_message_visible_again_within_its_grace() -> None:
    """clearAllHandle, bounded: a change to a hung broker does not hold the shutdown past its grace, and the
    changes go out before the proxy leaves the cluster."""
    events: list[str] = []
    server = ProxyServer(ProxyConfig(), instance=_Instance(events))
    service = server.service = MessagingService(server.config, server.instance, port=0)

    async def change_invisible(handle: ReceiptHandle, group: str, topic: str, invisible_ms: int) -> str:
        if handle.broker_name == "broker-hung":
            await asyncio.Event().wait()
        events.append(f"{handle.offset} visible in {invisible_ms}")
        return handle.text

    service.popper.change_invisible = change_invisible  # type: ignore[method-assign]
    service.renewals.add("a", "G", "T", "M7", _held(7))
    service.renewals.add("b", "G", "T", "M8", _held(8))
    service.renewals.add("b", "G", "T", "M9", ReceiptHandle.decode(_held(9).text.replace("broker-a", "broker-hung")))
    started = time.monotonic()
    await asyncio.wait_for(server.shutdown(grace=0.3), 2)
    assert time.monotonic() - started < 1.5
    assert sorted(events[:2]) == [f"7 visible in {CLEAR_INVISIBLE_MS}", f"8 visible in {CLEAR_INVISIBLE_MS}"]
    assert events[2:] == ["instance shut down"]


async def test_a_forgotten_client_heard_again_on_its_open_stream_is_known_again_with_that_stream() -> None:
    """A client that was only paused (forgotten meanwhile) and sends its settings again on the same stream gets its
    stream back, so the proxy's commands (transaction checks) reach it again."""
    now = [1_000_000]
    service, _ = _service(now)

    async def group_policy(group: str, addrs: list[str]) -> GroupPolicy:
        return GroupPolicy()

    service.metadata.group_policy = group_policy  # type: ignore[method-assign]
    commands: asyncio.Queue[spb.TelemetryCommand | None] = asyncio.Queue()

    async def requests() -> AsyncIterator[spb.TelemetryCommand]:
        while (command := await commands.get()) is not None:
            yield command

    settings = spb.TelemetryCommand(settings=pb.Settings(client_type=pb.SIMPLE_CONSUMER, subscription=pb.Subscription(
        group=pb.Resource(name="G"))))
    stream = service.Telemetry(requests(), CALL)
    await commands.put(settings)
    assert (await stream.__anext__()).status.code == pb.OK
    now[0] += 121_000
    await service.sweep()
    assert service.clients.get("hung") is None
    await commands.put(settings)
    assert (await stream.__anext__()).status.code == pb.OK
    client = service.clients.get("hung")
    assert client is not None and len(client.streams) == 1 and client.consumer_group == "G"
    await commands.put(None)
    assert [response async for response in stream] == []
    assert client.streams == []
