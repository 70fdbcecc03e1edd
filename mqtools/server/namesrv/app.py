"""The name server process (RocketMQ's NamesrvController): asyncio wiring around the sans-IO route tables.

One event loop: the remoting server answers requests inline, a timer scans for brokers
whose heartbeat expired, a closed broker connection unregisters that broker at once,
and file writes (kvConfig.json, namesrv.properties) go to a thread, one at a time, each of the latest state.
Name servers never talk to each other; run as many as you like side by side.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mqtools.common.atomic_file import write_atomic
from mqtools.common.javaprops import render_properties
from mqtools.common.log_limiter import LimitedLog
from mqtools.common.tls_certificates import TlsCertificateManager
from mqtools.remoting.server import RemotingServer
from mqtools.remoting.transport import RemotingConnection
from mqtools.server.lifecycle import StartError, cancel_and_wait, listen, wall_clock_ms
from mqtools.server.namesrv.config import NamesrvConfig
from mqtools.server.namesrv.kv_config import KVConfigError, KVConfigManager
from mqtools.server.namesrv.processor import NamesrvProcessor
from mqtools.server.namesrv.route_info import RouteInfoManager

log = logging.getLogger(__name__)


class LatestStateWriter:
    """Writes one file of in-memory state off the loop, the latest state only: a caller changes the state, then
    awaits `write`, which returns once a write that began after that change is on disk. Callers who come while a
    write is in flight share the next one, snapshotted when it begins: pipelined changes hold at most two
    snapshots and render the state twice, where each held and rendered its own (200 PUTs on a 1 MB table, 200 MB).
    """

    def __init__(self, path: Callable[[], Path], render: Callable[[], bytes], lock: asyncio.Lock) -> None:
        self._path = path
        self._render = render
        self._lock = lock  # shared by the files of one process: one write at a time
        #: The write not begun yet, which every caller since the last one began awaits.
        self._next: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def write(self) -> None:
        """Returns once the state as of this call is on disk; raises what that write raised (OSError)."""
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
            task = asyncio.create_task(self._run(self._next))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        await asyncio.shield(self._next)  # a caller cancelled does not cancel the write others await

    async def drain(self) -> None:
        """Waits for the write in flight and the one pending, if any."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def _run(self, done: asyncio.Future[None]) -> None:
        try:
            async with self._lock:
                self._next = None  # who comes from now on is not in this snapshot: they await the next write
                path = self._path()
                try:
                    await asyncio.to_thread(write_atomic, path, self._render())
                except OSError as exc:
                    log.error("cannot write %s: %s", path, exc)
                    raise
            done.set_result(None)
        except Exception as exc:  # noqa: BLE001 - the OSError, or our bug: each waiting request fails with it
            done.set_exception(exc)
        finally:
            if self._next is done:  # cancelled before it began: the next caller starts a new write
                self._next = None
            if not done.done():  # cancelled: no waiter hangs
                done.cancel()


class NamesrvController:
    def __init__(self, config: NamesrvConfig, clock: Callable[[], int] = wall_clock_ms) -> None:
        self.config = config
        self.clock = clock
        self.routes = RouteInfoManager(
            default_timeout_ms=config.broker_channel_expired_time,
            delete_topic_with_broker_registration=config.delete_topic_with_broker_registration,
        )
        self.kv = KVConfigManager(Path(config.kv_config_path).expanduser())
        self.server = RemotingServer(config.bind_address, config.listen_port, on_close=self._on_close,
                                     tls=TlsCertificateManager(config.tls_server()))
        write_lock = asyncio.Lock()
        self._kv_writer = LatestStateWriter(lambda: self.kv.path, self.kv.snapshot, write_lock)
        self._config_writer = LatestStateWriter(
            lambda: Path(self.config.config_store_path).expanduser(),
            lambda: render_properties(self.config.to_properties()).encode(),
            write_lock,
        )
        self.processor = NamesrvProcessor(
            config, self.routes, self.kv, clock, persist_kv=self._kv_writer.write,
            persist_config=self._config_writer.write,
        )
        self.processor.register(self.server)
        #: Anyone can register a broker with a short heartbeat timeout: its expiry lines are rate-limited.
        self._expiries = LimitedLog(log, lambda: self.clock() / 1000)
        self._scan_task: asyncio.Task | None = None

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self) -> None:
        try:
            self.kv.load()
        except KVConfigError as exc:
            raise StartError(str(exc)) from None
        await listen(self.server, f"{self.config.bind_address}:{self.config.listen_port}")
        self._scan_task = asyncio.create_task(self._scan_loop())

    async def shutdown(self) -> None:
        await cancel_and_wait(self._scan_task)
        await self.server.shutdown()
        await self._kv_writer.drain()  # let the pending file writes finish
        await self._config_writer.drain()

    def _on_close(self, conn: RemotingConnection) -> None:
        if self.routes.on_channel_destroy(conn):
            log.info("broker connection %s closed: unregistered", conn.peer)

    async def _scan_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.scan_not_active_broker_interval / 1000)
            self.scan_once()

    def scan_once(self) -> None:
        for channel in self.routes.scan_not_active_broker(self.clock()):
            self._expiries.warning("expired", "broker connection %s expired: closed", channel.peer)
            channel.close()
