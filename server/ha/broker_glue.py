"""How a broker takes HA on: one call from the controller's start() keeps app.py's part small.

`start_ha(controller)` builds the HAService from the broker's properties, opens the HA port,
sets the store's `ha_hook`, registers GET_BROKER_HA_STATUS, starts slave metadata sync on a
SLAVE and the master's periodic "slave fall behind" log line on a master.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from mqtools.server.ha.service import HAConfig, HAService

from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.transport import RemotingConnection

log = logging.getLogger("mq.ha")

DIFF_LOG_FIRST_DELAY = 10.0
DIFF_LOG_PERIOD = 60.0


class BrokerHA(HAService):
    """HAService plus the broker-level duties around it (status processor, sync, diff log)."""

    def __init__(self, controller: Any, config: HAConfig) -> None:
        super().__init__(controller.store, config)
        self.controller = controller
        self.slave_sync: Any = None
        self._diff_task: asyncio.Task[None] | None = None

    def on_register_result(self, result: Any) -> None:
        """The name server told us our master's HA address (slaves only)."""
        if getattr(result, "ok", False):
            self.update_master_address(getattr(result, "ha_server_addr", None))

    async def start_duties(self) -> None:
        if self.config.is_slave:
            from mqtools.server.broker.slave_sync import SlaveSynchronize

            self.slave_sync = SlaveSynchronize(self.controller)
            self.slave_sync.start()
        else:
            self._diff_task = asyncio.create_task(self._diff_log_loop(), name="ha-diff-log")

    async def shutdown(self) -> None:
        if self.slave_sync is not None:
            await self.slave_sync.shutdown()
        if self._diff_task is not None:
            self._diff_task.cancel()
            with contextlib.suppress(BaseException):
                await self._diff_task
        await super().shutdown()

    async def _diff_log_loop(self) -> None:
        await asyncio.sleep(DIFF_LOG_FIRST_DELAY)
        while True:
            log.info(self.master_slave_diff_line())
            await asyncio.sleep(DIFF_LOG_PERIOD)

    def get_ha_status(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """GET_BROKER_HA_STATUS (907): HARuntimeInfo as JSON."""
        return req.response(body=json.dumps(self.ha_runtime_info()).encode())


def ha_config_for(controller: Any) -> HAConfig:
    """HA settings from the broker's properties and its store's."""
    return controller.config.ha_config(controller.store.config)


async def start_ha(controller: Any) -> BrokerHA:
    """Open the HA port and hook replication into the store and the remoting server."""
    if log.level == logging.NOTSET:
        log.setLevel(logging.INFO)  # connections, resyncs and the diff line belong in a broker's log
    ha = BrokerHA(controller, ha_config_for(controller))
    await ha.start()
    controller.store.ha_hook = ha
    controller.server.register(RequestCode.GET_BROKER_HA_STATUS, ha.get_ha_status)
    await ha.start_duties()
    return ha
