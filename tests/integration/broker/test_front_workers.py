"""A broker with front workers (frontWorkers=2): worker processes accept its clients, parse their plain sends and
relay the rest to the store's process (mqtools/server/broker/front). Clients are served as before, each seen with
its own address, their sends through the parsed path; a worker that dies is started again and its clients
reconnect; a broker that stops or dies takes its workers along."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import psutil
import pytest
from support.clientsupport import until
from support.mqproc import MqProcess, start_broker, start_namesrv

from mqtools.client.admin import MQAdmin
from mqtools.client.producer import Producer
from mqtools.client.pull_consumer import PullConsumer
from mqtools.cluster.certs import make_local_certificates
from mqtools.common.message import Message
from mqtools.common.security import ClientSecurity, TlsClientOptions
from mqtools.remoting.bodies import TopicConfig
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingError
from mqtools.remoting.frame import FrameDecoder
from mqtools.server.broker.front.accept_gate import SLACK
from mqtools.server.broker.front.relay import HUNG_AFTER_S

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC = "FrontTopic"
WORKERS = 2


def workers(broker: MqProcess) -> list[psutil.Process]:
    """The broker's live worker processes (one killed is a zombie until its broker reaps it)."""
    found = []
    for proc in psutil.Process(broker.pid).children():
        with contextlib.suppress(psutil.Error):
            if "front.worker" in " ".join(proc.cmdline()):
                found.append(proc)
    return found


async def _round_trip(namesrv: str, count: int, tag: str) -> list[bytes]:
    """`count` sends, then every message of the topic pulled back from its first offset."""
    async with Producer(f"PG_FRONT_{tag}", namesrv=namesrv) as producer:
        for i in range(count):
            await producer.send(Message(TOPIC, f"{tag}-{i}".encode()))
    got: list[bytes] = []
    async with PullConsumer(f"CG_FRONT_{tag}", namesrv=namesrv) as consumer:
        for mq in await consumer.fetch_queues(TOPIC):
            offset = 0
            while (result := await consumer.pull(mq, "*", offset)).messages:
                got += [m.body for m in result.messages]
                offset = result.next_begin_offset
    return got


async def test_clients_are_served_through_the_workers_and_one_that_dies_comes_back(tmp_path: Path) -> None:
    namesrv = start_namesrv(tmp_path)
    broker = start_broker(tmp_path, namesrv.addr, frontWorkers=str(WORKERS))
    try:
        first = workers(broker)
        assert len(first) == WORKERS
        async with MQAdmin(namesrv.addr) as admin:
            await admin.topics.create_topic(TopicConfig(TOPIC, 4, 4), broker_addr=broker.addr)
            async with Producer("PG_FRONT_SEEN", namesrv=namesrv.addr) as producer:
                await producer.send(Message(TOPIC, b"seen"))
                # the store's process sees the client's own address, not a worker's
                await producer.instance.heartbeat()
                (client,) = (await admin.groups.producer_connections("PG_FRONT_SEEN", TOPIC)).clients
                ours = {f"{c.laddr.ip}:{c.laddr.port}" for c in psutil.Process().net_connections()}
                assert client.client_addr in ours
        bodies = await _round_trip(namesrv.addr, 50, "a")
        assert sorted(bodies) == sorted([b"seen", *(f"a-{i}".encode() for i in range(50))])
        async with MQAdmin(namesrv.addr) as admin:  # the workers parsed the plain sends, the store took them
            raw = (await admin.brokers.broker_runtime_info(broker.addr)).raw
        records, as_frames = int(raw["frontWorkerSendRecords"]), int(raw["frontWorkerSendRecordsAsFrames"])
        assert records >= 51 and as_frames < records / 2

        os.kill(first[0].pid, signal.SIGKILL)
        await until(lambda: len(workers(broker)) == WORKERS and first[0].pid not in [p.pid for p in workers(broker)],
                    30, "the killed worker started again")
        assert any(f"(pid {first[0].pid}) exited with -9" in line for line in broker.lines), broker.output()
        bodies = await _round_trip(namesrv.addr, 50, "b")
        assert len(bodies) == 101
    finally:
        last = workers(broker)
        for worker in last:  # as systemd stops a service: SIGTERM to every process; the broker stops its workers
            os.kill(worker.pid, signal.SIGTERM)
        broker.stop()
        namesrv.stop()
    gone = psutil.wait_procs(last, timeout=10)[1]
    assert gone == [], "a worker outlived its broker's stop"
    assert sum("exited with" in line for line in broker.lines) == 1, broker.output()  # the SIGKILL's only


async def test_a_hung_worker_is_killed_and_started_again(tmp_path: Path) -> None:
    """A worker that answers nothing (stopped here) holds its clients and the connections it would accept: the store
    process kills it once it has been silent for HUNG_AFTER_S, and the new one serves; runtime info counts it."""
    namesrv = start_namesrv(tmp_path)
    broker = start_broker(tmp_path, namesrv.addr, frontWorkers="2")
    try:
        hung, idle = workers(broker)
        os.kill(hung.pid, signal.SIGSTOP)
        await until(lambda: len(workers(broker)) == 2 and hung.pid not in [w.pid for w in workers(broker)],
                    HUNG_AFTER_S + 20, "the hung worker killed and started again")
        await until(lambda: not hung.is_running(), 10, "the killed worker reaped by its broker")  # a zombie first
        assert any(f"(pid {hung.pid}) has not answered for" in line for line in broker.lines), broker.output()
        assert idle.is_running(), "a worker idle as long answers its pings and stays"
        async with MQAdmin(namesrv.addr) as admin:  # the new process serves once it has said HELLO

            async def counted() -> bool:
                raw = (await admin.brokers.broker_runtime_info(broker.addr)).raw
                return (raw["frontWorkers"], raw["frontWorkersServing"], raw["frontWorkerRestarts"]) == ("2", "2", "1")

            await until(counted, 20, "the new worker serving, counted")
    finally:
        broker.stop()
        namesrv.stop()


async def test_a_tls_client_through_a_worker_and_a_broker_killed_takes_its_workers_along(tmp_path: Path) -> None:
    """TLS enforcing: the worker does the handshake (the broker's certificate); a plain client is refused there."""
    certs = make_local_certificates(tmp_path / "tls")
    namesrv = start_namesrv(tmp_path)
    broker = start_broker(tmp_path, namesrv.addr, frontWorkers="1", **{
        "tls.server.mode": "enforcing", "tls.server.certPath": str(certs.cert), "tls.server.keyPath": str(certs.key)})
    try:
        (worker,) = workers(broker)
        runtime = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, None)
        secure = RemotingClient(security=ClientSecurity(tls=TlsClientOptions(str(certs.ca))))
        plain = RemotingClient()
        try:
            assert (await secure.invoke(broker.addr, runtime, 5)).code == ResponseCode.SUCCESS
            with pytest.raises(RemotingError):
                await plain.invoke(broker.addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, None), 5)
        finally:
            await secure.close()
            await plain.close()
        broker.kill()
        assert psutil.wait_procs([worker], timeout=10)[1] == [], "the worker outlived its killed broker"
    finally:
        broker.stop()
        namesrv.stop()


Client = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _connect_and_ask(addr: str) -> Client:
    """A raw client connection that has been answered once: a worker accepted it and relays it."""
    host, port = addr.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    request = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, None)
    writer.write(request.encode())
    frames: list[RemotingCommand] = []
    decoder = FrameDecoder()
    async with asyncio.timeout(60):  # a stopped worker is noticed within seconds; this is generous
        while not frames:
            data = await reader.read(1 << 16)
            assert data, "the broker closed a new client's connection"
            frames += decoder.feed(data)
    assert frames[0].code == ResponseCode.SUCCESS and frames[0].opaque == request.opaque
    return reader, writer


def _held_by(broker: MqProcess, clients: list[Client]) -> dict[int, int]:
    """How many of `clients` each worker process holds (by pid)."""
    ports = {writer.get_extra_info("sockname")[1] for _, writer in clients}
    return {w.pid: sum(1 for c in w.net_connections() if c.raddr and c.raddr.port in ports) for w in workers(broker)}


async def _close(clients: list[Client]) -> None:
    for _, writer in clients:
        writer.close()
    for _, writer in clients:
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def test_clients_opened_one_at_a_time_spread_over_the_workers(tmp_path: Path) -> None:
    """Every worker accepts on the broker's one listening socket and the kernel wakes them in the same order: without
    the store's accept gate one worker took 20 of 24 such clients. With it a worker more than SLACK connections
    above the least-loaded one stops accepting until the others catch up."""
    namesrv = start_namesrv(tmp_path)
    broker = start_broker(tmp_path, namesrv.addr, frontWorkers=str(WORKERS))
    clients: list[Client] = []
    try:
        for _ in range(24):
            clients.append(await _connect_and_ask(broker.addr))
            await asyncio.sleep(0.02)
        held = _held_by(broker, clients)
        assert sum(held.values()) == 24 and len(held) == WORKERS, held
        assert max(held.values()) - min(held.values()) <= SLACK + 1, held
    finally:
        await _close(clients)
        broker.stop()
        namesrv.stop()


async def test_a_stopped_worker_does_not_keep_the_other_from_accepting(tmp_path: Path) -> None:
    """A worker that answers nothing (stopped) is left out of the least-loaded count once it is silent: the other,
    paused because it holds more, accepts and answers every new client, long before the stopped one is taken for
    hung and killed."""
    namesrv = start_namesrv(tmp_path)
    broker = start_broker(tmp_path, namesrv.addr, frontWorkers=str(WORKERS))
    clients: list[Client] = []
    try:
        stopped, alive = workers(broker)
        os.kill(stopped.pid, signal.SIGSTOP)
        try:
            for _ in range(6):
                clients.append(await _connect_and_ask(broker.addr))
                await asyncio.sleep(0.02)
            assert _held_by(broker, clients) == {stopped.pid: 0, alive.pid: 6}
            assert not any("has not answered for" in line for line in broker.lines), broker.output()
        finally:
            with contextlib.suppress(ProcessLookupError):  # killed as hung already: the assertions above say so
                os.kill(stopped.pid, signal.SIGCONT)
        clients.append(await _connect_and_ask(broker.addr))  # it serves again, and is counted again
        assert stopped.pid in [w.pid for w in workers(broker)]
    finally:
        await _close(clients)
        broker.stop()
        namesrv.stop()
