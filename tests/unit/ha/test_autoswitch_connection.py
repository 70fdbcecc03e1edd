"""The controller-mode master's connection: handshakes collapse into one answer from the writer, so a peer
that streams handshakes and never reads cannot grow the master's write buffer (AutoSwitchHAConnection)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from mqtools.common.log_limiter import LimitedLog
from mqtools.server.ha.autoswitch_connection import AutoSwitchHAConnection
from mqtools.server.ha.autoswitch_protocol import (
    MasterHandshake,
    MasterStreamReader,
    SlaveHandshake,
    Transfer,
    encode_master_handshake,
    encode_slave_handshake,
    encode_slave_report,
)
from mqtools.server.ha.epoch_file import EpochEntry
from mqtools.server.ha.master import HAConnection, SlaveLink

EPOCHS = [EpochEntry(e, e * 10, e * 10 + 10) for e in range(49)] + [EpochEntry(49, 490)]
ANSWER_SIZE = len(encode_master_handshake(0, EPOCHS))
HANDSHAKE = encode_slave_handshake(SlaveHandshake(broker_id=2))


class Store:
    def __init__(self) -> None:
        self.log = bytearray(b"x" * 600)

    @property
    def max_phy_offset(self) -> int:
        return len(self.log)

    @property
    def min_phy_offset(self) -> int:
        return 0

    def get_commit_log_data(self, offset: int) -> bytes | None:
        return bytes(self.log[offset:]) or None


class Host:
    def __init__(self) -> None:
        self.peer_log = LimitedLog(logging.getLogger("test.ha"))
        self.confirm_offset = 0

    def epochs(self) -> list[EpochEntry]:
        return EPOCHS

    def on_slave_ack(self, conn: HAConnection, offset: int) -> None:
        pass

    def on_connection_closed(self, conn: HAConnection) -> None:
        pass


class StuckTransport(asyncio.Transport):
    """A socket whose peer never reads: everything written stays queued, flow control pauses the
    protocol above `high` bytes and never resumes it."""

    def __init__(self, link: SlaveLink, high: int) -> None:
        super().__init__()
        self.link = link
        self.high = high
        self.queued = bytearray()
        self.closing = False

    def write(self, data: Any) -> None:
        was_high = len(self.queued) > self.high
        self.queued += data
        if not was_high and len(self.queued) > self.high:
            self.link.pause_writing()

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("10.0.0.2", 40000) if name == "peername" else default


def connect(high: int = 64 * 1024) -> tuple[AutoSwitchHAConnection, StuckTransport, Store]:
    store = Store()
    made: list[AutoSwitchHAConnection] = []

    def accept(link: SlaveLink) -> AutoSwitchHAConnection:
        made.append(AutoSwitchHAConnection(Host(), store, link, file_size=1 << 20, batch_size=1 << 20,
                                           heartbeat_interval=1000.0, housekeeping_interval=1000.0))
        return made[0]

    link = SlaveLink(accept)
    transport = StuckTransport(link, high)
    link.connection_made(transport)
    return made[0], transport, store


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def frames(transport: StuckTransport) -> list[MasterHandshake | Transfer]:
    return MasterStreamReader().feed(bytes(transport.queued))


async def test_a_burst_of_handshakes_gets_one_answer() -> None:
    conn, transport, _ = connect()
    for _ in range(1000):
        conn.received(HANDSHAKE)
    await settle()
    assert len(transport.queued) == ANSWER_SIZE
    assert conn.slave_broker_id == 2
    await conn.shutdown()


async def test_handshakes_to_a_peer_that_never_reads_stay_under_the_high_water_mark() -> None:
    high = 4096
    conn, transport, _ = connect(high)
    for _ in range(1000):
        conn.received(HANDSHAKE)
        await asyncio.sleep(0)
    await settle()
    assert not conn.closed.is_set()
    assert len(transport.queued) <= high + ANSWER_SIZE
    await conn.shutdown()


async def test_a_handshake_during_transfer_is_answered_once_and_holds_the_transfer() -> None:
    conn, transport, store = connect()
    conn.received(HANDSHAKE)
    await settle()
    conn.received(encode_slave_report(600))
    await settle()
    conn.received(HANDSHAKE + HANDSHAKE)
    await settle()
    store.log += b"y" * 50
    conn.wake()
    await settle()
    got = frames(transport)
    assert [type(f) for f in got] == [MasterHandshake, MasterHandshake]
    conn.received(encode_slave_report(600))
    await settle()
    assert [(f.offset, len(f.body)) for f in frames(transport)[2:] if isinstance(f, Transfer)] == [(600, 50)]
    await conn.shutdown()


async def test_a_report_before_the_handshake_closes_the_connection() -> None:
    conn, transport, _ = connect()
    conn.received(encode_slave_report(0))
    assert conn.closed.is_set()
    assert transport.queued == bytearray()
