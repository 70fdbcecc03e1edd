"""The name server process (RocketMQ's NamesrvController): asyncio wiring around the sans-IO route tables.

One event loop: the remoting server answers requests inline, a timer scans for brokers
whose heartbeat expired, a closed broker connection unregisters that broker at once,
and file writes (kvConfig.json, namesrv.properties) go to a thread, one at a time a file, each of the latest
state (mqtools.common.latest_state).
Name servers never talk to each other; run as many as you like side by side.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from mqtools.common.atomic_file import write_atomic
from mqtools.common.javaprops import render_properties
from mqtools.common.latest_state import LatestStateWriter
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


def _writing(path: Callable[[], Path], render: Callable[[], bytes]) -> Callable[[], None]:
    """A LatestStateWriter's snapshot of one file (taken on the loop) and the job that writes it."""
    where, data = path(), render()

    def job() -> None:
        try:
            write_atomic(where, data)
        except OSError as exc:
            log.error("cannot write %s: %s", where, exc)
            raise

    return job


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
        self._kv_writer = LatestStateWriter(lambda: _writing(lambda: self.kv.path, self.kv.snapshot))
        self._config_writer = LatestStateWriter(lambda: _writing(
            lambda: Path(self.config.config_store_path).expanduser(),
            lambda: render_properties(self.config.to_properties()).encode()))
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
