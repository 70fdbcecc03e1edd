"""`mq top` when the cluster is not all there: a name server down at start, no broker at all, a broker
that answers garbage. The app starts, says so in the view, and keeps refreshing the rest."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.clientsupport import until
from support.mqproc import MqProcess, start_mq, start_namesrv
from support.ports import free_port
from support.tuisupport import notes_of, prompt, status_of

from mqtools.live.tables import CRIT
from mqtools.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import RegisterBrokerRequestHeader
from mqtools.tui.app import TopApp
from mqtools.tui.poller import Poller

pytestmark = pytest.mark.integration

REFRESH = 0.3


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[MqProcess]:
    proc = start_namesrv(tmp_path)
    yield proc
    proc.stop()


def make_app(namesrv: str, tmp_path: Path) -> TopApp:
    poller = Poller(namesrv, timeout=1.0)
    return TopApp(poller=poller, namesrv=poller.namesrv_addrs, refresh=REFRESH, snapshot_dir=tmp_path)


async def garbage_server() -> tuple[asyncio.AbstractServer, str]:
    """Accepts, and answers anything with bytes that are no RocketMQ frame."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(4096):
            writer.write(b"\x00\x00\x00\x0cNOT A FRAME!")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    return server, f"127.0.0.1:{server.sockets[0].getsockname()[1]}"


def register(addr: str) -> RemotingCommand:
    header = RegisterBrokerRequestHeader(broker_name="broker-junk", broker_addr=addr, cluster_name="JunkCluster",
                                         ha_server_addr=addr, broker_id=0)
    wrapper = TopicConfigSerializeWrapper({"JunkTopic": TopicConfig("JunkTopic", 4, 4)}, DataVersion(1, 1))
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext(), RegisterBrokerBody(wrapper).to_json())


async def test_dead_name_server_no_broker_then_a_broker_answering_garbage(namesrv: MqProcess, tmp_path: Path) -> None:
    dead = f"127.0.0.1:{free_port()}"
    app = make_app(f"{dead};{namesrv.addr}", tmp_path)
    async with app.run_test(size=(170, 30)) as pilot:
        await until(lambda: "no broker is registered with the name servers" in notes_of(app),
                    15, "the empty cluster said")
        assert app.current_rows == []
        await prompt(app, pilot, "colon", "namesrv")
        await until(lambda: len(app.current_rows) == 2, 10, "both name servers")
        rows = {r.key: r for r in app.current_rows}
        assert rows[dead].cells[1].value is False and rows[dead].level == CRIT and rows[dead].cells[-1].value
        assert rows[namesrv.addr].cells[1].value is True and rows[namesrv.addr].cells[3].value == 0

        server, junk = await garbage_server()
        client = RemotingClient([namesrv.addr])
        try:
            assert (await client.invoke_namesrv(register(junk), 5)).code == ResponseCode.SUCCESS
            await prompt(app, pilot, "colon", "brokers")
            await until(lambda: any(r.key == junk and status_of(r).value not in (None, "ok")
                                           for r in app.current_rows), 15, "the garbage broker's error")
            row = next(r for r in app.current_rows if r.key == junk)
            assert row.level == CRIT and status_of(row).text == "unreachable"
            assert any(junk in note for note in notes_of(app))
            rounds = app.state.rounds
            await until(lambda: app.state.rounds >= rounds + 3, 10, "refreshing on")
            await prompt(app, pilot, "colon", "namesrv")
            await until(lambda: any(r.key == namesrv.addr and r.cells[3].value == 1 for r in app.current_rows),
                        10, "the live name server knowing the broker")
        finally:
            await client.close()
            server.close()


async def test_every_name_server_down_at_start_then_one_comes_up(tmp_path: Path) -> None:
    port = free_port()
    app = make_app(f"127.0.0.1:{port}", tmp_path)
    async with app.run_test(size=(170, 30)):
        await until(lambda: any(n.startswith("name servers: ") for n in notes_of(app)),
                    15, "the name servers said unreachable")
        assert "snapshot" in app.state.stale_keys()
        rounds = app.state.rounds
        await until(lambda: app.state.rounds >= rounds + 2, 10, "refreshing on")
        proc = start_mq(["namesrv", "start", "--listen-port", str(port), "--store-dir", str(tmp_path / "ns")])
        try:
            await until(lambda: "no broker is registered with the name servers" in notes_of(app),
                        20, "the name server answering")
            assert "snapshot" not in app.state.stale_keys()
        finally:
            proc.stop()
