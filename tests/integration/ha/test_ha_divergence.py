"""A classic slave ahead of its master (the master lost its commitlog's tail in a crash), with two real stores and
HA services in one process: the master refuses the slave for good, even once its new writes carry it past the
slave's offset; and when a later master restart lets the slave in anyway, the slave's own dispatch finds that its
log does not line up and the slave stops acknowledging, so SYNC puts are SLAVE_NOT_AVAILABLE, never PUT_OK for
messages the slave cannot serve."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from unit.store.store_helpers import inner, tiny_config

from mqtools.server.ha.service import HAConfig, HAService
from mqtools.server.store.message_store import MessageStore
from mqtools.server.store.results import PutMessageStatus

pytestmark = pytest.mark.timeout(60)

FILE = 64 * 1024
OK, NO_SLAVE = PutMessageStatus.PUT_OK, PutMessageStatus.SLAVE_NOT_AVAILABLE


class Node:
    """A store and its classic HA service, restartable (a new service each start, as a new process has)."""

    def __init__(self, root: Path, role: str) -> None:
        self.root, self.role = root, role
        self.store: MessageStore
        self.ha: HAService

    async def start(self) -> None:
        self.store = MessageStore(tiny_config(self.root, broker_role=self.role, mapped_file_size_commit_log=FILE,
                                              slave_timeout=3000))
        await self.store.start()
        self.ha = HAService(self.store, HAConfig(
            broker_role=self.role, ha_listen_port=0, bind_address="127.0.0.1", ha_send_heartbeat_interval=200,
            ha_housekeeping_interval=3000, mapped_file_size_commit_log=FILE))
        await self.ha.start("127.0.0.1")
        self.store.ha_hook = self.ha

    async def stop(self) -> None:
        await self.ha.shutdown()
        await self.store.shutdown()

    def follow(self, master: Node) -> None:
        self.ha.update_master_address(f"127.0.0.1:{master.ha.port}")

    @property
    def client_info(self) -> dict:
        return self.ha.ha_runtime_info()["haClientRuntimeInfo"]


@contextlib.asynccontextmanager
async def group(root: Path) -> AsyncIterator[tuple[Node, Node]]:
    master, slave = Node(root / "m", "SYNC_MASTER"), Node(root / "s", "SLAVE")
    await master.start()
    await slave.start()
    slave.follow(master)
    try:
        await until(lambda: any(c.slave_ack_offset >= 0 for c in master.ha.connections), "the slave to report")
        yield master, slave
    finally:
        await slave.stop()
        await master.stop()


async def until(check: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def put(node: Node, body: bytes) -> PutMessageStatus:
    return (await node.store.put_message(inner(body=body))).status


def zero(path: Path, start: int, end: int) -> None:
    """Zero bytes [start, end) of the commitlog file at `path` (named by its start offset)."""
    with open(path, "r+b") as fh:
        fh.seek(start - int(path.name))
        fh.write(b"\0" * (end - start))


async def lose_the_tail(master: Node, slave: Node) -> int:
    """Ten acknowledged puts, then the master's last four are lost (zeroed, as an OS crash leaves a file) and it
    restarts: the slave is ahead. The slave's offset."""
    results = [await master.store.put_message(inner(body=b"old%03d" % i + b"o" * 200)) for i in range(10)]
    assert [r.status for r in results] == [OK] * 10
    ahead = master.store.max_phy_offset
    await until(lambda: slave.store.max_phy_offset == ahead, "the slave to have everything")
    cut = results[6].append.wrote_offset
    await master.stop()
    zero(min((master.root / "commitlog").iterdir()), cut, ahead)
    await master.start()
    slave.follow(master)
    assert master.store.max_phy_offset == cut
    return ahead


async def test_a_slave_ahead_of_its_restarted_master_stays_refused_past_the_masters_new_writes(tmp_path) -> None:
    """It was refused only while the master's max was below its offset: then streamed from a mid-message offset,
    acknowledging SYNC puts of messages it can never serve."""
    async with group(tmp_path) as (master, slave):
        ahead = await lose_the_tail(master, slave)
        assert slave.ha.client is not None
        statuses = []
        while master.store.max_phy_offset <= ahead + 1000:  # 345-byte bodies: boundaries unlike the slave's
            statuses.append(await put(master, b"new" + b"n" * 342))
        seen = slave.ha.client.sessions
        await until(lambda: slave.ha.client.sessions >= seen + 2 or slave.store.max_phy_offset > ahead,
                    "the slave to come back twice past its offset")
        assert slave.store.max_phy_offset == ahead  # nothing streamed to it
        statuses.append(await put(master, b"after"))
        assert set(statuses) == {NO_SLAVE}
        assert master.ha.progress.push2slave_max_offset == 0  # its reports never counted
        info = slave.client_info
        assert not info["activated"]
        assert "wipe this slave's store" in info["lastCloseReason"] and str(ahead) in info["lastCloseReason"]


async def test_a_slave_let_in_past_a_lost_tail_stops_acknowledging(tmp_path, caplog) -> None:
    """The master restarted once more (cleanly): it no longer knows it lost a tail and streams to the slave from
    the slave's offset, the middle of one of its messages. The slave's dispatch stops on bytes that are not a torn
    tail: it closes its connection before acknowledging them and does not come back."""
    caplog.set_level(logging.ERROR, logger="mq.ha")
    async with group(tmp_path) as (master, slave):
        ahead = await lose_the_tail(master, slave)
        while master.store.max_phy_offset <= ahead + 1000:
            assert await put(master, b"new" + b"n" * 342) is NO_SLAVE
        await master.stop()
        await master.start()
        slave.follow(master)
        client = slave.ha.client
        assert client is not None
        await until(lambda: getattr(client, "halted", None) is not None
                    or master.ha.progress.push2slave_max_offset > ahead, "the slave to stop replicating")
        assert master.ha.progress.push2slave_max_offset <= ahead  # its first report at most: no byte acknowledged
        await until(lambda: not master.ha.connections, "the master to see the slave go")
        assert await put(master, b"after") is NO_SLAVE
        await until(lambda: client._task is not None and client._task.done(), "the client to stop")  # no reconnect
        info = slave.client_info
        assert not info["activated"] and str(ahead) in info["lastCloseReason"]
        assert any(str(ahead) in r.getMessage() and r.levelno == logging.ERROR for r in caplog.records)
