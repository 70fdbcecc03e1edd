"""Who counts as a live slave or master, over loopback sockets (test_ha_loopback's in-memory commitlog): a peer
that never reports is no slave for a SYNC put; a slave that stopped reporting is not in sync long before the
housekeeping drops it; a slave is activated only once its master's bytes arrive, and says why its last session
ended."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from integration.ha.test_ha_loopback import SegmentedLog, config, pair, until, wait_result

from mqtools.server.ha.protocol import encode_header, encode_report
from mqtools.server.ha.service import HAService


@contextlib.asynccontextmanager
async def master_with_peer(role: str, data: bytes = b"", **kw: object) -> AsyncIterator[
        tuple[HAService, SegmentedLog, asyncio.StreamWriter]]:
    """A master holding `data` and a raw peer connected to its HA port (it sends only what the test writes)."""
    mlog = SegmentedLog()
    mlog.put(data)
    master = HAService(mlog, config(role, **kw))
    port = await master.start()
    _reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        await until(lambda: len(master.connections) == 1)
        yield master, mlog, writer
    finally:
        writer.close()
        await master.shutdown()


async def test_a_peer_that_never_reports_is_no_slave_for_a_sync_put() -> None:
    """It counted from the accept: a SYNC put waited for it until its timeout (FLUSH_SLAVE_TIMEOUT)."""
    async with master_with_peer("SYNC_MASTER") as (master, mlog, peer):
        peer.write(encode_report(0)[:3])  # half a report, and the connection held open
        await peer.drain()
        started = asyncio.get_running_loop().time()
        assert await wait_result(master, mlog.put(b"x" * 10), 3.0) == "SLAVE_NOT_AVAILABLE"
        assert asyncio.get_running_loop().time() - started < 3.0  # at once, not at the put's timeout
        assert master.progress.connection_count == 0 and len(master.connections) == 1
        peer.write(encode_report(0)[3:])  # the report completed: now it is a slave
        await until(lambda: master.progress.connection_count == 1)


async def test_a_slave_that_stops_reporting_is_not_in_sync_long_before_housekeeping() -> None:
    """It read in sync, with frozen figures, until the housekeeping (here a minute) dropped it."""
    async with master_with_peer("SYNC_MASTER", b"q" * 300, ha_housekeeping_interval=60_000) as (master, _, peer):
        peer.write(encode_report(300))
        fresh = await _row_when(master, lambda r: r["slaveAckOffset"] == 300)
        assert fresh["inSync"]
        row = await _row_when(master, lambda r: not r["inSync"])  # silent past two report intervals (2 x 200 ms)
        assert 0 <= fresh["lastReportAgeMs"] < 400 and not fresh["reportOverdue"]
        assert row["reportOverdue"] and row["lastReportAgeMs"] >= 400 and row["diff"] == 0
        assert master.ha_runtime_info()["inSyncSlaveNums"] == 0 and len(master.connections) == 1
        peer.write(encode_report(300))  # it speaks again
        row = await _row_when(master, lambda r: r["inSync"])
        assert not row["reportOverdue"]


async def _row_when(master: HAService, check, timeout: float = 5.0) -> dict:
    """The master's runtime info row of its one connection, once `check` holds for it."""
    rows: list[dict] = []

    def matches() -> bool:
        rows[:] = master.ha_runtime_info()["haConnectionInfo"]
        return len(rows) == 1 and check(rows[0])

    await until(matches, timeout)
    return rows[0]


async def test_a_reporting_slave_stays_in_sync_while_idle() -> None:
    mlog, slog = SegmentedLog(), SegmentedLog()
    mlog.put(b"a" * 100)
    async with pair(mlog, slog, role="ASYNC_MASTER") as (master, _):
        await _row_when(master, lambda r: r["slaveAckOffset"] == 100 and r["inSync"])
        loop = asyncio.get_running_loop()
        end = loop.time() + 1.5  # seven report intervals with nothing to replicate
        while loop.time() < end:
            (row,) = master.ha_runtime_info()["haConnectionInfo"]
            assert row["inSync"] and not row.get("reportOverdue"), row
            await asyncio.sleep(0.05)


async def test_a_slave_is_activated_once_its_master_speaks_and_says_why_a_session_ended() -> None:
    """It was activated as soon as the TCP connect returned, as it is against a hung master (the kernel accepts)."""
    got: list[asyncio.StreamWriter] = []

    async def silent_master(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got.append(writer)
        with contextlib.suppress(Exception):
            await reader.read()

    server = await asyncio.start_server(silent_master, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    slog = SegmentedLog()
    slog.append_to_commit_log(0, b"s" * 50)
    slave = HAService(slog, config("SLAVE", ha_master_address=f"127.0.0.1:{port}", ha_housekeeping_interval=800))
    await slave.start()
    try:
        await until(lambda: slave.client is not None and slave.client.sessions == 1 and bool(got))
        info = slave.ha_runtime_info()["haClientRuntimeInfo"]
        assert info["activated"] is False and info["lastCloseReason"] == ""
        got[0].write(encode_header(50, 0))  # the master's heartbeat at the slave's offset
        await until(lambda: slave.ha_runtime_info()["haClientRuntimeInfo"]["activated"] is True)
        await until(lambda: slave.client is not None and slave.client.sessions == 2)  # silent: dropped, back
        info = slave.ha_runtime_info()["haClientRuntimeInfo"]
        assert info["activated"] is False and "no anything from the master" in info["lastCloseReason"]
    finally:
        await slave.shutdown()
        server.close()


async def test_a_slave_of_a_quiet_master_is_activated_at_once() -> None:
    """The master's first heartbeat goes as the transfer starts, not a heartbeat interval (here a minute) later."""
    mlog, slog = SegmentedLog(), SegmentedLog()
    mlog.put(b"b" * 100)
    slog.append_to_commit_log(0, mlog.range(0, 100))
    async with pair(mlog, slog, role="ASYNC_MASTER", ha_send_heartbeat_interval=60_000,
                    ha_housekeeping_interval=120_000) as (_, slave):
        await until(lambda: slave.ha_runtime_info()["haClientRuntimeInfo"]["activated"] is True, timeout=5.0)
