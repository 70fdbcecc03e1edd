"""Master and slave HA services over real loopback sockets, with an in-memory segmented commitlog.

The commitlog here is a stand-in with the store facade's HA semantics (file-bounded reads,
strict-offset appends) so that the network layer is tested on its own; replication through
the real store and broker processes is covered in tests/integration/ha.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os

import pytest

from mqtools.common.log_limiter import LIMIT
from mqtools.server.ha.protocol import encode_header, encode_report
from mqtools.server.ha.service import HAConfig, HAService
from mqtools.server.store.results import PutMessageStatus

FILE = 4096


class SegmentedLog:
    """Bytes in fixed-size files starting at `base`; reads never cross a file boundary."""

    def __init__(self, file_size: int = FILE) -> None:
        self.file_size = file_size
        self.base = 0
        self.data = bytearray()

    @property
    def max_phy_offset(self) -> int:
        return self.base + len(self.data)

    def put(self, payload: bytes) -> int:
        self.data += payload
        return self.max_phy_offset

    def get_commit_log_data(self, offset: int) -> memoryview | None:
        if offset < self.base or offset >= self.max_phy_offset:
            return None
        file_end = offset - offset % self.file_size + self.file_size
        end = min(file_end, self.max_phy_offset)
        return memoryview(self.data)[offset - self.base:end - self.base]

    def append_to_commit_log(self, start_offset: int, data: bytes) -> bool:
        if not self.data and self.base == 0:
            self.base = start_offset
        if start_offset != self.max_phy_offset:
            return False
        self.data += data
        return True

    def dispatch_appended(self) -> None:
        """Nothing to build: this log has no queues."""

    def range(self, start: int, end: int) -> bytes:
        return bytes(self.data[start - self.base:end - self.base])


def config(role: str, **kw: object) -> HAConfig:
    cfg = HAConfig(broker_role=role, ha_listen_port=0, bind_address="127.0.0.1",
                   ha_send_heartbeat_interval=200, ha_housekeeping_interval=2_000,
                   ha_transfer_batch_size=1000, mapped_file_size_commit_log=FILE, sync_flush_timeout=2_000)
    for key, value in kw.items():
        setattr(cfg, key, value)
    return cfg


async def until(cond, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def pair(master_log: SegmentedLog, slave_log: SegmentedLog, role: str = "SYNC_MASTER", **kw: object):
    master = HAService(master_log, config(role, **kw))
    port = await master.start()
    slave = HAService(slave_log, config("SLAVE", ha_master_address=f"127.0.0.1:{port}", **kw))
    await slave.start()
    try:
        yield master, slave
    finally:
        await slave.shutdown()
        await master.shutdown()


async def test_replicates_bytes_across_file_boundaries_in_bounded_frames() -> None:
    mlog, slog = SegmentedLog(), SegmentedLog()
    payload = os.urandom(3 * FILE + 123)
    mlog.put(payload)
    slog.append_to_commit_log(0, payload[:1])  # not empty: streaming starts at its offset, not the last file
    async with pair(mlog, slog) as (master, _):
        await until(lambda: slog.max_phy_offset == mlog.max_phy_offset)
        assert slog.range(0, mlog.max_phy_offset) == payload
        await until(lambda: master.progress.push2slave_max_offset == mlog.max_phy_offset)
        info = master.ha_runtime_info()
        assert info["inSyncSlaveNums"] == 1
        assert info["haConnectionInfo"][0]["diff"] == 0


async def test_empty_slave_starts_at_the_masters_last_file() -> None:
    mlog, slog = SegmentedLog(), SegmentedLog()
    mlog.put(os.urandom(2 * FILE + 500))
    async with pair(mlog, slog):
        await until(lambda: slog.max_phy_offset == mlog.max_phy_offset)
        assert slog.base == 2 * FILE
        assert slog.range(2 * FILE, mlog.max_phy_offset) == mlog.range(2 * FILE, mlog.max_phy_offset)


async def test_restarted_slave_resumes_from_its_own_offset() -> None:
    mlog, slog = SegmentedLog(), SegmentedLog()
    mlog.put(os.urandom(1500))
    async with pair(mlog, slog):
        await until(lambda: slog.max_phy_offset == 1500)
    mlog.put(os.urandom(2000))
    async with pair(mlog, slog) as (master, _):
        await until(lambda: slog.max_phy_offset == 3500)
        assert master.connections[0].slave_request_offset == 1500
        assert slog.range(0, 3500) == mlog.range(0, 3500)



async def wait_result(master: HAService, end_offset: int, timeout_s: float) -> str:
    """The store's hook awaited: the status a SYNC_MASTER put gets, by name."""
    future: asyncio.Future[PutMessageStatus] = asyncio.get_running_loop().create_future()
    master.when_replicated(end_offset, timeout_s, future.set_result)
    return (await future).name

async def test_sync_wait_released_by_ack_and_many_waiters_at_once() -> None:
    mlog, slog = SegmentedLog(), SegmentedLog()
    async with pair(mlog, slog) as (master, _):
        await until(lambda: len(master.connections) == 1 and master.connections[0].slave_ack_offset >= 0)
        ends = [mlog.put(os.urandom(100)) for _ in range(50)]
        results = await asyncio.gather(*(wait_result(master, end, 5.0) for end in ends))
        assert results == ["PUT_OK"] * 50
        assert slog.max_phy_offset >= ends[-1]


async def test_slave_not_available_without_slave() -> None:
    mlog = SegmentedLog()
    master = HAService(mlog, config("SYNC_MASTER"))
    await master.start()
    try:
        assert await wait_result(master, mlog.put(b"x" * 10), 1.0) == "SLAVE_NOT_AVAILABLE"
    finally:
        await master.shutdown()


async def test_slave_too_far_behind_is_not_available() -> None:
    mlog, slog = SegmentedLog(), SegmentedLog()
    async with pair(mlog, slog, ha_slave_fallbehind_max=100) as (master, _):
        await until(lambda: len(master.connections) == 1)
        assert await wait_result(master, mlog.put(b"x" * 500), 1.0) == "SLAVE_NOT_AVAILABLE"


async def test_slave_refusing_data_is_not_available_then_recovers() -> None:
    """A slave whose store refuses the data drops its connection; the put waiting for it is answered
    SLAVE_NOT_AVAILABLE at once (no slave left to acknowledge), not at its timeout; the slave comes back."""
    mlog, slog = SegmentedLog(), SegmentedLog()
    async with pair(mlog, slog) as (master, slave):
        await until(lambda: len(master.connections) == 1 and master.progress.push2slave_max_offset >= 0)
        real_append = slog.append_to_commit_log
        slog.append_to_commit_log = lambda start, data: False  # type: ignore[method-assign]
        end = mlog.put(b"y" * 50)
        t0 = asyncio.get_running_loop().time()
        assert await wait_result(master, end, 3.0) == "SLAVE_NOT_AVAILABLE"
        assert asyncio.get_running_loop().time() - t0 < 3.0  # at once, not at the wait's timeout
        slog.append_to_commit_log = real_append  # type: ignore[method-assign]
        await until(lambda: slog.max_phy_offset == end)
        assert await wait_result(master, mlog.put(b"z" * 50), 3.0) == "PUT_OK"
        assert slave.client is not None and slave.client.mismatches == 0


async def test_master_drops_a_silent_slave_after_housekeeping() -> None:
    mlog = SegmentedLog()
    master = HAService(mlog, config("ASYNC_MASTER", ha_housekeeping_interval=300))
    port = await master.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(encode_report(0)[:5])  # a partial report only: still silent
        await until(lambda: len(master.connections) == 1)
        await until(lambda: len(master.connections) == 0, timeout=5.0)
        assert await asyncio.wait_for(reader.read(), 2.0) is not None
        writer.close()
    finally:
        await master.shutdown()


async def test_reports_keep_a_slave_past_housekeeping_and_silence_drops_it() -> None:
    """The housekeeping deadline runs from the last read (one timer re-armed), not from the connect."""
    master = HAService(SegmentedLog(), config("ASYNC_MASTER", ha_housekeeping_interval=500))
    port = await master.start()
    try:
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        await until(lambda: len(master.connections) == 1)
        for _ in range(12):  # 1.2 s of reports every 100 ms: more than twice the interval in all
            writer.write(encode_report(0))
            await asyncio.sleep(0.1)
            assert len(master.connections) == 1
        await until(lambda: len(master.connections) == 0, timeout=5.0)  # then silent: dropped
        writer.close()
    finally:
        await master.shutdown()


async def test_a_slave_that_stops_reading_holds_the_writer_not_the_loop() -> None:
    """Frames wait on the link's flow control while the slave reads nothing; its close ends the connection."""
    mlog = SegmentedLog(file_size=1 << 20)
    for _ in range(32):
        mlog.put(os.urandom(1 << 20)[:1 << 19] * 2)  # 32 MiB the slave will not read
    master = HAService(mlog, config("ASYNC_MASTER", mapped_file_size_commit_log=1 << 20,
                                    ha_transfer_batch_size=1 << 16))
    port = await master.start()
    try:
        _reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 16)
        writer.transport.pause_reading()
        writer.write(encode_report(1))  # not 0, which would start at the last file
        await until(lambda: len(master.connections) == 1)
        conn = master.connections[0]
        await until(lambda: conn.speed.total > 0)
        sent = -1
        while sent != conn.speed.total:  # the writer stops once the socket buffers are full ...
            sent = conn.speed.total
            await asyncio.sleep(0.2)
        assert 0 < sent < mlog.max_phy_offset // 2, sent  # not all of it buffered in the process
        started = asyncio.get_running_loop().time()
        await asyncio.sleep(0.05)  # ... while the loop still turns
        assert asyncio.get_running_loop().time() - started < 1.0
        writer.transport.abort()
        await until(lambda: len(master.connections) == 0, timeout=5.0)
        assert conn.closed.is_set()
    finally:
        await master.shutdown()


async def test_slave_drops_connection_on_offset_mismatch() -> None:
    slog = SegmentedLog()
    slog.append_to_commit_log(0, b"a" * 100)
    server_got: list[bytes] = []
    connections = 0

    async def fake_master(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        server_got.append(await reader.readexactly(8))
        writer.write(encode_header(50, 3) + b"bad")  # not at the slave's max offset (100)
        await writer.drain()
        with contextlib.suppress(Exception):
            await reader.read()
        writer.close()

    server = await asyncio.start_server(fake_master, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    slave = HAService(slog, config("SLAVE", ha_master_address=f"127.0.0.1:{port}"))
    await slave.start()
    try:
        await until(lambda: slave.client is not None and slave.client.mismatches >= 1)
        assert server_got[0] == encode_report(100)
        assert slog.max_phy_offset == 100
        await until(lambda: connections >= 2)  # reconnects and re-reports its real offset
    finally:
        await slave.shutdown()
        server.close()


def test_config_from_properties_uses_rocketmq_names() -> None:
    cfg = HAConfig.from_properties({"brokerRole": "SLAVE", "haMasterAddress": "10.0.0.1:10912",
                                    "haTransferBatchSize": "65536", "unrelated": "x"})
    assert cfg.is_slave and cfg.fixed_master_address == "10.0.0.1:10912"
    assert cfg.ha_transfer_batch_size == 65536
    assert HAConfig.from_properties({"haMasterAddress": "x"}).fixed_master_address is None


@pytest.mark.parametrize("role", ["ASYNC_MASTER", "SYNC_MASTER"])
async def test_runtime_info_on_master_and_slave(role: str) -> None:
    mlog, slog = SegmentedLog(), SegmentedLog()
    mlog.put(b"q" * 300)
    async with pair(mlog, slog, role=role) as (master, slave):
        await until(lambda: slog.max_phy_offset == 300)
        await until(lambda: slave.ha_runtime_info()["haClientRuntimeInfo"]["lastReadTimestamp"] > 0)
        client = slave.ha_runtime_info()["haClientRuntimeInfo"]
        assert client["masterAddr"] == f"127.0.0.1:{master.port}" and client["maxOffset"] == 300
        assert master.runtime_info()["haConnectionCount"] == "1"
        assert master.master_slave_diff_line().startswith("Slave fall behind master:")


def test_a_slave_without_a_running_client_reports_what_it_replicated() -> None:
    """A controller-mode slave stops its client before it is promoted: between the two its HA status still
    gives its commitlog's end as maxOffset (a drill reads it as what replication reached), not 0."""
    slog = SegmentedLog()
    slog.append_to_commit_log(0, b"r" * 700)
    slave = HAService(slog, config("SLAVE", ha_master_address="127.0.0.1:1"))
    slave.client = None
    assert slave.ha_runtime_info()["haClientRuntimeInfo"]["maxOffset"] == 700


async def test_slave_ahead_of_its_master_is_refused() -> None:
    mlog, slog = SegmentedLog(), SegmentedLog()
    mlog.put(b"m" * 100)
    slog.append_to_commit_log(0, b"s" * 500)  # e.g. the master lost its tail after an OS crash
    async with pair(mlog, slog) as (master, slave):
        assert slave.client is not None
        await until(lambda: slave.client.sessions >= 2)  # the master dropped it; it came back
        assert master.progress.push2slave_max_offset == 0  # its ack never counted
        assert slog.max_phy_offset == 500 and slog.range(0, 100) == b"s" * 100
        assert all(c.slave_ack_offset < 0 for c in master.connections)


async def test_garbage_connections_to_the_ha_port_log_a_bounded_number_of_lines(
        caplog: pytest.LogCaptureFixture) -> None:
    master = HAService(SegmentedLog(), config("ASYNC_MASTER"))
    port = await master.start()
    caplog.set_level(logging.INFO, logger="mq.ha")
    try:
        for _ in range(3 * LIMIT):
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"\xff" * 5)  # not a 12-byte report: the master closes the connection
            await writer.drain()
            writer.close()
            await writer.wait_closed()
        await until(lambda: not master.connections)
    finally:
        await master.shutdown()
    peer_lines = [r for r in caplog.records if "HA slave connected" in r.message or "HA connection" in r.message]
    assert LIMIT <= len(peer_lines) <= 2 * LIMIT, len(peer_lines)  # one allowance per kind (connected, closed)
