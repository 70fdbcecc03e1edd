"""Replication with real broker processes: byte equality, consume queues, restart, empty slave."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from integration.ha.hasupport import (
    FILE_SIZE,
    add_slave,
    commitlog_max,
    ha_status,
    max_offset,
    pull_all,
    read_range,
    running_group,
    send,
    slave_knows_topic,
    until,
)

from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import ResponseCode

pytestmark = pytest.mark.integration
TOPIC = "HaRepl"


async def load(client: RemotingClient, addr: str, count: int, size: int = 1000, tag: str = "") -> list:
    sem = asyncio.Semaphore(32)

    async def one(i: int):
        async with sem:
            body = f"{tag}{i:06d}:".encode() + os.urandom(size)
            return await send(client, addr, TOPIC, body, queue_id=i % 4)

    return await asyncio.gather(*(one(i) for i in range(count)))


async def caught_up(client: RemotingClient, master: str, slave: str) -> bool:
    return await commitlog_max(client, slave) == await commitlog_max(client, master)


async def test_slave_bytes_and_consume_queues_equal_the_masters(tmp_path: Path) -> None:
    async with running_group(tmp_path, role="ASYNC_MASTER") as (group, client):
        sent = await load(client, group.master.addr, 600)  # ~600 KB: several 256 KB files roll
        assert all(s.code == ResponseCode.SUCCESS for s in sent)
        assert group.slave is not None
        await until(lambda: caught_up(client, group.master.addr, group.slave.addr), 30, "slave catch-up")
        end = await commitlog_max(client, group.master.addr)
        assert end > 2 * FILE_SIZE
        assert read_range(group.slave.commitlog_files(), 0, end) == read_range(group.master.commitlog_files(), 0, end)
        for qid in range(4):
            assert await max_offset(client, group.slave.addr, TOPIC, qid) == \
                await max_offset(client, group.master.addr, TOPIC, qid)
        await until(lambda: slave_knows_topic(client, group.slave.addr, TOPIC), 20, "topic sync")
        from_slave = await pull_all(client, group.slave.addr, TOPIC, 1)
        assert from_slave == await pull_all(client, group.master.addr, TOPIC, 1)
        assert len(from_slave) == 150
        status = await ha_status(client, group.master.addr)
        assert status["inSyncSlaveNums"] == 1 and status["haConnectionInfo"][0]["diff"] == 0


async def test_slave_restarted_mid_load_resumes_from_its_own_offset(tmp_path: Path) -> None:
    async with running_group(tmp_path, role="ASYNC_MASTER") as (group, client):
        assert group.slave is not None and group.slave.proc is not None
        await load(client, group.master.addr, 200, tag="a")
        await until(lambda: caught_up(client, group.master.addr, group.slave.addr), 30, "first catch-up")
        first = await commitlog_max(client, group.slave.addr)
        running = asyncio.ensure_future(load(client, group.master.addr, 300, size=4000, tag="b"))

        async def streaming() -> bool:
            return await commitlog_max(client, group.slave.addr) > first

        await until(streaming, 30, "replication of the second load")
        group.slave.proc.kill()  # SIGKILL mid-load: frames are not message-aligned, recovery trims
        group.slave.start()
        assert all(s.code == ResponseCode.SUCCESS for s in await running)
        await load(client, group.master.addr, 100, tag="c")
        await until(lambda: caught_up(client, group.master.addr, group.slave.addr), 30, "resumed catch-up")
        end = await commitlog_max(client, group.master.addr)
        assert read_range(group.slave.commitlog_files(), 0, end) == read_range(group.master.commitlog_files(), 0, end)
        await until(lambda: slave_knows_topic(client, group.slave.addr, TOPIC), 20, "topic sync")
        bodies = await pull_all(client, group.slave.addr, TOPIC, 2)
        assert len(bodies) == 150 and len({b[:8] for b in bodies}) == 150


async def test_empty_slave_after_the_master_rolled_starts_at_its_last_file(tmp_path: Path) -> None:
    async with running_group(tmp_path, role="ASYNC_MASTER", with_slave=False) as (group, client):
        await load(client, group.master.addr, 700)
        end = await commitlog_max(client, group.master.addr)
        last_file = end - end % FILE_SIZE
        assert last_file >= 2 * FILE_SIZE
        group.slave = add_slave(group)
        await until(lambda: caught_up(client, group.master.addr, group.slave.addr), 30, "empty slave catch-up")
        files = group.slave.commitlog_files()
        assert int(files[0].name) == last_file
        assert read_range(files, last_file, end) == read_range(group.master.commitlog_files(), last_file, end)
