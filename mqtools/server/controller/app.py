"""The controller process (RocketMQ's ControllerManager): Raft, the remoting server, liveness and elections.

Brokers are watched two ways: a closed connection marks its brokers dead at once, and a scan drops those
whose heartbeats stopped (each broker's own heartbeat timeout). When the dead broker was its set's master,
the leader elects a new one at once (detection is the only wait), and a second scan re-elects for any set
whose master is gone while others live (a leader that took over after the death; a master it never heard
from counts as gone only once its table has listened for its set's heartbeat timeout, since the start or
the last drop for expiry). After an
election the members of the set that are alive get NOTIFY_BROKER_ROLE_CHANGED (oneway), so the new master
does not wait for its next poll. The controller also runs inside `mq namesrv`
(enableControllerInNamesrv=true).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Coroutine
from contextlib import suppress
from pathlib import Path
from typing import Any

from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.controller import (
    ElectMasterRequestHeader,
    NotifyBrokerRoleChangedRequestHeader,
    SyncStateSet,
)
from mqtools.remoting.errors import RemotingError
from mqtools.remoting.server import RemotingServer
from mqtools.remoting.transport import RemotingConnection
from mqtools.server.controller.config import ControllerConfig
from mqtools.server.controller.heartbeat import BrokerHeartbeatManager, BrokerLiveInfo
from mqtools.server.controller.processor import ControllerRequestProcessor
from mqtools.server.controller.raft import ControllerRaft
from mqtools.server.controller.replicas_info import ControllerResult
from mqtools.server.lifecycle import StartError, cancel_and_wait, listen, wall_clock_ms

#: How often a controller checks whether it has just become the Raft leader (then it looks for sets whose
#: master died while it followed).
LEADERSHIP_POLL_S = 0.1
#: The shortest wait between two heartbeat scans (ms): a broker due to time out now is looked at after this.
MIN_SCAN_WAIT_MS = 10

log = logging.getLogger(__name__)


class ControllerManager:
    def __init__(self, config: ControllerConfig, clock: Callable[[], int] = wall_clock_ms) -> None:
        self.config = config
        self.clock = clock
        self.heartbeats = BrokerHeartbeatManager(clock())
        self.server = RemotingServer(config.bind_address, config.address_port(), on_close=self._on_close)
        self.raft: ControllerRaft | None = None
        self.processor: ControllerRequestProcessor | None = None
        self._client = RemotingClient()
        self._tasks: list[asyncio.Task] = []
        self._background: set[asyncio.Task] = set()

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self) -> None:
        if log.level == logging.NOTSET:
            log.setLevel(logging.INFO)  # who went inactive and each election's outcome belong in its log
        lone = not self.config.controller_d_leger_peers.strip()
        ephemeral = lone and self.config.listen_port == 0 and not self.config.controller_raft_peers.strip()
        await listen(self.server, f"{self.config.bind_address}:{self.config.address_port()}")
        if lone:
            self.config.listen_port = self.server.port  # a lone controller on port 0 names the port it got
        raft_peers = self.config.raft_peers()
        me = raft_peers[self.config.self_id()]
        if ephemeral:  # its port + 1 is nobody's promise: another process may hold it, and Raft would never bind
            host = me.rpartition(":")[0]
            me = f"{host}:{_free_port(host)}"
            self.config.controller_raft_peers = f"{self.config.self_id()}-{me}"  # where metadata finds the leader
        others = [addr for pid, addr in raft_peers.items() if pid != self.config.self_id()]
        try:
            self.raft = ControllerRaft(me, others, Path(self.config.controller_store_path).expanduser(),
                                       self.config.controller_raft_password)
        except OSError as exc:
            raise StartError(f"cannot start the controller's Raft on {me}: {exc}") from None
        self.processor = ControllerRequestProcessor(self.config, self.raft, self.heartbeats, self.clock,
                                                    self._notify)
        self.processor.register(self.server)
        self._tasks = [asyncio.create_task(self._scan_not_active(), name="scan-not-active-broker"),
                       asyncio.create_task(self._scan_inactive_masters(), name="scan-inactive-master")]

    async def shutdown(self) -> None:
        await cancel_and_wait(*self._tasks, *self._background)
        await self.server.shutdown()
        await self._client.close()
        if self.raft is not None:
            self.raft.destroy()

    # ------------------------------------------------------------------ liveness

    def _on_close(self, conn: RemotingConnection) -> None:
        self._inactive(self.heartbeats.on_channel_close(conn), "its connection closed", self.clock())

    async def _scan_not_active(self) -> None:
        """Scan every scanNotActiveBrokerInterval, and at the moment the first tracked broker would time out: a
        silent master is found at its heartbeat timeout, not up to an interval later."""
        period = self.config.scan_not_active_broker_interval
        while True:
            due = self.heartbeats.next_expiry()
            wait = period if due is None else min(period, max(due - self.clock(), MIN_SCAN_WAIT_MS))
            await asyncio.sleep(wait / 1000)
            gone = self.heartbeats.scan(self.clock())
            for info in gone:
                info.channel.close()
            self._inactive(gone, "its heartbeats stopped")

    def _inactive(self, gone: list[BrokerLiveInfo], why: str, closed_at: int | None = None) -> None:
        """`closed_at`: its connection closed then; else it was last seen at its last heartbeat."""
        for info in gone:
            log.info("broker %s/%s (%s) is inactive: %s", info.broker_name, info.broker_id, info.broker_addr, why)
            if self.raft is None or not self.raft.is_leader():
                continue
            with self.raft.lock:
                bset = self.raft.manager.sets.get(info.broker_name)
                was_master = bset is not None and bset.master_broker_id == info.broker_id
            if was_master:
                self._spawn(self.elect(info.broker_name, closed_at if closed_at is not None else info.last_update))

    async def _scan_inactive_masters(self) -> None:
        """Elect for sets whose master is gone while others live: at once when this controller becomes the
        leader (while it followed, its own scan may already have dropped the dead master, so no heartbeat
        timeout will report it again), then every scanInactiveMasterInterval (a failed election). Brokers
        heartbeat every controller, so a follower's table is as good as a leader's: the grace for masters not
        heard from (BrokerHeartbeatManager.master_gone) counts from the start or from the table's last drop for
        expiry, not from the lead, so a leader that has just resumed from a hang (and dropped every broker) waits
        for the masters' next heartbeats. Apache's leader waits scanInactiveMasterInterval before its first scan
        instead; mq's elects at once, which is what keeps a master and leader killed together to about 1.4 s."""
        leading, last = False, 0.0
        while True:
            await asyncio.sleep(LEADERSHIP_POLL_S)
            if self.raft is None or self.processor is None or not self.raft.is_leader():
                leading = False
                continue
            now_s = asyncio.get_running_loop().time()
            if leading and now_s - last < self.config.scan_inactive_master_interval / 1000:
                continue
            leading, last = True, now_s
            now = self.clock()
            with self.raft.lock:
                orphaned = [b.broker_name for b in self.raft.manager.sets.values() if b.master_broker_id is not None
                            and self.heartbeats.master_gone(b.cluster_name, b.broker_name, b.master_broker_id, now)]
            for name in orphaned:
                await self.elect(name)

    async def elect(self, broker_name: str, down_since_ms: int | None = None) -> int | None:
        """The controller's own election for a set whose master died; the last try's response code. Tried
        up to electMasterMaxRetryCount times, but again only when it was not committed (NOT_LEADER while this
        controller still leads: the replication failed): any other answer is final until the next scan, and
        a MASTER_NOT_AVAILABLE tried again committed another election without a master each time."""
        assert self.processor is not None and self.raft is not None
        header = ElectMasterRequestHeader("", broker_name, -1, False, self.clock())
        request = RemotingCommand.request(RequestCode.CONTROLLER_ELECT_MASTER, header.to_ext())
        response = None
        for _ in range(max(1, self.config.elect_master_max_retry_count)):
            response = await self.processor.elect_master(None, request, down_since_ms)
            if response.code != ResponseCode.CONTROLLER_NOT_LEADER or not self.raft.is_leader():
                break
        if response is None:
            return None
        log.info("election for %s: %s%s", broker_name, ResponseCode(response.code).name,
                 f" ({response.remark})" if response.remark else "")
        return response.code

    # ------------------------------------------------------------------ notifications

    def _notify(self, broker_name: str, _result: ControllerResult) -> None:
        """NOTIFY_BROKER_ROLE_CHANGED to the set's live members, with the state the election committed."""
        if not self.config.notify_broker_role_changed or self.raft is None or self.processor is None:
            return
        with self.raft.lock:
            bset = self.raft.manager.sets.get(broker_name)
            if bset is None:
                return
            targets = [addr for bid, addr in bset.addresses().items()
                       if self.processor.live(bset.cluster_name, broker_name, bid) is not None]
            ext = NotifyBrokerRoleChangedRequestHeader(bset.address(bset.master_broker_id), bset.master_epoch,
                                                       bset.sync_state_set_epoch, bset.master_broker_id).to_ext()
            body = SyncStateSet(set(bset.sync_state_set), bset.sync_state_set_epoch).to_json()
        for addr in targets:
            self._spawn(self._send_oneway(addr, RemotingCommand.request(
                RequestCode.NOTIFY_BROKER_ROLE_CHANGED, dict(ext), body, oneway=True)))

    async def _send_oneway(self, addr: str, request: RemotingCommand) -> None:
        with suppress(RemotingError, OSError, asyncio.TimeoutError):
            await asyncio.wait_for(self._client.invoke_oneway(addr, request), 3.0)

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _free_port(host: str) -> int:
    """A port the OS says is free on `host` now (for a lone controller's Raft, which binds it itself)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])
