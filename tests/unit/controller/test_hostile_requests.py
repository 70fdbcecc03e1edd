"""Requests no broker or admin tool sends, answered with an error and no change: an id list of separators only
read as "the whole set" (a live set deleted), a null SyncStateSet raised TypeError (SYSTEM_ERROR with a
traceback logged each time), and a brokerId outside 1..Long.MAX_VALUE-1 was registered (at Long.MAX_VALUE the
next id no longer fits a long, so the set could never grow)."""

from __future__ import annotations

import pytest
from unit.controller.controller_world import CLUSTER, NAME, NOW, FakeRaft, beat, master_1, request_processor

from mqtools.common.javanum import LONG_MAX
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.codes import ResponseCode as RC
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.controller import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    CleanControllerBrokerDataRequestHeader,
    GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader,
)
from mqtools.remoting.errors import BodyError
from mqtools.server.controller.heartbeat import BrokerHeartbeatManager
from mqtools.server.controller.processor import ControllerRequestProcessor
from mqtools.server.controller.replicas_info import ReplicasInfoManager


@pytest.fixture
def world() -> tuple[ControllerRequestProcessor, ReplicasInfoManager]:
    """Brokers 1 and 2 alive, master 1 (epoch 1, SyncStateSet {1} at epoch 1)."""
    raft = FakeRaft(master_1())
    hb = BrokerHeartbeatManager(NOW)
    for bid in (1, 2):
        beat(hb, bid)
    return request_processor(raft, hb), raft.manager


@pytest.mark.parametrize("ids", [";", " ; ", ";;", "  ;\t"])
@pytest.mark.parametrize("clean_living", [False, True])
async def test_an_id_list_of_separators_only_is_refused_not_read_as_the_whole_set(world, ids: str,
                                                                                  clean_living: bool):
    processor, manager = world
    header = CleanControllerBrokerDataRequestHeader(NAME, CLUSTER, ids, clean_living)
    response = await processor.clean_broker_data(None, RemotingCommand.request(RequestCode.CLEAN_BROKER_DATA,
                                                                               header.to_ext()))
    assert response.code == RC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    assert "brokerControllerIdsToClean" in (response.remark or "")
    assert set(manager.sets[NAME].brokers) == {1, 2}
    assert processor.live(CLUSTER, NAME, 1) is not None  # still tracked


async def test_an_id_list_still_cleans_the_ids_it_names(world):
    processor, manager = world
    header = CleanControllerBrokerDataRequestHeader(NAME, CLUSTER, " 2 ;", True)
    response = await processor.clean_broker_data(None, RemotingCommand.request(RequestCode.CLEAN_BROKER_DATA,
                                                                               header.to_ext()))
    assert response.code == RC.SUCCESS
    assert set(manager.sets[NAME].brokers) == {1}
    assert processor.live(CLUSTER, NAME, 2) is None


@pytest.mark.parametrize("body", [
    b'{"syncStateSet":null,"syncStateSetEpoch":1}',
    b'{"syncStateSet":[null,2],"syncStateSetEpoch":1}',
    b'{"syncStateSet":[1,null],"syncStateSetEpoch":1}',
])
async def test_a_null_sync_state_set_or_id_is_a_body_error(world, body: bytes):
    processor, manager = world
    header = AlterSyncStateSetRequestHeader(NAME, 1, 1)
    request = RemotingCommand.request(RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, header.to_ext(), body)
    with pytest.raises(BodyError, match="syncStateSet"):
        await processor.alter_sync_state_set(None, request)
    bset = manager.sets[NAME]
    assert (bset.sync_state_set, bset.sync_state_set_epoch) == ({1}, 1)


async def test_a_sync_state_set_that_is_not_an_array_is_a_body_error(world):
    processor, manager = world
    header = AlterSyncStateSetRequestHeader(NAME, 1, 1)
    request = RemotingCommand.request(RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, header.to_ext(),
                                      b'{"syncStateSet":"12","syncStateSetEpoch":1}')
    with pytest.raises(BodyError):
        await processor.alter_sync_state_set(None, request)
    assert manager.sets[NAME].sync_state_set == {1}


async def _apply(processor: ControllerRequestProcessor, broker_id: int) -> RemotingCommand:
    header = ApplyBrokerIdRequestHeader(CLUSTER, NAME, broker_id, f"h:x{broker_id};{broker_id}")
    return await processor.apply_broker_id(None, RemotingCommand.request(RequestCode.CONTROLLER_APPLY_BROKER_ID,
                                                                         header.to_ext()))


@pytest.mark.parametrize("broker_id", [-1, 0, LONG_MAX, -(2**63)])
async def test_a_broker_id_outside_one_to_long_max_minus_one_is_refused(world, broker_id: int):
    processor, manager = world
    response = await _apply(processor, broker_id)
    assert response.code == RC.CONTROLLER_BROKER_ID_INVALID
    assert str(broker_id) in (response.remark or "")
    bset = manager.sets[NAME]
    assert (set(bset.brokers), bset.next_assign_broker_id) == ({1, 2}, 3)


async def test_the_largest_broker_id_leaves_a_next_id_that_still_decodes(world):
    processor, _manager = world
    assert (await _apply(processor, LONG_MAX - 1)).code == RC.SUCCESS
    request = RemotingCommand.request(RequestCode.CONTROLLER_GET_NEXT_BROKER_ID,
                                      GetNextBrokerIdRequestHeader(CLUSTER, NAME).to_ext())
    response = await processor.next_broker_id(None, request)
    assert GetNextBrokerIdResponseHeader.from_ext(response.ext_fields).next_broker_id == LONG_MAX
