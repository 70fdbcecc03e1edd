"""AutoSwitch HA between two real stores in one process (no controller: the test plays it): a slave's
handshake and epochs, acknowledgements that follow the SyncStateSet, minInSyncReplicas, and an old master
that comes back as a slave and cuts the tail nobody acknowledged."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from unit.store.store_helpers import inner, tiny_config

from mqtools.common.brokerrole import BrokerRole
from mqtools.remoting.codes import RequestCode
from mqtools.server.broker.replicas_manager import ReplicasManager
from mqtools.server.ha.autoswitch_service import AutoSwitchHAService
from mqtools.server.ha.epoch_file import EpochFileCache
from mqtools.server.ha.service import HAConfig
from mqtools.server.store.message_store import MessageStore
from mqtools.server.store.results import PutMessageStatus

pytestmark = pytest.mark.timeout(60)


class Replica:
    def __init__(self, root: Path, broker_id: int, **ha: object) -> None:
        self.id = broker_id
        self.store = MessageStore(tiny_config(root, mapped_file_size_commit_log=64 * 1024, slave_timeout=2000))
        config = HAConfig(ha_listen_port=0, bind_address="127.0.0.1", ha_send_heartbeat_interval=200,
                          all_ack_in_sync_state_set=True, **ha)
        self.ha = AutoSwitchHAService(self.store, config, EpochFileCache.load(root))
        self.changes = 0
        self.ha.on_sync_state_set_change = self._changed

    def _changed(self) -> None:
        self.changes += 1

    async def start(self) -> None:
        await self.store.start()
        await self.ha.start("127.0.0.1")
        self.store.ha_hook = self.ha

    async def master(self, epoch: int) -> None:
        await self.ha.change_to_master(epoch, self.id)
        self.store.config.broker_role = BrokerRole.SYNC_MASTER

    async def slave_of(self, master: Replica) -> None:
        self.store.config.broker_role = BrokerRole.SLAVE
        await self.ha.change_to_slave(self.id)
        self.ha.update_master_address(f"127.0.0.1:{master.ha.port}")

    async def stop(self) -> None:
        await self.ha.shutdown()
        await self.store.shutdown()


@contextlib.asynccontextmanager
async def two_replicas(root: Path) -> AsyncIterator[tuple[Replica, Replica]]:
    """Replicas a (id 1) and b (id 2), started, and stopped when the test leaves, however."""
    a, b = Replica(root / "a", 1), Replica(root / "b", 2)
    await a.start()
    await b.start()
    try:
        yield a, b
    finally:
        await a.stop()
        await b.stop()


async def until(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def test_acknowledgements_follow_the_sync_state_set_and_a_returning_master_cuts_its_tail(tmp_path):
    async with two_replicas(tmp_path) as (a, b):
        await a.master(1)
        a.ha.set_sync_state_set({1}, 1)
        assert (await a.store.put_message(inner())).ok  # alone in the set: acknowledged at once
        await b.slave_of(a)
        await until(lambda: b.store.max_phy_offset == a.store.max_phy_offset, "b to catch up")
        await until(lambda: a.ha.desired_sync_state_set() == {1, 2}, "b to be eligible")
        assert a.changes >= 1
        a.ha.set_sync_state_set({1, 2}, 2)  # the controller accepted the expansion
        r = await a.store.put_message(inner())
        assert r.ok and b.store.max_phy_offset >= r.append.end_offset  # acknowledged only once b had it
        assert b.ha.epochs() == a.ha.epochs() and [e.epoch for e in b.ha.epochs()] == [1]

        # b stops replicating: a put waits for it and times out, but is on a
        await b.ha._stop_slave_client()
        await until(lambda: not a.ha.connections, "a to see b go")
        assert a.ha.desired_sync_state_set() == {1} and a.ha.effective_set() == {1, 2}
        agreed = b.store.max_phy_offset
        r = await a.store.put_message(inner(body=b"never acknowledged"))
        assert r.status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT and a.store.max_phy_offset > agreed

        # a dies, b is elected (it was in the set); a returns as b's slave and cuts its tail
        await b.master(2)
        b.ha.set_sync_state_set({2}, 3)
        after = await b.store.put_message(inner(body=b"new epoch"))
        assert after.ok and after.append.wrote_offset == agreed
        await a.slave_of(b)
        await until(lambda: a.store.max_phy_offset == b.store.max_phy_offset and a.ha.slave_client.truncated_bytes,
                    "a to cut its tail and catch up")
        assert a.ha.slave_client.truncated_bytes == r.append.wrote_bytes
        assert a.store.look_message_by_offset(agreed).body == b"new epoch"
        assert [(e.epoch, e.start_offset) for e in a.ha.epochs()] == [(1, 0), (2, agreed)] == \
            [(e.epoch, e.start_offset) for e in b.ha.epochs()]
        assert EpochFileCache.load(tmp_path / "a").entries() == a.ha.epochs()


async def test_a_waiting_put_is_answered_when_the_controller_shrinks_the_set(tmp_path):
    async with two_replicas(tmp_path) as (a, b):
        await a.master(1)
        await b.slave_of(a)
        a.ha.set_sync_state_set({1, 2}, 1)
        await until(lambda: 2 in a.ha.desired_sync_state_set(), "b to be eligible")
        b.store.config.broker_role = BrokerRole.SLAVE
        await b.ha._stop_slave_client()
        await until(lambda: not a.ha.connections, "a to see b go")
        pending = asyncio.ensure_future(a.store.put_message(inner()))
        await asyncio.sleep(0.3)
        assert not pending.done()  # the controller may still elect b: no acknowledgement yet
        a.ha.mark_proposed({1})
        await asyncio.sleep(0.1)
        assert not pending.done()  # in flight: still both
        a.ha.set_sync_state_set({1}, 2)
        assert (await asyncio.wait_for(pending, 1.0)).ok


async def test_a_slave_that_catches_up_joins_at_once_and_puts_wait_for_it(tmp_path):
    """It joins the moment it holds all the set has: joined later, on an older catch-up, it could be elected
    without the writes a acknowledged alone meanwhile."""
    async with two_replicas(tmp_path) as (a, b):
        await a.master(1)
        a.ha.set_sync_state_set({1}, 1)
        assert (await a.store.put_message(inner())).ok
        await b.slave_of(a)
        await until(lambda: 2 in a.ha.effective_set(), "b to join")
        assert a.ha.sync_state_set == {1} and a.changes >= 1  # in flight: the controller has not confirmed it
        await b.ha._stop_slave_client()
        await until(lambda: not a.ha.connections, "a to see b go")
        r = await a.store.put_message(inner(body=b"b may be elected"))
        assert r.status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT


def _manager(ha: AutoSwitchHAService, call: Callable[..., Any], poll: Callable[[], Any]) -> ReplicasManager:
    """The ReplicasManager's SyncStateSet side over `ha`, its controller calls answered by `call` and `poll`."""
    manager = ReplicasManager.__new__(ReplicasManager)
    manager.ha, manager.b = ha, SimpleNamespace(config=SimpleNamespace(broker_name="broker-a"))
    manager.broker_controller_id, manager.master_epoch, manager._alter_unsure = 1, 1, False
    manager._call, manager._poll_replica_info = call, poll  # type: ignore[method-assign]
    return manager


async def test_an_alter_whose_answer_is_lost_keeps_the_set_in_flight_until_the_controllers_is_read(tmp_path):
    """The controller may have applied it: dropped, puts were acknowledged by a alone while the controller held
    {1, 2} and could elect b."""
    async with two_replicas(tmp_path) as (a, b):
        await a.master(1)
        a.ha.set_sync_state_set({1}, 1)
        await b.slave_of(a)
        await until(lambda: 2 in a.ha.effective_set(), "b to join")
        asked: list[object] = []

        async def lost(code: int, *_: object) -> None:
            asked.append(code)
            raise TimeoutError("the controller applied it; its answer never came")

        async def poll() -> None:
            asked.append("poll")
            a.ha.set_sync_state_set({1, 2}, 2)

        manager = _manager(a.ha, lost, poll)
        with pytest.raises(TimeoutError):
            await manager._reconcile_sync_state_set()
        assert a.ha.effective_set() == {1, 2}
        await b.ha._stop_slave_client()
        await until(lambda: not a.ha.connections, "a to see b go")
        r = await a.store.put_message(inner(body=b"b may be elected"))
        assert r.status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
        with pytest.raises(TimeoutError):  # the controller's set is read first, then b's removal proposed
            await manager._reconcile_sync_state_set()
        alter = RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET
        assert asked == [alter, "poll", alter]
        assert a.ha.sync_state_set == {1, 2} and a.ha.effective_set() == {1, 2}


async def test_min_in_sync_replicas_refuses_puts_before_they_are_written(tmp_path):
    a = Replica(tmp_path / "a", 1, min_in_sync_replicas=2)
    await a.start()
    try:
        await a.master(1)
        a.ha.set_sync_state_set({1}, 1)
        before = a.store.max_phy_offset
        r = await a.store.put_message(inner())
        assert r.status is PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH and a.store.max_phy_offset == before
        a.ha.set_sync_state_set({1, 2}, 2)
        assert a.ha.refuse_put() is None
    finally:
        await a.stop()


async def test_a_slave_with_no_epoch_in_common_keeps_only_what_precedes_both(tmp_path):
    # b led epoch 1 and wrote; a, elected later (epoch 6) before it held any of it, started its log over
    a, b = Replica(tmp_path / "a", 1), Replica(tmp_path / "b", 2)
    await b.start()
    await b.master(1)
    b.ha.set_sync_state_set({2}, 1)
    assert (await b.store.put_message(inner(body=b"epoch 1 only"))).ok
    await b.stop()
    await a.start()
    b = Replica(tmp_path / "b", 2)
    await b.start()
    try:
        await a.master(6)
        a.ha.set_sync_state_set({1}, 1)
        assert (await a.store.put_message(inner(body=b"epoch 6"))).ok
        await b.slave_of(a)
        await until(lambda: b.store.max_phy_offset == a.store.max_phy_offset and b.ha.slave_client.truncated_bytes,
                    "b to drop epoch 1 and take epoch 6")
        assert b.store.look_message_by_offset(0).body == b"epoch 6"
        assert [(e.epoch, e.start_offset) for e in b.ha.epochs()] == [(6, 0)]
    finally:
        await a.stop()
        await b.stop()
