"""Producer.shutdown with async sends still running, and a closed client opening no connection.

The review's run (shutdown_leak.py): four async sends (timeout 8 s) to a SIGSTOPped broker, the producer shut down
with send_timeout 1 s. shutdown returned after 1 s with every future still pending; their retries reconnected
through the closed RemotingClient, stored the messages on the other broker later, and left two connections open.
Now shutdown ends what still runs after its wait, each future failing with a client error that says the message
may have been stored, and a closed client refuses to connect, as Apache's MQClientInstance.shutdown closes its
remoting client under whatever still runs."""

from __future__ import annotations

import asyncio

import pytest
from unit.client.fake_remoting import FakeRemoting, fake_instance, route_data

from mqtools.client.errors import (
    ConnectFailedError,
    MQClientError,
    ProducerShutDownError,
    SendAbandonedError,
    UnreachableError,
)
from mqtools.client.instance import ClientInstance
from mqtools.client.producer import Producer
from mqtools.client.types import SendResult
from mqtools.common.message import Message
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingConnectError, RemotingTimeoutError

SEND_TIMEOUT = 0.2


async def hung(addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
    """A SIGSTOPped broker: the request waits out its timeout."""
    await asyncio.sleep(timeout)
    raise RemotingTimeoutError(addr, timeout, cmd.code)


def hung_producer(**options: object) -> tuple[Producer, FakeRemoting]:
    remoting = FakeRemoting({"T": route_data({"broker-a": 2, "broker-b": 2})}, hung)
    return Producer("pg", instance=fake_instance(remoting), send_timeout=SEND_TIMEOUT, **options), remoting  # type: ignore[arg-type]


def send_requests(remoting: FakeRemoting) -> int:
    return sum(1 for s in remoting.sent if s.cmd.code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE))


async def test_shutdown_ends_the_async_sends_still_running_with_a_client_error() -> None:
    producer, remoting = hung_producer()
    await producer.start()
    called: list[tuple[SendResult | None, BaseException | None]] = []
    futures = [producer.send_async(Message("T", b"late"), lambda r, e: called.append((r, e)), timeout=8)
               for _ in range(4)]
    loop = asyncio.get_running_loop()
    began = loop.time()
    await producer.shutdown()
    assert loop.time() - began < SEND_TIMEOUT + 0.5, "shutdown waits send_timeout, not the sends' 8 s"
    assert all(f.done() for f in futures), "no send outlives the producer"
    for future in futures:
        exc = future.exception()
        assert isinstance(exc, SendAbandonedError) and isinstance(exc, UnreachableError)
        assert "shut down" in str(exc) and "may have been stored" in str(exc)
    await asyncio.sleep(0)
    assert len(called) == 4 and all(r is None and isinstance(e, SendAbandonedError) for r, e in called)
    sent = send_requests(remoting)
    await asyncio.sleep(SEND_TIMEOUT)
    assert send_requests(remoting) == sent, "no attempt after shutdown returned"


async def test_auto_batched_sends_in_flight_or_waiting_for_room_end_at_shutdown() -> None:
    producer, _ = hung_producer(auto_batch=True, total_batch_max_bytes=100)
    await producer.start()
    futures = [producer.send_async(Message("T", b"x" * 60), timeout=8) for _ in range(3)]
    await asyncio.sleep(0)
    await producer.shutdown()
    assert all(f.done() for f in futures)
    first, *waiting = [f.exception() for f in futures]
    assert isinstance(first, SendAbandonedError) and "may have been stored" in str(first)
    for exc in waiting:  # the memory bound held them back: never sent
        assert isinstance(exc, ProducerShutDownError) and not isinstance(exc, UnreachableError)
        assert "shut down" in str(exc) and "nothing was sent" in str(exc)


async def listener() -> tuple[asyncio.Server, str, list[asyncio.StreamWriter]]:
    accepted: list[asyncio.StreamWriter] = []

    async def accept(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"127.0.0.1:{port}", accepted


async def test_a_closed_remoting_client_refuses_to_connect() -> None:
    server, addr, accepted = await listener()
    async with server:
        client = RemotingClient()
        await client.close()
        with pytest.raises(RemotingConnectError, match="closed"):
            await client.invoke(addr, RemotingCommand.request(RequestCode.HEART_BEAT), 0.5)
        await asyncio.sleep(0.05)
        assert accepted == [], "no connection was made"


async def test_a_connect_under_way_when_the_client_closes_is_not_kept() -> None:
    server, addr, accepted = await listener()
    async with server:
        client = RemotingClient()
        connecting = asyncio.ensure_future(client.connection(addr))
        await asyncio.sleep(0)
        await client.close()
        with pytest.raises(RemotingConnectError, match="closed"):
            await connecting
        assert client._conns == {}
        for writer in accepted:
            writer.close()


async def test_a_shut_down_instance_answers_with_an_error_not_a_reconnect() -> None:
    server, addr, accepted = await listener()
    async with server:
        instance = ClientInstance(addr, timeout=0.5, client_ip="10.0.0.9", instance_name="unit")
        await instance.start()
        await instance.shutdown()
        with pytest.raises(ConnectFailedError, match="closed") as caught:
            await instance.invoke(addr, RemotingCommand.request(RequestCode.HEART_BEAT))
        assert isinstance(caught.value, MQClientError)
        assert accepted == []


async def test_a_batch_cancelled_before_its_first_step_fails_its_sends() -> None:
    """Shutdown's cancel can reach a batch task in the turn it was launched: its `_run` never ran, and nothing
    resolved its sends' futures (their awaiters hung)."""
    from mqtools.client.batch_accumulator import AutoBatcher, BatchAccumulator
    from mqtools.client.errors import ProducerShutDownError
    from mqtools.common.message import Message

    async def never(msgs: list[Message], budget: float) -> object:
        await asyncio.Event().wait()

    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task] = set()
    batcher = AutoBatcher(BatchAccumulator(10.0, 1 << 20, 1 << 22), never, loop.time, tasks,  # type: ignore[arg-type]
                          lambda: loop)
    future = batcher.submit(Message(topic="T", body=b"x"), 3.0)
    batcher.close()  # launches the batch
    gone = ProducerShutDownError("shut down: nothing was sent")
    batcher.abandon(gone)
    launched = set(tasks)
    for task in launched:
        task.cancel()  # before the task took its first step
    await asyncio.wait(launched)
    await asyncio.sleep(0)  # its done callbacks
    assert future.done() and future.exception() is gone
