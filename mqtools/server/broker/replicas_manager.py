"""ReplicasManager: a controller-mode broker's side of the controller (RocketMQ 5's ReplicasManager).

Start-up (retried every second; after FIRST_ROLE_WAIT_S in the background, the broker serving fenced): find the controller leader (GET_METADATA_INFO; any controller tells), get an id for this broker
(brokerIdentity files, broker_metadata.py: GET_NEXT_BROKER_ID, then APPLY_BROKER_ID), register
(REGISTER_BROKER), heartbeat once, and if the set has no master ask for an election. The broker is
fenced (a slave with no master: it takes no writes and does not register at the name servers) until
the controller has said what it is. Then, for as long as it runs: heartbeats to every controller each
brokerHeartbeatInterval, the leader looked up again each syncControllerMetadataPeriod, the replica info
polled each syncBrokerMetadataPeriod (pushes come as NOTIFY_BROKER_ROLE_CHANGED), and as master the
SyncStateSet reconciled with the controller (ALTER_SYNC_STATE_SET) whenever the HA service wants another
one, and each checkSyncStateSetPeriod. Role changes only move forward in master epoch.

Differences from Apache's: start-up is retried every second, not five; a new slave asks the name
servers for its master's HA address until they name the master the controller named, instead of waiting
for its next registration period (30 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from mqtools.common.log_limiter import LimitedLog
from mqtools.common.loop import wait_event
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.controller import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    BrokerHeartbeatRequestHeader,
    ElectMasterRequestHeader,
    ElectMasterResponseBody,
    ElectMasterResponseHeader,
    EpochEntry,
    EpochEntryCache,
    GetMetaDataResponseHeader,
    GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader,
    GetReplicaInfoRequestHeader,
    GetReplicaInfoResponseHeader,
    NotifyBrokerRoleChangedRequestHeader,
    RegisterBrokerToControllerRequestHeader,
    RegisterBrokerToControllerResponseHeader,
    SyncStateSet,
)
from mqtools.remoting.errors import RemotingError
from mqtools.remoting.transport import RemotingConnection
from mqtools.server.broker import broker_metadata
from mqtools.server.broker.broker_metadata import BrokerMetadata
from mqtools.server.broker.context import BrokerContext
from mqtools.server.broker.ha_duties import HADuties
from mqtools.server.ha.autoswitch_service import AutoSwitchHAService
from mqtools.server.lifecycle import StartError, cancel_and_wait

log = logging.getLogger("mq.broker.replicas")

CALL_TIMEOUT_S = 3.0
#: How long `mq broker start` waits for a role before it serves fenced (and goes on trying).
FIRST_ROLE_WAIT_S = 5.0
START_RETRY_S = 1.0
#: How often a new slave asks the name servers for its master's HA address until they know it.
MASTER_LOOKUP_INTERVAL_S = 0.3


class ControllerCallError(Exception):
    """A controller answered with an error code, or did not answer."""

    def __init__(self, code: int | None, remark: str) -> None:
        super().__init__(f"{remark} (code {code})" if code is not None else remark)
        self.code = code


class HeartbeatPace:
    """The gaps between a broker's controller heartbeats (sans-IO, the clock passed in). A controller drops a broker
    it has not heard from for the timeout, so a gap of the period plus a third of the timeout says a master is close
    to being replaced by an election it did not need."""

    def __init__(self, interval_ms: int, timeout_ms: int) -> None:
        self.limit_ms = interval_ms + timeout_ms / 3
        self._last: float | None = None

    def beat(self, now_s: float) -> float | None:
        """A heartbeat goes out now: the gap since the last one (ms) when it was that long, else None."""
        last, self._last = self._last, now_s
        gap = None if last is None else (now_s - last) * 1000
        return gap if gap is not None and gap > self.limit_ms else None


class ReplicasManager:
    """One controller-mode broker's registration, role and SyncStateSet at the controllers."""

    def __init__(self, broker: BrokerContext, duties: HADuties) -> None:
        assert isinstance(duties.service, AutoSwitchHAService)
        self.b = broker
        self.duties = duties
        self.ha: AutoSwitchHAService = duties.service
        cfg = broker.config
        self.controllers = cfg.controller_addrs()
        self.leader: str | None = None
        self.broker_controller_id: int | None = None
        self.master_broker_id: int | None = None
        self.master_address: str | None = None
        self.master_epoch = 0
        self.meta_path = broker_metadata.metadata_path(Path(cfg.store_path_root_dir), cfg.store_path_broker_identity)
        self._role_lock = asyncio.Lock()
        self._alter_wake = asyncio.Event()
        #: An ALTER_SYNC_STATE_SET went unanswered or was refused: the controller's set is read before the next.
        self._alter_unsure = False
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._lookup: asyncio.Task[None] | None = None
        self._on_first_role: Callable[[], Awaitable[None]] | None = None
        self._log = LimitedLog(log, time.monotonic)
        self._pace = HeartbeatPace(cfg.broker_heartbeat_interval, cfg.controller_heart_beat_timeout_mills)
        self.ha.on_sync_state_set_change = self._alter_wake.set

    # ------------------------------------------------------------------ lifecycle

    async def start(self, first_wait_s: float, on_first_role: Callable[[], Awaitable[None]]) -> None:
        """Serve 1007/1008 and try start-up for up to `first_wait_s`; if the controllers have given no role
        by then (no leader yet, or a set whose electable replica is still down), the broker serves fenced
        and the attempts go on every second in the background, as Apache's broker does. `on_first_role`
        runs once the broker has a role (it registers with the name servers then)."""
        self.b.server.register(RequestCode.NOTIFY_BROKER_ROLE_CHANGED, self._on_notify)
        self.b.server.register(RequestCode.GET_BROKER_EPOCH_CACHE, self._epoch_cache)
        self._on_first_role = on_first_role
        loop = asyncio.get_running_loop()
        deadline = loop.time() + first_wait_s
        while not await self._start_attempt():
            if loop.time() >= deadline:
                log.warning("no role from the controllers %s yet: serving fenced (no writes, not registered) "
                            "and trying every %.0f s", ";".join(self.controllers), START_RETRY_S)
                self._tasks = [asyncio.create_task(self._start_in_background(), name="controller-start")]
                return
            await asyncio.sleep(START_RETRY_S)
        self._start_duties()

    async def _start_in_background(self) -> None:
        while not await self._start_attempt():
            await asyncio.sleep(START_RETRY_S)
        self._start_duties()

    async def _start_attempt(self) -> bool:
        try:
            if await self._start_basic():
                return True
            self._log.warning("start", "controller start-up: no master elected for %s yet", self.b.config.broker_name)
        except (ControllerCallError, RemotingError, OSError, TimeoutError) as exc:
            self._log.warning("start", "controller start-up step failed: %s", exc)
        return False

    def _start_duties(self) -> None:
        cfg = self.b.config
        self._tasks += [
            asyncio.create_task(self._every(cfg.broker_heartbeat_interval, self._heartbeat), name="controller-hb"),
            asyncio.create_task(self._every(cfg.sync_controller_metadata_period, self._find_leader),
                                name="controller-meta"),
            asyncio.create_task(self._every(cfg.sync_broker_metadata_period, self._poll_replica_info),
                                name="controller-replicas"),
            asyncio.create_task(self._sync_state_set_loop(), name="controller-sss"),
        ]

    async def shutdown(self) -> None:
        await cancel_and_wait(*self._tasks, self._lookup, *self._background)
        self._tasks = []

    async def _every(self, period_ms: int, step: Any) -> None:
        while True:
            await asyncio.sleep(period_ms / 1000)
            try:
                await step()
            except (ControllerCallError, RemotingError, OSError, TimeoutError) as exc:
                self._log.warning(step.__name__, "%s failed: %s", step.__name__.strip("_"), exc)
            except Exception:  # a periodic duty must outlive one bad round
                log.exception("%s failed", step.__name__)

    async def _start_basic(self) -> bool:
        await self._find_leader()
        await self._register()
        await self._heartbeat()
        if self.master_broker_id is None:
            return await self._elect()
        return True

    # ------------------------------------------------------------------ calls

    async def _call(self, code: int, header: Any = None, body: bytes | None = None,
                    addr: str | None = None, ok: tuple[int, ...] = (ResponseCode.SUCCESS,)) -> RemotingCommand:
        if addr is None and self.leader is None:
            await self._find_leader()
        target = addr or self.leader
        assert target is not None
        req = RemotingCommand.request(code, header.to_ext() if header is not None else None, body)
        try:
            resp = await self.b.client.invoke(target, req, CALL_TIMEOUT_S)
        except (RemotingError, OSError, TimeoutError):
            if addr is None:
                self.leader = None  # dead or cut off: the next call looks for the leader again
            raise
        if resp.code not in ok:
            if addr is None and resp.code == ResponseCode.CONTROLLER_NOT_LEADER:
                self.leader = None
            raise ControllerCallError(resp.code, resp.remark or f"request {code} refused by {target}")
        return resp

    async def _find_leader(self) -> None:
        """Ask every controller at once; the first that names a leader decides (a controller that cannot be
        reached costs no one else its timeout)."""
        errors: list[str] = []

        async def ask(addr: str) -> str:
            try:
                resp = await self._call(RequestCode.CONTROLLER_GET_METADATA_INFO, addr=addr)
            except (ControllerCallError, RemotingError, OSError, TimeoutError) as exc:
                errors.append(f"{addr}: {exc}")
                raise
            leader = GetMetaDataResponseHeader.from_ext(resp.ext_fields).controller_leader_address
            if not leader:
                errors.append(f"{addr}: no leader")
                raise ControllerCallError(None, "no leader")
            return leader

        pending = {asyncio.ensure_future(ask(addr)) for addr in self.controllers}
        try:
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if task.exception() is None:
                        leader = task.result()
                        if leader != self.leader:
                            log.info("controller leader: %s", leader)
                        self.leader = leader
                        return
        finally:
            for task in pending:
                task.cancel()
        raise ControllerCallError(None, "no controller leader (" + "; ".join(errors) + ")")

    # ------------------------------------------------------------------ id and registration

    async def _register(self) -> None:
        cfg = self.b.config
        meta = broker_metadata.read(self.meta_path)
        if meta is None:
            meta = await self._apply_for_id()
        if (meta.cluster_name, meta.broker_name) != (cfg.broker_cluster_name, cfg.broker_name):
            raise StartError(f"{self.meta_path} is for {meta.cluster_name}/{meta.broker_name}, this broker is "
                             f"{cfg.broker_cluster_name}/{cfg.broker_name}")
        self.broker_controller_id = meta.broker_id
        self.ha.local_broker_id = meta.broker_id
        header = RegisterBrokerToControllerRequestHeader(cfg.broker_cluster_name, cfg.broker_name, meta.broker_id,
                                                         self.b.broker_addr, int(time.time() * 1000))
        resp = await self._call(RequestCode.CONTROLLER_REGISTER_BROKER, header)
        h = RegisterBrokerToControllerResponseHeader.from_ext(resp.ext_fields)
        sss = SyncStateSet.from_json(resp.body) if resp.body else SyncStateSet()
        if h.master_broker_id is not None and h.master_epoch is not None:
            await self.change_role(h.master_broker_id, h.master_address, h.master_epoch,
                                   h.sync_state_set_epoch or 0, sss.sync_state_set)

    async def _apply_for_id(self) -> BrokerMetadata:
        """The two-step id application; a temp file left by a broker that died half-way is reused."""
        cfg = self.b.config
        temp_path = broker_metadata.temp_path(self.meta_path)
        temp = broker_metadata.read(temp_path, temp=True)
        if temp is None or (temp.cluster_name, temp.broker_name) != (cfg.broker_cluster_name, cfg.broker_name):
            resp = await self._call(RequestCode.CONTROLLER_GET_NEXT_BROKER_ID,
                                    GetNextBrokerIdRequestHeader(cfg.broker_cluster_name, cfg.broker_name))
            next_id = GetNextBrokerIdResponseHeader.from_ext(resp.ext_fields).next_broker_id
            if next_id is None:
                raise ControllerCallError(None, "GET_NEXT_BROKER_ID answered no id")
            temp = BrokerMetadata(cfg.broker_cluster_name, cfg.broker_name, next_id,
                                  f"{self.b.broker_addr};{int(time.time() * 1000)}")
            await asyncio.to_thread(broker_metadata.write, temp_path, temp)
        try:
            await self._call(RequestCode.CONTROLLER_APPLY_BROKER_ID, ApplyBrokerIdRequestHeader(
                temp.cluster_name, temp.broker_name, temp.broker_id, temp.register_check_code))
        except ControllerCallError:
            broker_metadata.remove(temp_path)  # taken meanwhile: the next attempt asks for another id
            raise
        meta = BrokerMetadata(temp.cluster_name, temp.broker_name, temp.broker_id)
        await asyncio.to_thread(broker_metadata.write, self.meta_path, meta)
        broker_metadata.remove(temp_path)
        log.info("controller id %d applied for and granted", meta.broker_id)
        return meta

    async def _heartbeat(self) -> None:
        if self.broker_controller_id is None:
            return
        cfg = self.b.config
        late = self._pace.beat(time.monotonic())
        if late is not None:
            log.warning("controller heartbeats %d ms apart (every %d ms, timeout %d ms): the event loop was held up",
                        late, cfg.broker_heartbeat_interval, cfg.controller_heart_beat_timeout_mills)
        header = BrokerHeartbeatRequestHeader(
            cfg.broker_cluster_name, self.b.broker_addr, cfg.broker_name, self.broker_controller_id,
            self.ha.last_epoch, self.b.store.max_phy_offset, self.ha.confirm_offset,
            cfg.controller_heart_beat_timeout_mills, cfg.broker_election_priority).to_ext()
        await asyncio.gather(*(self._heartbeat_to(addr, header) for addr in self.controllers))

    async def _heartbeat_to(self, addr: str, header: dict[str, str]) -> None:
        """One controller's heartbeat; one that cannot be reached delays no other's."""
        req = RemotingCommand.request(RequestCode.BROKER_HEARTBEAT, dict(header), oneway=True)
        with contextlib.suppress(RemotingError, OSError, TimeoutError):
            await asyncio.wait_for(self.b.client.invoke_oneway(addr, req), self.b.config.broker_heartbeat_interval / 1000)

    async def _elect(self) -> bool:
        cfg = self.b.config
        assert self.broker_controller_id is not None
        resp = await self._call(
            RequestCode.CONTROLLER_ELECT_MASTER,
            ElectMasterRequestHeader(cfg.broker_cluster_name, cfg.broker_name, self.broker_controller_id, False,
                                     int(time.time() * 1000)),
            ok=(ResponseCode.SUCCESS, ResponseCode.CONTROLLER_MASTER_STILL_EXIST))
        h = ElectMasterResponseHeader.from_ext(resp.ext_fields)
        if h.master_broker_id is None or not h.master_address or h.master_epoch is None:
            return False
        body = ElectMasterResponseBody.from_json(resp.body) if resp.body else ElectMasterResponseBody()
        await self.change_role(h.master_broker_id, h.master_address, h.master_epoch, h.sync_state_set_epoch or 0,
                               body.sync_state_set)
        return True

    async def _poll_replica_info(self) -> None:
        cfg = self.b.config
        try:
            resp = await self._call(RequestCode.CONTROLLER_GET_REPLICA_INFO,
                                    GetReplicaInfoRequestHeader(cfg.broker_name))
        except ControllerCallError as exc:
            if exc.code == ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST:
                await self._register()
                return
            raise
        h = GetReplicaInfoResponseHeader.from_ext(resp.ext_fields)
        sss = SyncStateSet.from_json(resp.body) if resp.body else SyncStateSet()
        epoch = h.master_epoch or 0
        if epoch > self.master_epoch:
            if h.master_broker_id is not None:
                await self.change_role(h.master_broker_id, h.master_address, epoch, sss.sync_state_set_epoch,
                                       sss.sync_state_set)
            else:
                await self._elect()
        elif epoch == self.master_epoch and self.ha.is_master and sss.sync_state_set_epoch > self.ha.sync_state_set_epoch:
            # only a newer set (Apache's changeSyncStateSet): the set this master already has, read while its ALTER
            # is in flight, would drop the proposal and let puts waiting on the joining slave go on the old set's acks
            self.ha.set_sync_state_set(sss.sync_state_set, sss.sync_state_set_epoch)

    # ------------------------------------------------------------------ roles

    async def change_role(self, master_id: int, master_addr: str | None, epoch: int, sss_epoch: int,
                          sss: set[int]) -> None:
        """What the controller said, applied once per master epoch, in order."""
        async with self._role_lock:
            if epoch <= self.master_epoch:
                return
            me = self.broker_controller_id
            if master_id == me:
                await self._to_master(epoch, sss_epoch, sss)
            elif master_addr:
                await self._to_slave(master_id, master_addr, epoch)

    async def _to_master(self, epoch: int, sss_epoch: int, sss: set[int]) -> None:
        assert self.broker_controller_id is not None
        was_master = self.ha.is_master
        self.master_epoch = epoch
        await self.duties.become_master(epoch, self.broker_controller_id, sss, sss_epoch, already=was_master)
        self.master_broker_id, self.master_address = self.broker_controller_id, self.b.broker_addr
        self.b.master_addr = self.b.broker_addr
        log.info("master of %s, epoch %d, SyncStateSet %s", self.b.config.broker_name, epoch, sorted(sss))
        await self._first_role()
        self._alter_wake.set()

    async def _to_slave(self, master_id: int, master_addr: str, epoch: int) -> None:
        assert self.broker_controller_id is not None
        self.master_epoch = epoch
        same_master = master_id == self.master_broker_id and not self.ha.is_master and \
            self.ha.slave_client is not None
        self.master_broker_id, self.master_address = master_id, master_addr
        self.b.master_addr = master_addr
        if not same_master:
            await self.duties.become_slave(self.broker_controller_id, master_addr)
        log.info("slave of %s (id %d), epoch %d", master_addr, master_id, epoch)
        await self._first_role()
        await cancel_and_wait(self._lookup)
        self._lookup = asyncio.create_task(self._find_master_ha(master_addr), name="master-ha-lookup")

    async def _first_role(self) -> None:
        hook, self._on_first_role = self._on_first_role, None
        if hook is not None:
            await hook()

    async def _find_master_ha(self, master_addr: str) -> None:
        """Register until a name server names `master_addr` as the master, which gives its HA address."""
        while True:
            for result in await self.b.registrar.kick_and_wait():
                if result.ok and result.master_addr == master_addr and result.ha_server_addr:
                    self.duties.service.update_master_address(result.ha_server_addr)
                    return
            await asyncio.sleep(MASTER_LOOKUP_INTERVAL_S)

    def _on_notify(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand | None:
        """NOTIFY_BROKER_ROLE_CHANGED: the controller's push after an election."""
        h = NotifyBrokerRoleChangedRequestHeader.from_ext(req.ext_fields)
        sss = SyncStateSet.from_json(req.body) if req.body else SyncStateSet()
        if h.master_broker_id is not None and h.master_epoch is not None:
            self._spawn(self.change_role(h.master_broker_id, h.master_address, h.master_epoch,
                                         h.sync_state_set_epoch or 0, sss.sync_state_set))
        return None if req.is_oneway else req.response()

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ------------------------------------------------------------------ SyncStateSet

    async def _sync_state_set_loop(self) -> None:
        period = self.b.config.check_sync_state_set_period / 1000
        while True:
            await wait_event(self._alter_wake, period)
            self._alter_wake.clear()
            try:
                await self._reconcile_sync_state_set()
            except (ControllerCallError, RemotingError, OSError, TimeoutError) as exc:
                self._log.warning("alter", "ALTER_SYNC_STATE_SET failed: %s", exc)
                await asyncio.sleep(START_RETRY_S)
                self._alter_wake.set()  # try again: waiting puts follow the set in flight meanwhile
            except Exception:
                log.exception("SyncStateSet reconcile failed")

    async def _reconcile_sync_state_set(self) -> None:
        """Propose the set the master wants. An ALTER whose outcome is not known (no answer, or a refusal such as
        "equal with oldSyncStateSet": the controller may have applied it and the answer got lost) keeps the set
        in flight, so acknowledgements still wait for every replica of both, until the controller's set is read
        again; dropping it, a put acknowledged by fewer replicas than the controller holds could be lost to an
        election (Apache keeps its synchronizing set until a change succeeds)."""
        ha = self.ha
        if not ha.is_master:
            return
        if self._alter_unsure:
            await self._poll_replica_info()  # the controller's set first: it may hold what was proposed
            self._alter_unsure = False
        desired = ha.desired_sync_state_set()
        if desired == ha.sync_state_set:
            ha.clear_proposal()  # nothing in flight differs from what the controller holds
            return
        ha.mark_proposed(desired)
        try:
            resp = await self._call(
                RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET,
                AlterSyncStateSetRequestHeader(self.b.config.broker_name, self.broker_controller_id,
                                               self.master_epoch, int(time.time() * 1000)),
                SyncStateSet(desired, ha.sync_state_set_epoch).to_json())
        except BaseException:
            self._alter_unsure = True
            raise
        body = SyncStateSet.from_json(resp.body) if resp.body else None
        if body is None:
            self._alter_unsure = True
            return
        ha.set_sync_state_set(body.sync_state_set, body.sync_state_set_epoch)
        log.info("SyncStateSet of %s is now %s (epoch %d)", self.b.config.broker_name,
                 sorted(body.sync_state_set), body.sync_state_set_epoch)

    # ------------------------------------------------------------------ admin

    def _epoch_cache(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """GET_BROKER_EPOCH_CACHE (1007): this broker's epoch entries and max offset."""
        cfg = self.b.config
        entries = [EpochEntry(e.epoch, e.start_offset, e.end_offset) for e in self.ha.epochs()]
        body = EpochEntryCache(cfg.broker_cluster_name, cfg.broker_name, self.broker_controller_id or 0, entries,
                               self.b.store.max_phy_offset)
        return req.response(body=body.to_json())
