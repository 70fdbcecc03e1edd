"""Helpers for HA tests: real name server + broker processes, raw remoting sends and pulls.

Imported as `integration.ha.hasupport` (tests/ is on sys.path).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from support.mqproc import MqProcess, start_mq

from mqtools.common.codec import decode_stored
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import (
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
)

FILE_SIZE = 256 * 1024
FLAG_SUB = 4
HA_FAST = {
    "haSendHeartbeatInterval": "500", "haHousekeepingInterval": "3000", "haTransferBatchSize": "16384",
    "mappedFileSizeCommitLog": str(FILE_SIZE), "syncFlushTimeout": "2000", "slaveTimeout": "2000",
    "brokerIP1": "127.0.0.1", "listenPort": "0",
}


@dataclass
class Node:
    name: str
    props_path: Path
    store: Path
    proc: MqProcess | None = None

    @property
    def addr(self) -> str:
        assert self.proc is not None
        return self.proc.addr

    def start(self, timeout: float = 40.0) -> MqProcess:
        self.proc = start_mq(["broker", "start", "-c", str(self.props_path)], timeout=timeout)
        return self.proc

    def commitlog_files(self) -> list[Path]:
        return sorted((self.store / "commitlog").iterdir())


@dataclass
class Group:
    """One name server, one master, optionally one slave, all on ephemeral ports."""

    root: Path
    namesrv: MqProcess
    master: Node
    slave: Node | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def stop(self) -> None:
        for node in (self.slave, self.master):
            if node is not None and node.proc is not None:
                node.proc.signal(18)  # SIGCONT, in case a test left it stopped
                node.proc.stop()
        self.namesrv.stop()


def write_props(path: Path, props: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def make_node(root: Path, namesrv: str, name: str, role: str, broker_id: int, **extra: str) -> Node:
    store = root / name / "store"
    props = {**HA_FAST, "brokerClusterName": "HaCluster", "brokerName": "broker-ha", "brokerId": str(broker_id),
             "brokerRole": role, "namesrvAddr": namesrv, "storePathRootDir": str(store), **extra}
    return Node(name, write_props(root / name / "broker.properties", props), store)


def start_group(root: Path, role: str = "SYNC_MASTER", with_slave: bool = True, **extra: str) -> Group:
    namesrv = start_mq(["namesrv", "start", "--listen-port", "0", "--store-dir", str(root / "ns")])
    master = make_node(root, namesrv.addr, "master", role, 0, **extra)
    group = Group(root, namesrv, master, extra=dict(extra))
    try:
        master.start()
        if with_slave:
            group.slave = add_slave(group)
    except BaseException:
        group.stop()
        raise
    return group


@contextlib.asynccontextmanager
async def running_group(root: Path, role: str = "SYNC_MASTER", with_slave: bool = True,
                        **extra: str) -> AsyncIterator[tuple[Group, RemotingClient]]:
    """A started group (start_group) and a remoting client, both stopped when the test leaves, however."""
    group = start_group(root, role, with_slave, **extra)
    client = RemotingClient()
    try:
        yield group, client
    finally:
        await client.close()
        group.stop()


def add_slave(group: Group, name: str = "slave") -> Node:
    slave = make_node(group.root, group.namesrv.addr, name, "SLAVE", 1, **group.extra)
    slave.start()
    return slave


# ------------------------------------------------------------------------------ remoting


async def call(client: RemotingClient, addr: str, cmd: RemotingCommand, timeout: float = 10.0) -> RemotingCommand:
    return await client.invoke(addr, cmd, timeout)


def send_cmd(topic: str, body: bytes, queue_id: int = 0, **props: str) -> RemotingCommand:
    h = SendMessageRequestHeader(
        producer_group="PG_HA", topic=topic, default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=queue_id, sys_flag=0, born_timestamp=int(time.time() * 1000), flag=0,
        properties="".join(f"{k}\x01{v}\x02" for k, v in props.items()))
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h.to_v2(), body)


@dataclass
class Sent:
    code: int
    queue_id: int
    queue_offset: int
    phy_offset: int
    body: bytes


async def send(client: RemotingClient, addr: str, topic: str, body: bytes, queue_id: int = 0,
               timeout: float = 15.0) -> Sent:
    resp = await call(client, addr, send_cmd(topic, body, queue_id), timeout)
    if resp.code in (ResponseCode.SUCCESS, ResponseCode.FLUSH_SLAVE_TIMEOUT, ResponseCode.SLAVE_NOT_AVAILABLE,
                     ResponseCode.FLUSH_DISK_TIMEOUT):
        h = SendMessageResponseHeader.from_ext(resp.ext_fields)
        return Sent(resp.code, h.queue_id, h.queue_offset, int(h.msg_id[-16:], 16), body)
    return Sent(resp.code, queue_id, -1, -1, body)


async def pull(client: RemotingClient, addr: str, topic: str, queue_id: int, offset: int,
               max_nums: int = 32) -> tuple[int, list[bytes], int]:
    """(response code, message bodies, next offset)."""
    h = PullMessageRequestHeader(
        consumer_group="CG_HA", topic=topic, queue_id=queue_id, queue_offset=offset, max_msg_nums=max_nums,
        sys_flag=FLAG_SUB, commit_offset=0, suspend_timeout_millis=0, sub_version=0, subscription="*",
        expression_type="TAG")
    resp = await call(client, addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext()))
    rh = PullMessageResponseHeader.from_ext(resp.ext_fields) if resp.ext_fields else None
    bodies: list[bytes] = []
    if resp.code == ResponseCode.SUCCESS and resp.body:
        buf = memoryview(bytes(resp.body))
        pos = 0
        while pos < len(buf):
            msg = decode_stored(buf, pos)
            bodies.append(bytes(msg.body))
            pos += int.from_bytes(buf[pos:pos + 4], "big")
    return resp.code, bodies, rh.next_begin_offset if rh else offset


async def pull_all(client: RemotingClient, addr: str, topic: str, queue_id: int, start: int = 0) -> list[bytes]:
    out: list[bytes] = []
    offset = start
    while True:
        code, bodies, nxt = await pull(client, addr, topic, queue_id, offset)
        if code != ResponseCode.SUCCESS or not bodies:
            return out
        out += bodies
        offset = nxt


async def slave_knows_topic(client: RemotingClient, addr: str, topic: str) -> bool:
    """The slave learns topics from its master by metadata sync (first round 3 s after start)."""
    code, _, _ = await pull(client, addr, topic, 0, 0, 1)
    return code != ResponseCode.TOPIC_NOT_EXIST


async def ha_status(client: RemotingClient, addr: str) -> dict:
    resp = await call(client, addr, RemotingCommand.request(RequestCode.GET_BROKER_HA_STATUS), 5.0)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return json.loads(resp.body)


async def max_offset(client: RemotingClient, addr: str, topic: str, queue_id: int) -> int:
    resp = await call(client, addr, RemotingCommand.request(
        RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue_id)}))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return int(resp.ext_fields["offset"])


async def ready_for_drill(client: RemotingClient, group: Group, topic: str) -> None:
    """The slave is connected and acking, and knows `topic` (so what it replicates is consumable)."""
    assert group.slave is not None

    async def acked() -> bool:
        conns = (await ha_status(client, group.master.addr))["haConnectionInfo"]
        return bool(conns) and conns[0]["slaveAckOffset"] >= 0

    await until(acked, 20, "slave connected and acking")
    await send(client, group.master.addr, topic, b"warm-up")
    await until(lambda: slave_knows_topic(client, group.slave.addr, topic), 20, "topic sync to the slave")


async def commitlog_max(client: RemotingClient, addr: str) -> int:
    status = await ha_status(client, addr)
    return int(status["masterCommitLogMaxOffset"])


async def until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


def read_range(files: list[Path], start: int, end: int) -> bytes:
    """Bytes [start, end) of a commitlog made of files named by their start offset."""
    out = bytearray()
    for path in files:
        base = int(path.name)
        data_end = base + path.stat().st_size
        lo, hi = max(start, base), min(end, data_end)
        if lo < hi:
            with open(path, "rb") as fh:
                fh.seek(lo - base)
                out += fh.read(hi - lo)
    return bytes(out)
