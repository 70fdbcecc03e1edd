"""Real `mq namesrv` + `mq broker` processes on loopback: routes for auto-created topics,
permissions, long-polling latency, DELAY level 1, runtime figures, restart, clean shutdown,
malformed frames. Requests go through our RemotingClient, as any RocketMQ client's would."""

from __future__ import annotations

import asyncio
import signal
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.clientsupport import until
from support.mqproc import MqProcess, start_mq, start_namesrv, write_broker_props
from support.ports import free_port

from mqtools.remoting.bodies import ClusterInfo, KVTable, TopicConfigSerializeWrapper, TopicRouteData
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import (
    PullMessageRequestHeader,
    QueryMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

FLAG_SUSPEND, FLAG_SUB = 2, 4


def write_props(path: Path, namesrv: str, store: Path, **extra: str) -> Path:
    """mqproc's test broker.properties, as broker-it of cluster CoreIT unless `extra` says otherwise."""
    return write_broker_props(path, namesrv, store, **{"brokerClusterName": "CoreIT", "brokerName": "broker-it",
                                                        **extra})


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[MqProcess]:
    proc = start_namesrv(tmp_path)
    yield proc
    proc.stop()


@pytest.fixture
def broker(namesrv: MqProcess, tmp_path: Path) -> Iterator[MqProcess]:
    props = write_props(tmp_path / "broker.properties", namesrv.addr, tmp_path / "store")
    proc = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    yield proc
    proc.stop()


async def call(addr: str, cmd: RemotingCommand, timeout: float = 10.0) -> RemotingCommand:
    client = RemotingClient()
    try:
        return await client.invoke(addr, cmd, timeout)
    finally:
        await client.close()


def send_cmd(topic: str, body: bytes, queue_id: int = 0, **props: str) -> RemotingCommand:
    h = SendMessageRequestHeader(
        producer_group="PG", topic=topic, default_topic="TBW102", default_topic_queue_nums=4, queue_id=queue_id,
        sys_flag=0, born_timestamp=int(time.time() * 1000), flag=0,
        properties="".join(f"{k}\x01{v}\x02" for k, v in props.items()))
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h.to_v2(), body)


def pull_cmd(topic: str, queue_id: int, offset: int, suspend_ms: int = 0) -> RemotingCommand:
    h = PullMessageRequestHeader(
        consumer_group="CG_IT", topic=topic, queue_id=queue_id, queue_offset=offset, max_msg_nums=32,
        sys_flag=FLAG_SUB | (FLAG_SUSPEND if suspend_ms else 0), commit_offset=0,
        suspend_timeout_millis=suspend_ms, sub_version=0, subscription="*", expression_type="TAG")
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext())


async def route(namesrv: MqProcess, topic: str) -> TopicRouteData | None:
    resp = await call(namesrv.addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
    return TopicRouteData.from_json(resp.body) if resp.code == ResponseCode.SUCCESS else None


async def test_auto_created_topic_gets_a_route_at_once(namesrv, broker) -> None:
    resp = await call(broker.addr, send_cmd("ItAuto", b"hello"))
    assert resp.code == ResponseCode.SUCCESS, resp.remark

    async def routed():
        r = await route(namesrv, "ItAuto")
        return r if r and r.queue_datas else None

    r = await until(routed, 10, "route of the auto-created topic")  # not the 30 s period
    assert r.queue_datas[0].write_queue_nums == 4 and r.broker_datas[0].broker_addrs[0] == broker.addr
    assert broker.extra["name"] == "broker-it" and broker.extra["id"] == "0" and "ha" in broker.extra


async def test_permissions_and_auto_create_off(namesrv, tmp_path: Path) -> None:
    props = write_props(tmp_path / "ro.properties", namesrv.addr, tmp_path / "ro", brokerName="broker-ro",
                        brokerPermission="4", autoCreateTopicEnable="false")
    proc = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    try:
        resp = await call(proc.addr, send_cmd("Whatever", b"x"))
        assert resp.code == ResponseCode.NO_PERMISSION
        upd = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, {}, b"brokerPermission=6\n")
        assert (await call(proc.addr, upd)).code == ResponseCode.SUCCESS
        resp = await call(proc.addr, send_cmd("Whatever", b"x"))
        assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    finally:
        proc.stop()


async def test_long_polling_latency(broker) -> None:
    assert (await call(broker.addr, send_cmd("ItLP", b"first"))).code == ResponseCode.SUCCESS
    client = RemotingClient()
    try:
        pending = asyncio.ensure_future(client.invoke(broker.addr, pull_cmd("ItLP", 0, 1, suspend_ms=20_000), 30))
        await asyncio.sleep(0.5)  # let the pull park
        assert not pending.done()
        t0 = time.monotonic()
        sent = await client.invoke(broker.addr, send_cmd("ItLP", b"second"), 10)
        assert sent.code == ResponseCode.SUCCESS
        resp = await asyncio.wait_for(pending, 25)
        latency = time.monotonic() - t0
    finally:
        await client.close()
    assert resp.code == ResponseCode.SUCCESS
    print(f"long-poll latency (send start -> pull answer): {latency * 1000:.1f} ms")
    assert latency < 2.0  # woken by the arrival, far from the 20 s suspend timeout


async def test_delay_level_one_delivers_after_about_a_second(broker) -> None:
    t0 = time.monotonic()
    resp = await call(broker.addr, send_cmd("ItDelay", b"later", 0, DELAY="1"))
    assert resp.code == ResponseCode.SUCCESS
    first = await call(broker.addr, pull_cmd("ItDelay", 0, 0))
    assert first.code == ResponseCode.PULL_NOT_FOUND  # not visible yet

    async def delivered():
        r = await call(broker.addr, pull_cmd("ItDelay", 0, 0, suspend_ms=2000))
        return r if r.code == ResponseCode.SUCCESS else None

    got = await until(delivered, 15, "the delayed message")
    elapsed = time.monotonic() - t0
    assert b"later" in bytes(got.body)
    assert 0.8 <= elapsed < 10.0, elapsed


async def test_runtime_info_figures_move(broker) -> None:
    async def info() -> dict[str, str]:
        resp = await call(broker.addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {}))
        return KVTable.from_json(resp.body).table

    before = await info()
    for i in range(5):
        assert (await call(broker.addr, send_cmd("ItRt", f"m{i}".encode()))).code == ResponseCode.SUCCESS
    after = await info()
    assert int(after["msgPutTotalTodayNow"]) - int(before["msgPutTotalTodayNow"]) == 5
    assert int(after["commitLogMaxOffset"]) > int(before["commitLogMaxOffset"])
    assert int(after["bootTimestamp"]) <= int(time.time() * 1000)
    assert after["brokerVersionDesc"]


async def test_restart_keeps_topics_and_messages_and_unregisters(namesrv, tmp_path: Path) -> None:
    props = write_props(tmp_path / "r.properties", namesrv.addr, tmp_path / "rs", brokerName="broker-r")
    proc = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    heads = []
    try:
        create = {"topic": "ItKeep", "defaultTopic": "TBW102", "readQueueNums": "2", "writeQueueNums": "2",
                  "perm": "6", "topicFilterType": "SINGLE_TAG"}
        assert (await call(proc.addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create))).code == 0
        for i in range(3):
            resp = await call(proc.addr, send_cmd("ItKeep", f"k{i}".encode(), 1))
            heads.append(SendMessageResponseHeader.from_ext(resp.ext_fields))
    finally:
        assert proc.stop() == 0
    assert not (tmp_path / "rs" / "abort").exists()

    async def unregistered():
        resp = await call(namesrv.addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, {}))
        return "broker-r" not in ClusterInfo.from_json(resp.body).broker_addr_table

    await until(unregistered, 5, "the broker to leave the name server")
    again = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    try:
        resp = await call(again.addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG, {}))
        table = TopicConfigSerializeWrapper.from_json(resp.body).topic_config_table
        assert table["ItKeep"].read_queue_nums == 2
        resp = await call(again.addr, pull_cmd("ItKeep", 1, 0))
        assert resp.code == ResponseCode.SUCCESS
        body = bytes(resp.body)
        assert all(f"k{i}".encode() in body for i in range(3))
        nxt = await call(again.addr, send_cmd("ItKeep", b"k3", 1))
        assert SendMessageResponseHeader.from_ext(nxt.ext_fields).queue_offset == heads[-1].queue_offset + 1
    finally:
        again.stop()


async def test_malformed_frames_close_only_that_connection(broker) -> None:
    host, port = broker.host, broker.port
    for garbage in (
        struct.pack(">ii", 20, (0 << 24) | 12) + b"{not json!!}" + b"abcd",  # bad JSON header
        struct.pack(">ii", 12, (7 << 24) | 4) + b"abcdabcd",  # unknown serialize type
        struct.pack(">i", 0x7FFFFFFF) + b"x" * 16,  # absurd length
        struct.pack(">ii", 8, (0 << 24) | 400) + b"zzzz",  # header longer than frame
    ):
        with socket.create_connection((host, port), timeout=5) as s:
            s.sendall(garbage)
            s.settimeout(5)
            try:
                data = s.recv(100)
            except (ConnectionResetError, TimeoutError):
                data = b""
            assert data == b""  # closed, no answer
    # a header that parses but lacks required fields gets a code
    resp = await call(broker.addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, {"topic": "x"}))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    resp = await call(broker.addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": "g", "topic": "t", "queueId": "zero", "queueOffset": "0", "maxMsgNums": "1",
        "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0"}))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    resp = await call(broker.addr, RemotingCommand.request(12345, {}))
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    resp = await call(broker.addr, send_cmd("ItAlive", b"still here"))
    assert resp.code == ResponseCode.SUCCESS


def test_sigint_is_a_clean_stop(namesrv, tmp_path: Path) -> None:
    props = write_props(tmp_path / "s.properties", namesrv.addr, tmp_path / "ss", brokerName="broker-s")
    proc = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    proc.signal(signal.SIGINT)
    assert proc.proc.wait(15) == 0
    assert not (tmp_path / "ss" / "abort").exists()


async def test_namesrv_from_env_and_flags(namesrv, tmp_path: Path) -> None:
    proc = start_mq(["broker", "start", "--listen-port", "0", "--store-dir", str(tmp_path / "e"),
                     "--broker-name", "broker-env"], timeout=30, env={"NAMESRV_ADDR": namesrv.addr})
    try:
        resp = await call(namesrv.addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, {}))
        info = ClusterInfo.from_json(resp.body)
        assert info.broker_addr_table["broker-env"].broker_addrs[0] == proc.addr
        assert "broker-env" in info.cluster_addr_table["DefaultCluster"]
    finally:
        proc.stop()


def test_bad_start_options_fail_with_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    def run(*args: str, props: str | None = None) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-m", "mqtools.cli.main", "broker", "start", *args]
        if props is not None:
            f = tmp_path / "bad.properties"
            f.write_text(props)
            argv += ["-c", str(f)]
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)

    slave = run(props=f"brokerRole=SLAVE\nbrokerId=0\nstorePathRootDir={tmp_path}/x\n")
    assert slave.returncode != 0 and "SLAVE" in slave.stderr and len(slave.stderr.strip().splitlines()) == 1
    bad_ns = run("-n", "host-without-port", "--store-dir", str(tmp_path / "y"))
    assert bad_ns.returncode != 0 and "host:port;host:port" in bad_ns.stderr
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        busy = run("--listen-port", str(s.getsockname()[1]), "--store-dir", str(tmp_path / "z"))
    assert busy.returncode != 0 and "cannot listen" in busy.stderr


async def test_a_topic_a_send_auto_created_survives_a_sigkill_right_after_the_answer(namesrv, tmp_path: Path) -> None:
    """RocketMQ writes topics.json before it answers the send that auto-created the topic, and so do we
    (processors/durable.py): before, 10 of 12 brokers killed right after that answer came back without
    the topic. Three kills, so a broker that answers first fails this almost surely."""
    props = write_props(tmp_path / "a.properties", namesrv.addr, tmp_path / "as", brokerName="broker-auto")
    proc = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    try:
        for i in range(3):
            sent = await call(proc.addr, send_cmd(f"ItAutoKill{i}", f"first-{i}".encode(), 1))
            assert sent.code == ResponseCode.SUCCESS
            proc.kill()
            proc = start_mq(["broker", "start", "-c", str(props)], timeout=30)
            for j in range(i + 1):
                resp = await call(proc.addr, pull_cmd(f"ItAutoKill{j}", 1, 0))
                assert resp.code == ResponseCode.SUCCESS, (j, resp.code, resp.remark)
                assert f"first-{j}".encode() in bytes(resp.body)
    finally:
        proc.stop()


async def test_sigkill_restart_recovers_topics_and_messages(namesrv, tmp_path: Path) -> None:
    props = write_props(tmp_path / "k.properties", namesrv.addr, tmp_path / "ks", brokerName="broker-k")
    proc = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    for i in range(5):
        sent = await call(proc.addr, send_cmd("ItKill", f"x{i}".encode(), 2, KEYS=f"kill-key-{i}"))
        assert sent.code == ResponseCode.SUCCESS
    proc.kill()
    assert (tmp_path / "ks" / "abort").exists()  # an unclean stop leaves the marker for recovery
    again = start_mq(["broker", "start", "-c", str(props)], timeout=30)
    try:
        resp = await call(again.addr, pull_cmd("ItKill", 2, 0))
        assert resp.code == ResponseCode.SUCCESS
        assert all(f"x{i}".encode() in bytes(resp.body) for i in range(5))
        # the broker died with these keys still waiting to be indexed: recovery indexes them again
        query = QueryMessageRequestHeader(topic="ItKill", key="kill-key-3", max_num=32, begin_timestamp=0,
                                          end_timestamp=2**62)
        found = await call(again.addr, RemotingCommand.request(RequestCode.QUERY_MESSAGE, query.to_ext()))
        assert found.code == ResponseCode.SUCCESS and b"x3" in bytes(found.body or b"")
        nxt = await call(again.addr, send_cmd("ItKill", b"x5", 2))
        assert SendMessageResponseHeader.from_ext(nxt.ext_fields).queue_offset == 5
    finally:
        again.stop()


async def test_vip_channel_serves_the_same_requests(tmp_path: Path) -> None:
    """listenPort - 2 answers as listenPort does (Apache's slave fetches its master's topic configs there)."""
    namesrv = start_namesrv(tmp_path)
    port = free_port((-2, 0, 1))
    conf = write_props(tmp_path / "b.properties", namesrv.addr, tmp_path / "store", listenPort=str(port))
    broker = start_mq(["broker", "start", "-c", str(conf)], timeout=30)
    try:
        for addr in (broker.addr, f"127.0.0.1:{port - 2}"):
            resp = await call(addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG, {}))
            assert resp.code == ResponseCode.SUCCESS
            assert "TBW102" in TopicConfigSerializeWrapper.from_json(resp.body).topic_config_table
    finally:
        broker.stop()
        namesrv.stop()
