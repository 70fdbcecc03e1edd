"""HAService: the store's `ha_hook`, the HA accept socket, the HA client and runtime info.

Every broker opens the HA accept socket (as RocketMQ does); a SLAVE also runs the HA client.
`when_replicated` is what the store calls after appending a SYNC_MASTER put; it answers, through a callback,
with the store's PutMessageStatus (PUT_OK, SLAVE_NOT_AVAILABLE or FLUSH_SLAVE_TIMEOUT).

Beyond Apache: a connection counts as a slave (isSlaveOK) only after its first report, not from the accept, so a
half-open peer on the HA port is no slave a SYNC put could wait for; and the runtime info gives each connection's
last report age, reading a slave silent past two heartbeat intervals (it reports at least that often) as not in
sync, long before the housekeeping drops it.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Protocol

from mqtools.common.brokerrole import BrokerRole
from mqtools.common.configkeys import PropertyMap
from mqtools.common.log_limiter import LimitedLog
from mqtools.common.tls_certificates import TlsCertificateManager
from mqtools.server.ha.group_transfer import GroupTransferService, Replicated, ReplicationProgress
from mqtools.server.ha.master import CommitLogSource, HAAcceptor, HAConnection, SlaveLink, Vouched
from mqtools.server.ha.slave import CommitLogSink, HAClient
from mqtools.server.store.results import PutMessageStatus

log = logging.getLogger("mq.ha")

@dataclass
class HAConfig:
    """The HA settings, under RocketMQ's MessageStoreConfig names (ms / bytes as there)."""

    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    ha_listen_port: int = 10912
    ha_master_address: str = ""
    ha_send_heartbeat_interval: int = 5_000
    ha_housekeeping_interval: int = 20_000
    ha_transfer_batch_size: int = 32 * 1024
    ha_slave_fallbehind_max: int = 256 * 1024 * 1024
    sync_flush_timeout: int = 5_000
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    bind_address: str = "0.0.0.0"
    # controller mode (autoswitch_service.py), under MessageStoreConfig's names
    all_ack_in_sync_state_set: bool = False
    in_sync_replicas: int = 1
    min_in_sync_replicas: int = 1
    ha_max_time_slave_not_catchup: int = 15_000
    sync_from_last_file: bool = False

    def __post_init__(self) -> None:
        self.broker_role = BrokerRole.parse(self.broker_role)

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> HAConfig:
        """Pick the HA keys out of a broker's properties; unknown keys are ignored."""
        return HA_PROPERTIES.build(props)

    @property
    def is_slave(self) -> bool:
        return not self.broker_role.is_master

    @property
    def fixed_master_address(self) -> str | None:
        """haMasterAddress wins over name-server updates when it looks like ip:port."""
        return self.ha_master_address if len(self.ha_master_address) >= 6 else None


HA_PROPERTIES = PropertyMap(HAConfig)


class ReplicatedStore(CommitLogSource, CommitLogSink, Protocol):
    """The store as HA uses it: a master reads its commitlog, a slave appends to it."""


class HAService:
    """Replication for one broker: master connections, optional slave client, SYNC waits."""

    #: Controller mode's subclass replaces the slave client and the wait rules.
    autoswitch = False
    #: How a SYNC_MASTER wait's end answers the put (the store's callback gets these as they are).
    OUTCOMES: ClassVar[Mapping[Replicated, PutMessageStatus]] = MappingProxyType({
        Replicated.ACKED: PutMessageStatus.PUT_OK, Replicated.TIMED_OUT: PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        Replicated.NO_SLAVE: PutMessageStatus.SLAVE_NOT_AVAILABLE})

    def __init__(self, store: ReplicatedStore, config: HAConfig, *,
                 clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time, tls: TlsCertificateManager | None = None,
                 client_tls: ssl.SSLContext | None = None) -> None:
        """`tls`: the HA port's TLS mode and certificates (the broker's, shared with its remoting port);
        `client_tls`: what a slave's connection uses."""
        self.store = store
        self.config = config
        self._clock = clock
        self.progress = ReplicationProgress(config.ha_slave_fallbehind_max)
        self.group = GroupTransferService(self.progress, clock, self.OUTCOMES)
        self.connections: list[HAConnection] = []
        #: The store's max offset when HA started, and the most streamed to a slave that has left since:
        #: what this master can vouch for (Vouched).
        self.recovered_max = 0
        self._streamed_max = -1
        self.peer_log = LimitedLog(log, clock)
        self._acceptor = HAAcceptor(self._new_connection, tls)
        self.port: int | None = None
        self.client: HAClient | None = None
        if config.is_slave and not self.autoswitch:
            self.client = HAClient(
                store, config.fixed_master_address,
                report_interval=config.ha_send_heartbeat_interval / 1000,
                housekeeping_interval=config.ha_housekeeping_interval / 1000,
                reconnect_interval=min(5.0, config.ha_send_heartbeat_interval / 1000),
                clock=clock, wall_clock=wall_clock, tls=client_tls)

    # ------------------------------------------------------------------ lifecycle

    async def start(self, host: str | None = None) -> int:
        self.recovered_max = self.store.max_phy_offset
        self.port = await self._acceptor.start(host or self.config.bind_address, self.config.ha_listen_port)
        if self.client is not None:
            self.client.start()
        log.info("HA service listening on %d (role %s)", self.port, self.config.broker_role)
        return self.port

    async def shutdown(self) -> None:
        await self._acceptor.shutdown()
        for conn in list(self.connections):
            await conn.shutdown()
        if self.client is not None:
            await self.client.shutdown()
        self.group.shutdown()

    def update_master_address(self, ha_address: str | None) -> None:
        """Registration result: the master's HA address (ignored when haMasterAddress is fixed)."""
        if self.client is not None and self.config.fixed_master_address is None:
            self.client.update_master_address(ha_address)

    # ------------------------------------------------------------------ master side

    def _new_connection(self, link: SlaveLink) -> HAConnection | None:
        conn = HAConnection(
            self, self.store, link,
            file_size=self.config.mapped_file_size_commit_log,
            batch_size=self.config.ha_transfer_batch_size,
            heartbeat_interval=self.config.ha_send_heartbeat_interval / 1000,
            housekeeping_interval=self.config.ha_housekeeping_interval / 1000,
            clock=self._clock, vouched=self.vouched)
        self.connections.append(conn)
        self.peer_log.info("connected", "HA slave connected from %s", conn.addr)
        return conn

    def vouched(self) -> Vouched:
        """What this master can vouch for: a slave whose first report is past it holds bytes it never had."""
        streamed = max([self._streamed_max, *(c.streamed_to for c in self.connections)])
        return Vouched(self.recovered_max, streamed)

    def _count_slaves(self) -> None:
        self.progress.connection_count = sum(1 for c in self.connections if c.counted)

    def on_slave_ack(self, conn: HAConnection, offset: int) -> None:
        if not conn.counted:  # its first report: a slave from now on
            conn.counted = True
            self._count_slaves()
        self.group.notify_ack(offset)

    def on_connection_closed(self, conn: HAConnection) -> None:
        if conn in self.connections:
            self.connections.remove(conn)
        self._streamed_max = max(self._streamed_max, conn.streamed_to)
        self._count_slaves()
        if self.progress.connection_count == 0:
            self.group.no_slave_left()

    def wake_writers(self) -> None:
        """New commitlog data: writers send now instead of at their next 100 ms poll."""
        for conn in self.connections:
            conn.wake()

    def refuse_put(self) -> str | None:
        """Why a SYNC_MASTER put must be refused before it is written (classic HA: never)."""
        return None

    def when_replicated(self, end_offset: int, timeout_s: float, done: Callable[[PutMessageStatus], None]) -> None:
        """The store's ha_hook: calls ``done`` with the SYNC_MASTER put's status once a slave has ``end_offset``,
        the wait timed out or no slave can have it."""
        if not self.progress.is_slave_ok(end_offset):
            done(PutMessageStatus.SLAVE_NOT_AVAILABLE)
            return
        self.wake_writers()
        self.group.when_replicated(end_offset, timeout_s, done)

    def fall_behind(self) -> int:
        return self.progress.fall_behind(self.store.max_phy_offset)

    def master_slave_diff_line(self) -> str:
        """The master's periodic informational log line."""
        return f"Slave fall behind master: {self.fall_behind()} bytes"

    # ------------------------------------------------------------------ visibility

    def ha_runtime_info(self) -> dict[str, Any]:
        """HARuntimeInfo as GET_BROKER_HA_STATUS returns it (RocketMQ 5.x field names), with two of its own per
        connection (Apache's mqadmin ignores them): `lastReportAgeMs` (-1 before the first report) and
        `reportOverdue`, a slave silent past two heartbeat intervals, which is then not in sync: a slave that does
        not answer is not one a master can count on."""
        master_max = self.store.max_phy_offset
        gap = self.config.ha_slave_fallbehind_max
        overdue_after = 2 * self.config.ha_send_heartbeat_interval / 1000
        now = self._clock()
        conns = []
        for conn in self.connections:
            diff = master_max - max(conn.slave_ack_offset, 0)
            age = None if conn.last_report_at is None else now - conn.last_report_at
            overdue = age is not None and age > overdue_after
            conns.append({
                "addr": conn.addr, "slaveAckOffset": conn.slave_ack_offset, "diff": diff,
                "inSync": conn.slave_ack_offset >= 0 and diff < gap and not overdue,
                "transferredByteInSecond": conn.speed.rate(),
                "transferFromWhere": conn.cursor.next_from,
                "lastReportAgeMs": -1 if age is None else int(age * 1000), "reportOverdue": overdue,
            })
        info: dict[str, Any] = {
            "master": not self.config.is_slave,
            "masterCommitLogMaxOffset": master_max,
            "inSyncSlaveNums": sum(1 for c in conns if c["inSync"]),
            "haConnectionInfo": conns,
            "haClientRuntimeInfo": self._client_info(),
        }
        return info

    def _client_info(self) -> dict[str, Any]:
        """A slave's maxOffset is its own commitlog's, with or without a running client (Apache's too): a
        controller-mode slave being promoted has stopped its client and still holds what it replicated.
        `activated` only while its master's bytes arrive (HAClient.activated); `lastCloseReason` (its own field)
        says why the last connection ended ("" while none has)."""
        client = self.client
        if client is None:
            return {"masterAddr": None, "transferredByteInSecond": 0, "maxOffset": self.store.max_phy_offset,
                    "lastReadTimestamp": 0, "lastWriteTimestamp": 0, "masterFlushOffset": 0,
                    "activated": False, "lastCloseReason": ""}
        return {"masterAddr": client.master_address, "transferredByteInSecond": client.speed.rate(),
                "maxOffset": self.store.max_phy_offset, "lastReadTimestamp": client.last_read_ms,
                "lastWriteTimestamp": client.last_write_ms, "masterFlushOffset": 0,
                "activated": client.activated, "lastCloseReason": client.last_close_reason}

    def runtime_info(self) -> dict[str, str]:
        """Keys merged into GET_BROKER_RUNTIME_INFO, as RocketMQ's broker reports them."""
        info = {"haConnectionCount": str(len(self.connections))}
        if self.client is not None:
            info["masterAddr"] = self.client.master_address or ""
        else:
            info["slaveFallBehindMuch"] = str(self.fall_behind())
        return info
