"""A controller-mode master's periodic read of its SyncStateSet lands while an ALTER adding a slave is in flight: a
set of the same epoch (the one the master has) must change nothing. It dropped the proposal, so a SYNC put waiting
for the joining slave was acknowledged by the master alone, and the ALTER then made that slave electable without
those bytes (Apache applies only a newer set: ReplicasManager.changeSyncStateSet)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.controller import GetReplicaInfoResponseHeader, SyncStateSet
from mqtools.server.broker.replicas_manager import ReplicasManager
from mqtools.server.ha.autoswitch_connection import AutoSwitchHAConnection
from mqtools.server.ha.autoswitch_service import AutoSwitchHAService
from mqtools.server.ha.epoch_file import EpochFileCache
from mqtools.server.ha.service import HAConfig


class Store:
    max_phy_offset = 100
    dispatch_limit = None

    def dispatch_confirmed(self) -> None:
        return None

    def truncate_torn_tail(self) -> int:
        return 0


def manager(ha: AutoSwitchHAService, answer: SyncStateSet) -> ReplicasManager:
    """Only what the poll uses: the broker's name, its master epoch, its HA service and the controller's answer."""
    rm = object.__new__(ReplicasManager)
    rm.b = SimpleNamespace(config=SimpleNamespace(broker_name="broker-a"))  # type: ignore[assignment]
    rm.master_epoch, rm.ha = 1, ha

    async def call(code: int, header: Any = None, body: bytes | None = None, **_: Any) -> RemotingCommand:
        assert code == RequestCode.CONTROLLER_GET_REPLICA_INFO
        ext = GetReplicaInfoResponseHeader(1, "127.0.0.1:10911", 1).to_ext()
        return RemotingCommand.request(0).response(ext_fields=ext, body=answer.to_json())

    rm._call = call  # type: ignore[method-assign]
    return rm


async def test_a_poll_of_the_same_epoch_keeps_the_set_in_flight_and_the_put_waiting() -> None:
    now = [1000.0]
    ha = AutoSwitchHAService(Store(), HAConfig(all_ack_in_sync_state_set=True), EpochFileCache(),
                             clock=lambda: now[0])
    await ha.change_to_master(1, 1)
    ha.set_sync_state_set({1}, 1)
    slave = object.__new__(AutoSwitchHAConnection)
    slave.slave_broker_id, slave.slave_ack_offset, slave.async_learner, slave.caught_up_at = 2, 100, False, now[0]
    ha.connections.append(slave)
    ha.on_slave_ack(slave, 100)
    ha.mark_proposed(ha.desired_sync_state_set())  # the ALTER adding broker 2 is in flight
    ha.store.max_phy_offset = 200  # a SYNC put of 100 bytes
    acked: list[Any] = []
    ha.wake_writers = lambda: None  # type: ignore[method-assign]
    ha.when_replicated(200, 5.0, acked.append)
    await manager(ha, SyncStateSet({1}, 1))._poll_replica_info()
    await asyncio.sleep(0)
    assert acked == [] and ha.acked_offset() == 100  # still waits for broker 2
    await manager(ha, SyncStateSet({1, 2}, 2))._poll_replica_info()  # a newer set is taken
    assert ha.sync_state_set == {1, 2} and ha.sync_state_set_epoch == 2
