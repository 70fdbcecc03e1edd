"""A real `mq namesrv start` process on an ephemeral port, driven through our remoting client."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from support.mqproc import MqProcess, mq_command, start_mq

from mqtools.remoting.bodies import (
    BrokerLiveTable,
    ClusterInfo,
    DataVersion,
    KVTable,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicRouteData,
)
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingConnectionClosed
from mqtools.remoting.headers import RegisterBrokerRequestHeader, UnRegisterBrokerRequestHeader

pytestmark = pytest.mark.integration


def start_namesrv(store: Path, *extra: str) -> MqProcess:
    return start_mq(["namesrv", "start", "--listen-port", "0", "--host", "127.0.0.1",
                     "--store-dir", str(store), *extra])


@pytest.fixture(scope="module")
def namesrv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MqProcess]:
    proc = start_namesrv(tmp_path_factory.mktemp("ns"))
    yield proc
    proc.stop()


def register_cmd(name: str, bid: int, addr: str, *topics: str, cluster: str = "C",
                 timeout_ms: int | None = None) -> RemotingCommand:
    header = RegisterBrokerRequestHeader(broker_name=name, broker_addr=addr, cluster_name=cluster,
                                         ha_server_addr=addr + "-ha", broker_id=bid,
                                         heartbeat_timeout_millis=timeout_ms)
    wrapper = TopicConfigSerializeWrapper({t: TopicConfig(t, 4, 4) for t in topics}, DataVersion(1, 1))
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext(), RegisterBrokerBody(wrapper).to_json())


def route_cmd(topic: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})


async def wait_for(predicate, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not await predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


async def test_register_query_and_unregister(namesrv: MqProcess) -> None:
    client = RemotingClient([namesrv.addr])
    assert (await client.invoke_namesrv(route_cmd("IT_T1"), 5)).code == ResponseCode.TOPIC_NOT_EXIST
    resp = await client.invoke_namesrv(register_cmd("it-b1", 0, "127.0.0.1:1", "IT_T1", "IT_T2"), 5)
    assert resp.code == ResponseCode.SUCCESS
    slave = await client.invoke_namesrv(register_cmd("it-b1", 1, "127.0.0.1:2", "IT_T1"), 5)
    assert slave.ext_fields == {"masterAddr": "127.0.0.1:1", "haServerAddr": "127.0.0.1:1-ha"}
    route = TopicRouteData.from_json((await client.invoke_namesrv(route_cmd("IT_T1"), 5)).body)  # type: ignore[arg-type]
    assert route.broker_datas[0].broker_addrs == {0: "127.0.0.1:1", 1: "127.0.0.1:2"}
    assert route.queue_datas[0].write_queue_nums == 4
    info = ClusterInfo.from_json((await client.invoke_namesrv(
        RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 5)).body)  # type: ignore[arg-type]
    assert "it-b1" in info.cluster_addr_table["C"]
    topics = await client.invoke_namesrv(RemotingCommand.request(RequestCode.GET_TOPICS_BY_CLUSTER,
                                                                 {"cluster": "C"}), 5)
    assert {"IT_T1", "IT_T2"} <= set(orjson.loads(topics.body)["topicList"])  # type: ignore[arg-type]
    live = BrokerLiveTable.from_json((await client.invoke_namesrv(
        RemotingCommand.request(RequestCode.GET_BROKER_LIVE_TABLE), 5)).body)  # type: ignore[arg-type]
    assert {(b.broker_addr, b.broker_id) for b in live.brokers} >= {("127.0.0.1:1", 0), ("127.0.0.1:2", 1)}
    for bid, addr in ((1, "127.0.0.1:2"), (0, "127.0.0.1:1")):
        unreg = UnRegisterBrokerRequestHeader(broker_name="it-b1", broker_addr=addr, cluster_name="C", broker_id=bid)
        await client.invoke_namesrv(RemotingCommand.request(RequestCode.UNREGISTER_BROKER, unreg.to_ext()), 5)
    assert (await client.invoke_namesrv(route_cmd("IT_T1"), 5)).code == ResponseCode.TOPIC_NOT_EXIST
    await client.close()


async def test_broker_connection_close_unregisters_at_once(namesrv: MqProcess) -> None:
    broker, observer = RemotingClient(), RemotingClient()
    await broker.invoke(namesrv.addr, register_cmd("it-close", 0, "127.0.0.1:3", "IT_CLOSE"), 5)
    assert (await observer.invoke(namesrv.addr, route_cmd("IT_CLOSE"), 5)).code == ResponseCode.SUCCESS
    await broker.close()

    async def gone() -> bool:
        return (await observer.invoke(namesrv.addr, route_cmd("IT_CLOSE"), 5)).code == ResponseCode.TOPIC_NOT_EXIST

    await wait_for(gone)
    await observer.close()


async def test_connection_closed_mid_frame_does_not_disturb_others(namesrv: MqProcess) -> None:
    client = RemotingClient()
    await client.invoke(namesrv.addr, register_cmd("it-mid", 0, "127.0.0.1:4", "IT_MID"), 5)
    frame = route_cmd("IT_MID").encode()
    for cut in (2, 6, len(frame) // 2, len(frame) - 1):
        reader, writer = await asyncio.open_connection(namesrv.host, namesrv.port)
        writer.write(frame[:cut])
        await writer.drain()
        resp = await client.invoke(namesrv.addr, route_cmd("IT_MID"), 5)
        assert resp.code == ResponseCode.SUCCESS
        writer.close()
    # Garbage on another connection closes only that connection.
    reader, writer = await asyncio.open_connection(namesrv.host, namesrv.port)
    writer.write(b"\x7f\xff\xff\xff garbage")
    await writer.drain()
    assert await asyncio.wait_for(reader.read(), 10) == b""
    resp = await client.invoke(namesrv.addr, route_cmd("IT_MID"), 5)
    assert resp.code == ResponseCode.SUCCESS  # and the broker registered on `client` is still there
    unknown = await client.invoke(namesrv.addr, RemotingCommand.request(RequestCode.SEND_MESSAGE), 5)
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    await client.close()


async def test_expiry_and_kv_persistence_across_restart(tmp_path: Path) -> None:
    props = tmp_path / "namesrv.properties"
    props.write_text("scanNotActiveBrokerInterval=100\nlistenPort=1\n")
    proc = start_namesrv(tmp_path, "-c", str(props))
    client = RemotingClient()
    try:
        conf = await client.invoke(proc.addr, RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG), 5)
        lines = bytes(conf.body).decode().splitlines()  # type: ignore[arg-type]
        # The file's scan interval applies; --listen-port overrides the file's listenPort.
        assert "scanNotActiveBrokerInterval=100" in lines and "listenPort=0" in lines
        assert f"kvConfigPath={tmp_path / 'kvConfig.json'}" in lines
        await client.invoke(proc.addr, register_cmd("it-exp", 0, "127.0.0.1:5", "IT_EXP", timeout_ms=300), 5)
        assert (await client.invoke(proc.addr, route_cmd("IT_EXP"), 5)).code == ResponseCode.SUCCESS

        async def expired() -> bool:
            try:
                return (await client.invoke(proc.addr, route_cmd("IT_EXP"), 5)).code == ResponseCode.TOPIC_NOT_EXIST
            except RemotingConnectionClosed:  # the expiry closes the connection the broker registered over: this one
                return False  # (the query was in flight on it); the next one connects again

        await wait_for(expired)  # no heartbeat: dropped by the scan, connection closed by the server
        ext = {"namespace": "NS", "key": "k", "value": "v1"}
        put = await client.invoke(proc.addr, RemotingCommand.request(RequestCode.PUT_KV_CONFIG, ext), 5)
        assert put.code == ResponseCode.SUCCESS
    finally:
        await client.close()
        assert proc.stop() == 0
    assert orjson.loads((tmp_path / "kvConfig.json").read_bytes()) == {"configTable": {"NS": {"k": "v1"}}}
    again = start_namesrv(tmp_path)
    client = RemotingClient()
    try:
        kv = await client.invoke(again.addr, RemotingCommand.request(RequestCode.GET_KVLIST_BY_NAMESPACE,
                                                                     {"namespace": "NS"}), 5)
        assert KVTable.from_json(kv.body).table == {"k": "v1"}  # type: ignore[arg-type]
    finally:
        await client.close()
        again.stop()


async def test_two_name_servers_are_independent(namesrv: MqProcess, tmp_path: Path) -> None:
    other = start_namesrv(tmp_path)
    client = RemotingClient()
    try:
        await client.invoke(namesrv.addr, register_cmd("it-ind", 0, "127.0.0.1:6", "IT_IND"), 5)
        assert (await client.invoke(namesrv.addr, route_cmd("IT_IND"), 5)).code == ResponseCode.SUCCESS
        assert (await client.invoke(other.addr, route_cmd("IT_IND"), 5)).code == ResponseCode.TOPIC_NOT_EXIST
    finally:
        await client.close()
        other.stop()


def test_sigint_stops_cleanly(tmp_path: Path) -> None:
    proc = start_namesrv(tmp_path)
    proc.signal(signal.SIGINT)
    assert proc.proc.wait(15) == 0


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*mq_command(), "namesrv", "start", *args], capture_output=True, text=True,
                          timeout=30, check=False)


def test_port_taken_and_bad_config_fail_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = _run_cli("--listen-port", str(port), "--host", "127.0.0.1", "--store-dir", str(tmp_path))
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [f"mq: error: cannot listen on 127.0.0.1:{port}: address already in use"]
    bad = tmp_path / "bad.properties"
    bad.write_text("listenPort=not-a-port\n")
    result = _run_cli("-c", str(bad), "--store-dir", str(tmp_path))
    assert result.returncode != 0 and len(result.stderr.strip().splitlines()) == 1
    assert "listenPort" in result.stderr and "READY" not in result.stdout
