"""The broker's side of HA (what RocketMQ's BrokerController does around its HAService).

server/ha replicates the commitlog and knows nothing of brokers. Around it the broker:
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

from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.transport import RemotingConnection
from mqtools.server.broker.context import BrokerContext
from mqtools.server.broker.registration import RegisterResult
from mqtools.server.broker.slave_sync import SlaveSynchronize
from mqtools.server.ha.service import HAService
from mqtools.server.lifecycle import cancel_and_wait

log = logging.getLogger("mq.ha")

DIFF_LOG_FIRST_DELAY = 10.0
DIFF_LOG_PERIOD = 60.0


class HADuties:
    """One broker's HAService plus the broker-level work around it."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker
        self.service = HAService(broker.store, broker.config.ha_config(broker.store.config),
                                 tls=broker.config.tls_server(), client_tls=broker.config.tls_client().context())
        self.slave_sync: SlaveSynchronize | None = None
        self._diff_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Open the HA port (OSError when it is taken), hook the store and the server, start the
        role's loop."""
        if log.level == logging.NOTSET:
            log.setLevel(logging.INFO)  # connections, resyncs and the diff line belong in a broker's log
        await self.service.start()
        self.broker.store.ha_hook = self.service
        self.broker.server.register(RequestCode.GET_BROKER_HA_STATUS, self.get_ha_status)
        if self.service.config.is_slave:
            self.slave_sync = SlaveSynchronize(self.broker)
            self.slave_sync.start()
        else:
            self._diff_task = asyncio.create_task(self._diff_log_loop(), name="ha-diff-log")

    async def shutdown(self) -> None:
        if self.slave_sync is not None:
            await self.slave_sync.shutdown()
        await cancel_and_wait(self._diff_task)
        await self.service.shutdown()

    def on_register_result(self, result: RegisterResult) -> None:
        """A name server answered a registration: a slave learns its master's HA address, and syncs its
        metadata from a master it has not synced from yet."""
        if result.ok:
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
