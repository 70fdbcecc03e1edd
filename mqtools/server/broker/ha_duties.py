"""The broker's side of HA (what RocketMQ's BrokerController does around its HAService).

mqtools/server/ha replicates the commitlog and knows nothing of brokers. Around it the broker:
builds the HAService from its properties, opens the HA port before it registers (the
registration advertises that port), makes the service the store's `ha_hook` (SYNC_MASTER
puts wait on it), answers GET_BROKER_HA_STATUS, hands a SLAVE its master's HA address from
each registration result, copies the master's metadata on a SLAVE (SlaveSynchronize) and
logs the "slave fall behind" line every minute on a master.
"""

from __future__ import annotations

import asyncio
import json
import logging

from mqtools.common.brokerrole import MASTER_ID, BrokerRole
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.transport import RemotingConnection
from mqtools.server.broker.context import BrokerContext
from mqtools.server.broker.registration import RegisterResult
from mqtools.server.broker.slave_sync import SlaveSynchronize
from mqtools.server.ha.autoswitch_service import AutoSwitchHAService
from mqtools.server.ha.epoch_file import EpochFileCache
from mqtools.server.ha.service import HAService
from mqtools.server.lifecycle import cancel_and_wait

log = logging.getLogger("mq.ha")

DIFF_LOG_FIRST_DELAY = 10.0
DIFF_LOG_PERIOD = 60.0


class HADuties:
    """One broker's HAService plus the broker-level work around it."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker
        cfg = broker.config
        ha_config = cfg.ha_config(broker.store.config)
        tls, client_tls = broker.tls, cfg.tls_client().context()
        self.service: HAService
        if cfg.enable_controller_mode:
            epochs = EpochFileCache.load(broker.store.config.root)
            self.service = AutoSwitchHAService(broker.store, ha_config, epochs, tls=tls, client_tls=client_tls)
        else:
            self.service = HAService(broker.store, ha_config, tls=tls, client_tls=client_tls)
        self.slave_sync: SlaveSynchronize | None = None
        self._diff_task: asyncio.Task[None] | None = None
        #: Controller mode: the master the controller named; only a registration naming it gives a slave
        #: its HA address (a name server may still list the dead one).
        self._expected_master: str | None = None

    async def start(self) -> None:
        """Open the HA port (OSError when it is taken), hook the store and the server, start the
        role's loop."""
        if log.level == logging.NOTSET:
            log.setLevel(logging.INFO)  # connections, resyncs and the diff line belong in a broker's log
        await self.service.start()
        self.broker.store.ha_hook = self.service
        self.broker.server.register(RequestCode.GET_BROKER_HA_STATUS, self.get_ha_status)
        if self.broker.config.enable_controller_mode:
            return  # fenced: the ReplicasManager gives the role
        if self.service.config.is_slave:
            self._start_slave_sync()
        else:
            self._diff_task = asyncio.create_task(self._diff_log_loop(), name="ha-diff-log")

    def _start_slave_sync(self) -> None:
        self.slave_sync = SlaveSynchronize(self.broker)
        self.slave_sync.start()

    async def _stop_role_duties(self) -> None:
        sync, self.slave_sync = self.slave_sync, None
        if sync is not None:
            await sync.shutdown()
        await cancel_and_wait(self._diff_task)
        self._diff_task = None

    async def shutdown(self) -> None:
        await self._stop_role_duties()
        await self.service.shutdown()

    # ------------------------------------------------------------------ controller mode's role changes

    def _set_role(self, role: BrokerRole, broker_id: int) -> None:
        b = self.broker
        b.config.broker_role = role
        b.store.config.broker_role = role
        b.config.broker_id = broker_id

    async def become_master(self, epoch: int, controller_id: int, sync_state_set: set[int], sss_epoch: int, *,
                            already: bool) -> None:
        """The controller made this broker its set's master in `epoch`: the HA service leads the epoch with the
        controller's SyncStateSet, the broker takes writes as brokerId 0 and registers at once so clients and
        slaves find it, then runs the master's services (delayed delivery, transaction checks, timer delivery,
        whose recount of the wheel must not hold back the registration)."""
        service = self.service
        assert isinstance(service, AutoSwitchHAService)
        b = self.broker
        await service.change_to_master(epoch, controller_id)
        service.set_sync_state_set(sync_state_set, sss_epoch)
        if not already:
            await self._stop_role_duties()
            self._expected_master = None
            self._set_role(BrokerRole.SYNC_MASTER, MASTER_ID)
        # the name servers keep an id's address only for the highest state version: a master cut off and
        # back, still registering as brokerId 0 until it learns it was replaced, is refused (Apache does
        # the same with the master epoch)
        b.topics.data_version = b.topics.data_version.next(int(b.clock() * 1000), epoch)
        b.registrar.kick()
        if not already:
            await b.schedule.start()
            await b.transaction_check.start()
            timer = b.timer  # timer messages (RIP-43): masters deliver them, from where the last master got
            if timer is not None and timer.running:
                await timer.set_master(True)
            elif timer is not None:
                await timer.start()
            self._diff_task = asyncio.create_task(self._diff_log_loop(), name="ha-diff-log")

    async def become_slave(self, controller_id: int, master_addr: str) -> None:
        """Another broker is master: stop the master's services, replicate from it, copy its metadata."""
        service = self.service
        assert isinstance(service, AutoSwitchHAService)
        b = self.broker
        was_master = service.is_master
        await service.change_to_slave(controller_id)
        self._expected_master = master_addr
        await self._stop_role_duties()
        if was_master:
            await b.schedule.shutdown()
            await b.transaction_check.shutdown()
            timer = b.timer  # timer messages (RIP-43): read again from its files, as a slave
            if timer is not None:
                await timer.shutdown()
                await timer.start(dequeue=False)
        self._set_role(BrokerRole.SLAVE, controller_id)
        self._start_slave_sync()
        b.registrar.kick()

    def on_register_result(self, result: RegisterResult) -> None:
        """A name server answered a registration: a slave learns its master's HA address, and syncs its
        metadata from a master it has not synced from yet."""
        if result.ok and (not self.broker.config.enable_controller_mode
                          or result.master_addr == self._expected_master):
            self.service.update_master_address(result.ha_server_addr)
            if self.slave_sync is not None:
                self.slave_sync.master_named(result.master_addr)

    async def _diff_log_loop(self) -> None:
        await asyncio.sleep(DIFF_LOG_FIRST_DELAY)
        while True:
            log.info(self.service.master_slave_diff_line())
            await asyncio.sleep(DIFF_LOG_PERIOD)

    def get_ha_status(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """GET_BROKER_HA_STATUS (907): RocketMQ's HARuntimeInfo as JSON."""
        return req.response(body=json.dumps(self.service.ha_runtime_info()).encode())
