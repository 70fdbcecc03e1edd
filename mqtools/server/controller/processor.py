"""ControllerRequestProcessor: RocketMQ's controller requests in, ReplicasInfoManager checks and Raft out.

Reads and writes that need the metadata (1001-1004, 1006, 1011-1013) are answered by the leader only,
others get CONTROLLER_NOT_LEADER and ask GET_METADATA_INFO (any controller) who leads. On the leader they
run one at a time (`serial`): check against the current state, replicate the events, then answer, so a
request never sees state that a committed event has not made. Leadership is asked again once a request's
turn comes (the one before may have waited seconds on Raft): a controller that lost the lead meanwhile
checks against a state that may lag the new leader's. Heartbeats are taken by every controller.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from mqtools.common.javaprops import render_properties
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.controller import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    BrokerHeartbeatRequestHeader,
    CleanControllerBrokerDataRequestHeader,
    ElectionHistory,
    ElectMasterRequestHeader,
    GetMetaDataResponseHeader,
    GetNextBrokerIdRequestHeader,
    GetReplicaInfoRequestHeader,
    RegisterBrokerToControllerRequestHeader,
    SyncStateSet,
    parse_broker_names,
)
from mqtools.remoting.errors import BodyError
from mqtools.remoting.server import RemotingServer
from mqtools.remoting.transport import RemotingConnection
from mqtools.server.controller.config import ControllerConfig
from mqtools.server.controller.heartbeat import BrokerHeartbeatManager, BrokerLiveInfo
from mqtools.server.controller.raft import ControllerRaft, ReplicationError
from mqtools.server.controller.replicas_info import ControllerResult, ReplicasInfoManager, parse_broker_ids

Clock = Callable[[], int]
NOT_LEADER = "The controller is not in leader state"


class ControllerRequestProcessor:
    def __init__(self, config: ControllerConfig, raft: ControllerRaft, heartbeats: BrokerHeartbeatManager,
                 clock: Clock, on_elected: Callable[[str, ControllerResult], None]) -> None:
        self.config = config
        self.raft = raft
        self.heartbeats = heartbeats
        self.clock = clock
        #: called after a successful election (the app notifies the broker set's members)
        self.on_elected = on_elected
        self.serial = asyncio.Lock()

    def register(self, server: RemotingServer) -> None:
        for code, fn in {
            RequestCode.BROKER_HEARTBEAT: self.heartbeat,
            RequestCode.CONTROLLER_GET_METADATA_INFO: self.metadata,
            RequestCode.GET_CONTROLLER_CONFIG: self.get_config,
            RequestCode.GET_CONTROLLER_ELECTIONS: self.elections,
            RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET: self.alter_sync_state_set,
            RequestCode.CONTROLLER_ELECT_MASTER: self.elect_master,
            RequestCode.CONTROLLER_REGISTER_BROKER: self.register_broker,
            RequestCode.CONTROLLER_GET_REPLICA_INFO: self.replica_info,
            RequestCode.CONTROLLER_GET_SYNC_STATE_DATA: self.sync_state_data,
            RequestCode.CLEAN_BROKER_DATA: self.clean_broker_data,
            RequestCode.CONTROLLER_GET_NEXT_BROKER_ID: self.next_broker_id,
            RequestCode.CONTROLLER_APPLY_BROKER_ID: self.apply_broker_id,
        }.items():
            server.register(code, fn)

    def live(self, cluster: str, broker_name: str, broker_id: int) -> BrokerLiveInfo | None:
        info = self.heartbeats.live_info(cluster, broker_name, broker_id)
        return info if info is not None and not info.expired(self.clock()) else None

    # ------------------------------------------------------------------ any controller

    def heartbeat(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = BrokerHeartbeatRequestHeader.from_ext(req.ext_fields)
        if header.broker_id is None:
            return req.response(ResponseCode.CONTROLLER_INVALID_REQUEST, "Heart beat with empty brokerId")
        self.heartbeats.on_heartbeat(header, conn, self.clock())
        return req.response(remark="Heart beat success")

    def metadata(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        peers = self.config.peers()
        by_raft = {addr: pid for pid, addr in self.config.raft_peers().items()}
        leader_raft = self.raft.leader()
        leader_id = by_raft.get(leader_raft) if leader_raft else None
        header = GetMetaDataResponseHeader(
            group=self.config.controller_d_leger_group, controller_leader_id=leader_id,
            controller_leader_address=peers.get(leader_id) if leader_id else None,
            is_leader=self.raft.is_leader(), peers="".join(f"{pid}:{addr};" for pid, addr in peers.items()))
        return req.response(ext_fields=header.to_ext())

    def get_config(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        shown = {k: v for k, v in self.config.to_properties().items() if k not in self.config.black_list()}
        return req.response(body=render_properties(shown).encode())

    async def elections(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """mq's GET_CONTROLLER_ELECTIONS: the election history, oldest first (the leader's)."""
        response, _ = await self._run(req, lambda m: ControllerResult(body=ElectionHistory(list(m.elections))))
        return response

    # ------------------------------------------------------------------ leader only

    async def _run(self, req: RemotingCommand, check: Callable[[ReplicasInfoManager], ControllerResult],
                   ) -> tuple[RemotingCommand, ControllerResult | None]:
        if not self.raft.is_leader():
            return req.response(ResponseCode.CONTROLLER_NOT_LEADER, NOT_LEADER), None
        async with self.serial:
            if not self.raft.is_leader():
                return req.response(ResponseCode.CONTROLLER_NOT_LEADER, NOT_LEADER), None
            with self.raft.lock:
                result = check(self.raft.manager)
            try:
                await self.raft.replicate(result.events)
            except ReplicationError as exc:
                return req.response(ResponseCode.CONTROLLER_NOT_LEADER, f"{NOT_LEADER}: {exc}"), None
        ext = result.header.to_ext() if result.header is not None else None
        body = result.body.to_json() if result.body is not None else None
        return req.response(result.code, result.remark, ext, body), result

    async def alter_sync_state_set(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = AlterSyncStateSetRequestHeader.from_ext(req.ext_fields)
        wanted = _requested_sync_state_set(req.body)
        response, _ = await self._run(req, lambda m: m.alter_sync_state_set(
            header.broker_name or "", header.master_broker_id, header.master_epoch, wanted, self.live))
        return response

    async def elect_master(self, conn: RemotingConnection | None, req: RemotingCommand,
                           down_since_ms: int | None = None) -> RemotingCommand:
        """ELECT_MASTER; `down_since_ms`: the controller's own election, when the old master was last alive."""
        header = ElectMasterRequestHeader.from_ext(req.ext_fields)
        response, result = await self._run(req, lambda m: m.elect_master(
            header.broker_name, header.broker_id, header.designate_elect, self.config.enable_elect_unclean_master,
            self.live, self.clock(), down_since_ms))
        if result is not None and result.code == ResponseCode.SUCCESS:
            self.on_elected(header.broker_name, result)
        return response

    async def register_broker(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = RegisterBrokerToControllerRequestHeader.from_ext(req.ext_fields)
        response, _ = await self._run(req, lambda m: m.register_broker(
            header.cluster_name or "", header.broker_name or "", -1 if header.broker_id is None else header.broker_id,
            header.broker_address or "", self.live))
        return response

    async def replica_info(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = GetReplicaInfoRequestHeader.from_ext(req.ext_fields)
        response, _ = await self._run(req, lambda m: m.replica_info(header.broker_name or ""))
        return response

    async def sync_state_data(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        names = parse_broker_names(req.body)
        if not names:
            return req.response(ResponseCode.SYSTEM_ERROR, "no broker name in the request body")
        response, _ = await self._run(req, lambda m: m.sync_state_data(names, self.live))
        return response

    async def clean_broker_data(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = CleanControllerBrokerDataRequestHeader.from_ext(req.ext_fields)
        response, result = await self._run(req, lambda m: m.clean_broker_data(
            header.broker_name, header.broker_controller_ids_to_clean, header.is_clean_living_broker, self.live))
        if result is not None and result.code == ResponseCode.SUCCESS:
            self.heartbeats.forget(header.broker_name, parse_broker_ids(header.broker_controller_ids_to_clean))
        return response

    async def next_broker_id(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = GetNextBrokerIdRequestHeader.from_ext(req.ext_fields)
        response, _ = await self._run(req, lambda m: m.next_broker_id(header.cluster_name or "",
                                                                      header.broker_name or ""))
        return response

    async def apply_broker_id(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = ApplyBrokerIdRequestHeader.from_ext(req.ext_fields)
        if header.applied_broker_id is None or not header.register_check_code:
            return req.response(ResponseCode.CONTROLLER_BROKER_ID_INVALID,
                                "appliedBrokerId and registerCheckCode are required")
        response, _ = await self._run(req, lambda m: m.apply_broker_id(
            header.cluster_name or "", header.broker_name or "", header.applied_broker_id, header.register_check_code))
        return response


def _requested_sync_state_set(body: bytes | None) -> SyncStateSet:
    """ALTER_SYNC_STATE_SET's body. A null set or a null id in it is a BodyError (the peer's fault: one log line,
    no traceback), not a TypeError in the middle of the check."""
    wanted = SyncStateSet.from_request(body or b"{}")
    if wanted.sync_state_set is None or None in wanted.sync_state_set:
        raise BodyError("bad SyncStateSet body: syncStateSet must be an array of broker ids, without null")
    return wanted
