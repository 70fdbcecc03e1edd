"""AutoSwitchHAService: HA in controller mode (RocketMQ 5's AutoSwitchHAService), where the role changes
at run time and a master keeps its group's SyncStateSet.

The controller says who is master. As master this service streams to its slaves with epochs
(autoswitch_connection.py) and decides which of them belong in the SyncStateSet: a member stays while it
is connected and caught up within haMaxTimeSlaveNotCatchup, a connected slave joins the moment its ack holds
all the set has and the current epoch's start. It only *proposes* a set (`desired_sync_state_set`); the broker's
ReplicasManager asks the controller, and acknowledgements follow the set the controller confirmed joined
with the one in flight, so no write is acknowledged on fewer replicas than the controller may elect from
(apache/rocketmq #9897 was the two disagreeing). With allAckInSyncStateSet a SYNC put waits for every
member; otherwise for inSyncReplicas copies in all. minInSyncReplicas refuses puts, before they are
written, while the set is smaller. The consume queues are built only up to that same point (the store's
dispatch limit, RocketMQ 5's readUnCommitted=false): a consumer never reads a message the group may still
lose, so a master cut off from its group exposes nothing it will later cut. As slave it runs an
AutoSwitchHAClient to the master's HA address.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from mqtools.common.brokerrole import BrokerRole
from mqtools.common.tls_certificates import TlsCertificateManager
from mqtools.server.ha.autoswitch_client import AutoSwitchHAClient, TruncatableSink
from mqtools.server.ha.autoswitch_connection import AutoSwitchHAConnection
from mqtools.server.ha.epoch_file import EpochEntry, EpochFileCache
from mqtools.server.ha.group_transfer import GroupTransferService, Replicated, ReplicationProgress
from mqtools.server.ha.master import HAConnection, SlaveLink
from mqtools.server.ha.service import HAConfig, HAService
from mqtools.server.store.results import PutMessageStatus

log = logging.getLogger("mq.ha")


class AutoSwitchHAService(HAService):
    """Controller-mode replication for one broker; starts as a slave with no master (fenced)."""

    autoswitch = True
    #: A wait that ends unacknowledged (timed out, or the last slave gone) is FLUSH_SLAVE_TIMEOUT.
    OUTCOMES: ClassVar[Mapping[Replicated, PutMessageStatus]] = MappingProxyType({
        **HAService.OUTCOMES, Replicated.NO_SLAVE: PutMessageStatus.FLUSH_SLAVE_TIMEOUT})

    def __init__(self, store: Any, config: HAConfig, epochs: EpochFileCache, *,
                 clock: Callable[[], float] = time.monotonic, wall_clock: Callable[[], float] = time.time,
                 tls: TlsCertificateManager | None = None, client_tls: ssl.SSLContext | None = None) -> None:
        config.broker_role = BrokerRole.SLAVE
        super().__init__(store, config, clock=clock, wall_clock=wall_clock, tls=tls, client_tls=client_tls)
        self._sink: TruncatableSink = store
        self._wall = wall_clock
        self._client_tls = client_tls
        self.epoch_cache = epochs
        #: This broker's id at the controller (None until it has one).
        self.local_broker_id: int | None = None
        self.sync_state_set: set[int] = set()
        self.sync_state_set_epoch = 0
        self._proposed: set[int] | None = None
        #: Called when the set this master wants may have changed (the ReplicasManager reconciles).
        self.on_sync_state_set_change: Callable[[], None] = lambda: None

    # ------------------------------------------------------------------ role

    @property
    def is_master(self) -> bool:
        return not self.config.is_slave

    @property
    def slave_client(self) -> AutoSwitchHAClient | None:
        """The HA client while this broker is a slave (kept in HAService.client, whose views read it)."""
        return self.client if isinstance(self.client, AutoSwitchHAClient) else None

    def epochs(self) -> list[EpochEntry]:
        return self.epoch_cache.entries()

    @property
    def last_epoch(self) -> int:
        return self.epoch_cache.last_epoch

    async def change_to_master(self, epoch: int, broker_id: int) -> None:
        """This broker leads `epoch`: its log from here on is that epoch's."""
        if epoch < self.epoch_cache.last_epoch:
            raise ValueError(f"master epoch {epoch} is older than the local epoch {self.epoch_cache.last_epoch}")
        self.local_broker_id = broker_id
        await self._stop_slave_client()
        await self._close_connections()
        torn = self.store.truncate_torn_tail()
        if torn:
            log.warning("HA: cut %d bytes of a torn last entry before leading epoch %d", torn, epoch)
        self.epoch_cache.truncate_from_epoch(epoch)
        self.epoch_cache.truncate_from_offset(self.store.max_phy_offset + 1)
        self.epoch_cache.append(epoch, self.store.max_phy_offset)
        self.group.shutdown()
        self.progress = ReplicationProgress(self.config.ha_slave_fallbehind_max)
        self.group = GroupTransferService(self.progress, self._clock, self.OUTCOMES)
        self._proposed = None
        self.config.broker_role = BrokerRole.SYNC_MASTER
        self.store.dispatch_limit = self.acked_offset
        self.store.dispatch_confirmed()
        log.info("HA: master of epoch %d from offset %d", epoch, self.store.max_phy_offset)

    async def change_to_slave(self, broker_id: int) -> None:
        """Replicate from the group's new master (its HA address comes with update_master_address)."""
        self.local_broker_id = broker_id
        self.config.broker_role = BrokerRole.SLAVE
        # replicated bytes are built into queues as they come; what only this broker wrote waits for the
        # handshake, which keeps or cuts it
        self.store.dispatch_limit = None
        self.group.shutdown()
        await self._close_connections()
        await self._stop_slave_client()
        self.sync_state_set, self._proposed = set(), None
        cfg = self.config
        client = self.client = AutoSwitchHAClient(
            self._sink, self.epoch_cache, broker_id, report_interval=cfg.ha_send_heartbeat_interval / 1000,
            housekeeping_interval=cfg.ha_housekeeping_interval / 1000,
            sync_from_last_file=cfg.sync_from_last_file, clock=self._clock, wall_clock=self._wall,
            tls=self._client_tls)
        client.start()

    def update_master_address(self, ha_address: str | None) -> None:
        if self.slave_client is not None and not self.is_master:
            self.slave_client.update_master_address(ha_address)

    async def _stop_slave_client(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            await client.shutdown()

    async def _close_connections(self) -> None:
        for conn in list(self.connections):
            await conn.shutdown()

    async def shutdown(self) -> None:
        await self._stop_slave_client()
        await super().shutdown()

    # ------------------------------------------------------------------ master side

    def _new_connection(self, link: SlaveLink) -> HAConnection | None:
        if not self.is_master:
            return None  # only the group's master serves replication
        cfg = self.config
        conn = AutoSwitchHAConnection(
            self, self.store, link, file_size=cfg.mapped_file_size_commit_log,
            batch_size=cfg.ha_transfer_batch_size, heartbeat_interval=cfg.ha_send_heartbeat_interval / 1000,
            housekeeping_interval=cfg.ha_housekeeping_interval / 1000, clock=self._clock)
        self.connections.append(conn)
        self.progress.connection_count = len(self.connections)
        self.peer_log.info("connected", "HA slave connected from %s", conn.addr)
        return conn

    def _acknowledge(self) -> None:
        """Release the puts the group now has, and let consumers see them."""
        self.group.notify_ack(self.acked_offset())
        if self.is_master:
            self.store.dispatch_confirmed()

    def on_slave_ack(self, conn: HAConnection, offset: int) -> None:
        if isinstance(conn, AutoSwitchHAConnection) and conn.slave_broker_id is not None \
                and conn.slave_broker_id not in self.effective_set() and self._eligible(conn) \
                and conn.slave_ack_offset >= self._set_confirm_offset():
            # Apache's maybeExpandInSyncStateSet: it joins the moment it holds all the set has, and acknowledgements
            # wait for it from then on, before the controller confirms; joining later on an older catch-up, it could
            # be elected without writes acknowledged meanwhile
            self._proposed = self.effective_set() | {conn.slave_broker_id}
            self.on_sync_state_set_change()
        self._acknowledge()

    def on_connection_closed(self, conn: HAConnection) -> None:
        if conn in self.connections:
            self.connections.remove(conn)
        self.progress.connection_count = len(self.connections)
        if isinstance(conn, AutoSwitchHAConnection) and conn.slave_broker_id in self.effective_set():
            self.on_sync_state_set_change()

    def _member_conns(self) -> dict[int, AutoSwitchHAConnection]:
        out: dict[int, AutoSwitchHAConnection] = {}
        for conn in self.connections:
            if isinstance(conn, AutoSwitchHAConnection) and conn.slave_broker_id is not None:
                known = out.get(conn.slave_broker_id)
                if known is None or conn.slave_ack_offset > known.slave_ack_offset:
                    out[conn.slave_broker_id] = conn
        return out

    def _eligible(self, conn: AutoSwitchHAConnection, now: float | None = None) -> bool:
        """Caught up within haMaxTimeSlaveNotCatchup and holding the current epoch's start."""
        now = self._clock() if now is None else now
        last = self.epoch_cache.last_entry
        return (not conn.async_learner and conn.caught_up_at is not None
                and now - conn.caught_up_at <= self.config.ha_max_time_slave_not_catchup / 1000
                and (last is None or conn.slave_ack_offset >= last.start_offset))

    # ------------------------------------------------------------------ SyncStateSet

    def effective_set(self) -> set[int]:
        """The confirmed set joined with the one in flight: what acknowledgements wait for."""
        return self.sync_state_set | (self._proposed or set())

    def desired_sync_state_set(self) -> set[int]:
        """The set this master would have now: itself, and each member (confirmed, or joined and in flight) still
        connected and eligible. A slave joins only in `on_slave_ack`, when it holds all the set has."""
        me = {self.local_broker_id} if self.local_broker_id is not None else set()
        now, members = self._clock(), self.effective_set()
        return me | {bid for bid, conn in self._member_conns().items() if bid in members and self._eligible(conn, now)}

    def _set_confirm_offset(self) -> int:
        """Apache's computeConfirmOffset: how far every connected member of the set has the log (all of it while
        this master is alone), so what a write acknowledged so far may have reached."""
        conns = self._member_conns()
        return min([self.store.max_phy_offset, *(conns[b].slave_ack_offset for b in self.effective_set()
                                                 if b in conns and b != self.local_broker_id)])

    def mark_proposed(self, ids: set[int]) -> None:
        self._proposed = set(ids)

    def clear_proposal(self) -> None:
        self._proposed = None
        self._acknowledge()

    def set_sync_state_set(self, ids: set[int], epoch: int) -> None:
        """The controller's answer (or its push): the set acknowledgements follow from now on."""
        if epoch < self.sync_state_set_epoch:
            return
        self.sync_state_set, self.sync_state_set_epoch, self._proposed = set(ids), epoch, None
        self._acknowledge()

    def acked_offset(self) -> int:
        """How far every replica a put must reach has the log."""
        top = self.store.max_phy_offset
        conns = self._member_conns()
        if self.config.all_ack_in_sync_state_set:
            acks = [conns[b].slave_ack_offset if b in conns else -1
                    for b in self.effective_set() if b != self.local_broker_id]
            return min([top, *acks])
        need = self.config.in_sync_replicas - 1
        if need <= 0:
            return top
        acks = sorted((c.slave_ack_offset for c in conns.values()), reverse=True)
        return min(top, acks[need - 1]) if len(acks) >= need else -1

    @property
    def confirm_offset(self) -> int:
        """The offset the group as a whole has (what a slave may show consumers)."""
        if not self.is_master:
            client = self.slave_client
            return min(client.master_confirm_offset, self.store.max_phy_offset) if client is not None else -1
        return max(self.acked_offset(), -1)

    def refuse_put(self) -> str | None:
        size = len(self.effective_set())
        if size < self.config.min_in_sync_replicas:
            return (f"in-sync replicas not enough: SyncStateSet has {size}, minInSyncReplicas is "
                    f"{self.config.min_in_sync_replicas}")
        return None

    def when_replicated(self, end_offset: int, timeout_s: float, done: Callable[[PutMessageStatus], None]) -> None:
        """As the classic service's, against the SyncStateSet's acks: a wait that ends unacknowledged (timed out,
        or the last slave gone) is FLUSH_SLAVE_TIMEOUT."""
        if not self.is_master:
            done(PutMessageStatus.SLAVE_NOT_AVAILABLE)
        elif self.acked_offset() >= end_offset:
            done(PutMessageStatus.PUT_OK)
        else:
            self.wake_writers()
            self.group.when_replicated(end_offset, timeout_s, done)

    # ------------------------------------------------------------------ visibility

    def ha_runtime_info(self) -> dict[str, Any]:
        info = super().ha_runtime_info()
        conns = self._member_conns()
        effective = self.effective_set()
        for row, conn in zip(info["haConnectionInfo"], self.connections, strict=True):
            if isinstance(conn, AutoSwitchHAConnection):
                row["slaveBrokerId"] = conn.slave_broker_id
                row["inSync"] = conn.slave_broker_id in effective and conns.get(conn.slave_broker_id) is conn
        info["inSyncSlaveNums"] = sum(1 for r in info["haConnectionInfo"] if r["inSync"])
        return info
