"""SYNC_MASTER / ASYNC_MASTER guarantees and timeouts with real processes and real signals."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest
from integration.ha.hasupport import (
    commitlog_max,
    ha_status,
    pull_all,
    ready_for_drill,
    running_group,
    send,
    slave_knows_topic,
    until,
)

from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import ResponseCode

pytestmark = pytest.mark.integration
TOPIC = "HaSync"


async def burst(client: RemotingClient, addr: str, count: int, inflight: int = 64, tag: str = "m",
                done: list[int] | None = None):
    sem = asyncio.Semaphore(inflight)

    async def one(i: int):
        async with sem:
            try:
                return await send(client, addr, TOPIC, f"{tag}-{i:06d}".encode() + os.urandom(200), queue_id=i % 2)
            except Exception:  # noqa: BLE001 - the master is being killed under us
                return None
            finally:
                if done is not None:
                    done.append(i)

    return await asyncio.gather(*(one(i) for i in range(count)))


async def slave_bodies(client: RemotingClient, addr: str) -> set[bytes]:
    await until(lambda: slave_knows_topic(client, addr, TOPIC), 20, "topic sync")
    out: set[bytes] = set()
    for qid in range(2):
        out.update(await pull_all(client, addr, TOPIC, qid))
    return out


async def test_sync_master_acked_messages_survive_sigkill(tmp_path: Path) -> None:
    async with running_group(tmp_path, role="SYNC_MASTER") as (group, client):
        assert group.slave is not None and group.master.proc is not None
        await ready_for_drill(client, group, TOPIC)
        first = await burst(client, group.master.addr, 300)
        acked = [s for s in first if s is not None and s.code == ResponseCode.SUCCESS]
        assert len(acked) == 300
        done: list[int] = []
        racing = asyncio.ensure_future(burst(client, group.master.addr, 20000, tag="r", done=done))
        while len(done) < 1000:  # kill while SEND_OK replies keep coming
            await asyncio.sleep(0.005)
        group.master.proc.kill()  # SIGKILL right after a batch of SEND_OK replies, with sends in flight
        acked += [s for s in await racing if s is not None and s.code == ResponseCode.SUCCESS]
        on_slave = await slave_bodies(client, group.slave.addr)
        missing = [s for s in acked if s.body not in on_slave]
        assert not missing, f"{len(missing)} SEND_OK messages are not on the slave"


async def test_async_master_loss_is_explained_by_the_slave_offset(tmp_path: Path) -> None:
    async with running_group(tmp_path, role="ASYNC_MASTER") as (group, client):
        assert group.slave is not None and group.master.proc is not None
        await ready_for_drill(client, group, TOPIC)
        done: list[int] = []
        racing = asyncio.ensure_future(burst(client, group.master.addr, 20000, done=done))
        while len(done) < 3000:  # kill while sends stream at full speed
            await asyncio.sleep(0.005)
        group.master.proc.kill()
        acked = [s for s in await racing if s is not None and s.code == ResponseCode.SUCCESS]
        await asyncio.sleep(0.5)
        slave_end = await commitlog_max(client, group.slave.addr)
        on_slave = await slave_bodies(client, group.slave.addr)
        lost = [s for s in acked if s.body not in on_slave]
        print(f"ASYNC_MASTER drill: {len(acked)} acked, {len(lost)} lost, slave offset {slave_end}")
        found = [s for s in acked if s.body in on_slave]
        # The slave holds a prefix of the master's commitlog: every acked message it lacks lies
        # after every acked message it has, and starts no more than one message before its end.
        assert found and all(s.phy_offset < slave_end for s in found)
        if lost:
            assert min(s.phy_offset for s in lost) > max(s.phy_offset for s in found)
            assert all(s.phy_offset > slave_end - 1024 for s in lost)


async def test_frozen_slave_gives_flush_slave_timeout_then_recovers(tmp_path: Path) -> None:
    async with running_group(tmp_path, role="SYNC_MASTER") as (group, client):
        assert group.slave is not None and group.slave.proc is not None
        await ready_for_drill(client, group, TOPIC)
        ok = await send(client, group.master.addr, TOPIC, b"before")
        assert ok.code == ResponseCode.SUCCESS
        group.slave.proc.signal(signal.SIGSTOP)
        t0 = time.monotonic()
        frozen = await send(client, group.master.addr, TOPIC, b"while-frozen")
        elapsed = time.monotonic() - t0
        assert frozen.code == ResponseCode.FLUSH_SLAVE_TIMEOUT
        assert elapsed < 2.0 + 5.0  # the configured timeout (2 s) plus scheduling slack
        group.slave.proc.signal(signal.SIGCONT)
        await until(lambda: _send_ok(client, group.master.addr), 20, "SEND_OK after SIGCONT")


async def test_a_send_waiting_for_a_slave_that_dies_is_answered_at_once(tmp_path: Path) -> None:
    """The slave is frozen while a SYNC send waits for it, then SIGKILLed: its HA connection closes and the
    send is answered SLAVE_NOT_AVAILABLE (stored on the master) at once, not FLUSH_SLAVE_TIMEOUT when
    syncFlushTimeout (10 s here) runs out; a client's 3 s timeout would otherwise leave the outcome unknown."""
    async with running_group(tmp_path, role="SYNC_MASTER", syncFlushTimeout="10000") as (group, client):
        assert group.slave is not None and group.slave.proc is not None
        await ready_for_drill(client, group, TOPIC)
        group.slave.proc.signal(signal.SIGSTOP)
        t0 = time.monotonic()
        waiting = asyncio.create_task(send(client, group.master.addr, TOPIC, b"waits-for-the-slave"))
        await asyncio.sleep(0.5)  # the send reaches the master and waits: nothing outside shows that moment
        assert not waiting.done()
        group.slave.proc.signal(signal.SIGKILL)
        answered = await waiting
        elapsed = time.monotonic() - t0
        assert answered.code == ResponseCode.SLAVE_NOT_AVAILABLE
        assert answered.queue_offset >= 0
        assert elapsed < 5.0, elapsed  # well before the 10 s syncFlushTimeout


async def _send_ok(client: RemotingClient, addr: str) -> bool:
    return (await send(client, addr, TOPIC, b"after")).code == ResponseCode.SUCCESS


async def test_no_slave_means_slave_not_available(tmp_path: Path) -> None:
    async with running_group(tmp_path, role="SYNC_MASTER", with_slave=False) as (group, client):
        sent = await send(client, group.master.addr, TOPIC, b"lonely")
        assert sent.code == ResponseCode.SLAVE_NOT_AVAILABLE
        assert sent.queue_offset >= 0  # stored on the master all the same


async def test_master_drops_a_silent_slave_after_housekeeping(tmp_path: Path) -> None:
    async with running_group(tmp_path, role="ASYNC_MASTER") as (group, client):
        assert group.slave is not None and group.slave.proc is not None
        await until(lambda: _connections(client, group.master.addr, 1), 20, "slave connected")
        group.slave.proc.signal(signal.SIGSTOP)
        t0 = time.monotonic()
        await until(lambda: _connections(client, group.master.addr, 0), 20, "silent slave dropped")
        assert time.monotonic() - t0 >= 2.0  # not before the 3 s housekeeping interval (minus poll slack)
        group.slave.proc.signal(signal.SIGCONT)
        await until(lambda: _connections(client, group.master.addr, 1), 20, "slave back")


async def _connections(client: RemotingClient, addr: str, n: int) -> bool:
    return len((await ha_status(client, addr))["haConnectionInfo"]) == n
