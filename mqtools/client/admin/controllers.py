"""Controllers (RocketMQ 5 controller mode), as mqadmin's getControllerMetaData, getSyncStateSet,
electMaster, cleanBrokerMetadata, getControllerConfig and getBrokerEpoch ask them.

Controller addresses are given by the caller (brokers' `controllerAddr`): any controller answers who
leads (GET_METADATA_INFO), and the rest goes to that leader. Works against mq's controller and Apache's.
"""

from __future__ import annotations

import asyncio

from mqtools.client.admin.base import AdminService, cluster_nodes, reason_of
from mqtools.client.admin.models.controller import (
    BrokerEpochs,
    BrokerSetState,
    ControllerMetadata,
    Election,
    ElectionEvent,
    Epoch,
    Replica,
)
from mqtools.client.errors import MQClientError, UnreachableError, settled
from mqtools.common.javaprops import parse_properties
from mqtools.common.presentation import Unreachable
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.controller import (
    BrokerReplicasInfo,
    CleanControllerBrokerDataRequestHeader,
    ElectionHistory,
    ElectMasterRequestHeader,
    ElectMasterResponseHeader,
    EpochEntryCache,
    GetMetaDataResponseHeader,
    broker_names_body,
)


class ControllerAdmin(AdminService):
    async def metadata(self, controller: str) -> ControllerMetadata:
        resp = await self.admin.call(controller, RequestCode.CONTROLLER_GET_METADATA_INFO)
        header = GetMetaDataResponseHeader.from_ext(resp.ext_fields)
        peers = {}
        for item in filter(None, (header.peers or "").split(";")):
            pid, _, addr = item.partition(":")
            peers[pid] = addr
        return ControllerMetadata(controller, header.group, header.controller_leader_id,
                                  header.controller_leader_address, header.is_leader, peers)

    async def metadata_each(self, controllers: list[str]) -> tuple[list[ControllerMetadata], list[Unreachable]]:
        """Each controller's view, all asked at once: those that answered, in the given order, and those that did
        not, named (a hung controller costs the read its timeout, not the others' views). The first failure
        raises when none answered; a refusal always does."""
        answers = await asyncio.gather(*(settled(self.metadata(addr)) for addr in controllers))
        got: list[ControllerMetadata] = []
        missed: list[Unreachable] = []
        for addr, answer in zip(controllers, answers, strict=True):
            if isinstance(answer, UnreachableError):
                missed.append(Unreachable(None, addr, reason_of(answer)))
            elif isinstance(answer, MQClientError):
                raise answer
            else:
                got.append(answer)
        if not got:
            first = answers[0]
            assert isinstance(first, MQClientError)
            raise first
        return got, missed

    async def leader(self, controllers: list[str]) -> str:
        """The leader's address, from the first controller that knows it."""
        errors = []
        for addr in controllers:
            try:
                meta = await self.metadata(addr)
            except MQClientError as exc:
                errors.append(f"{addr}: {exc}")
                continue
            if meta.leader_address:
                return meta.leader_address
            errors.append(f"{addr}: no leader")
        raise MQClientError("no controller leader found (" + "; ".join(errors) + ")")

    async def broker_sets(self, controllers: list[str], broker_names: list[str]) -> list[BrokerSetState]:
        """The named broker sets as the leader holds them; names it does not know are left out."""
        leader = await self.leader(controllers)
        resp = await self.admin.call(leader, RequestCode.CONTROLLER_GET_SYNC_STATE_DATA,
                                     body=broker_names_body(broker_names))
        table = BrokerReplicasInfo.from_json(resp.body or b"{}").replicas_info_table
        out = []
        for name in broker_names:
            info = table.get(name)
            if info is None:
                continue
            replicas = [Replica(r.broker_id, r.broker_address, bool(r.alive), in_sync)
                        for in_sync, group in ((True, info.in_sync_replicas), (False, info.not_in_sync_replicas))
                        for r in group]
            out.append(BrokerSetState(name, info.master_broker_id, info.master_address, info.master_epoch,
                                      info.sync_state_set_epoch, sorted(replicas, key=lambda r: r.broker_id)))
        return out

    async def elect_master(self, controllers: list[str], cluster: str, broker_name: str,
                           broker_id: int) -> Election:
        """Make `broker_id` the master of its set (it must be alive and in the SyncStateSet, unless the
        controllers allow unclean elections)."""
        leader = await self.leader(controllers)
        header = ElectMasterRequestHeader(cluster, broker_name, broker_id, True)
        resp = await self.admin.call(leader, RequestCode.CONTROLLER_ELECT_MASTER, header.to_ext(),
                                     ok=(ResponseCode.SUCCESS, ResponseCode.CONTROLLER_MASTER_STILL_EXIST))
        got = ElectMasterResponseHeader.from_ext(resp.ext_fields)
        return Election(broker_name, got.master_broker_id, got.master_address, got.master_epoch,
                        got.sync_state_set_epoch, resp.code == ResponseCode.SUCCESS)

    async def clean_broker_metadata(self, controllers: list[str], cluster: str | None, broker_name: str,
                                    broker_ids: list[int] | None, clean_living: bool = False) -> None:
        leader = await self.leader(controllers)
        ids = ";".join(str(i) for i in broker_ids) if broker_ids else None
        header = CleanControllerBrokerDataRequestHeader(broker_name, cluster, ids, clean_living)
        await self.admin.call(leader, RequestCode.CLEAN_BROKER_DATA, header.to_ext())

    async def elections(self, controllers: list[str], broker_name: str | None = None) -> list[ElectionEvent]:
        """The leader's election history, oldest first (mq's controller only: NotAvailable from Apache's)."""
        leader = await self.leader(controllers)
        resp = await self.admin.call(leader, RequestCode.GET_CONTROLLER_ELECTIONS)
        return [ElectionEvent(e.at_ms, e.broker_name, e.old_master, e.new_master, e.master_epoch, e.cause,
                              e.down_since_ms)
                for e in ElectionHistory.from_json(resp.body or b"{}").elections
                if broker_name is None or e.broker_name == broker_name]

    async def config(self, controller: str) -> dict[str, str]:
        resp = await self.admin.call(controller, RequestCode.GET_CONTROLLER_CONFIG)
        return parse_properties(bytes(resp.body or b"").decode("utf-8", errors="replace"))

    async def broker_epochs(self, cluster: str, broker_name: str | None = None) -> list[BrokerEpochs]:
        """Each broker's epoch cache (masters and slaves) of a cluster, or of one broker set."""
        info = await self.admin.cluster_info()
        out = []
        for master, slaves in cluster_nodes(info, cluster):
            for addr in [master, *slaves]:
                resp = await self.admin.call(addr, RequestCode.GET_BROKER_EPOCH_CACHE)
                cache = EpochEntryCache.from_json(resp.body or b"{}")
                if broker_name is not None and cache.broker_name != broker_name:
                    break
                epochs = [Epoch(e.epoch, e.start_offset, e.end_offset) for e in cache.epoch_list]
                out.append(BrokerEpochs(cache.cluster_name, cache.broker_name, addr, cache.broker_id, epochs,
                                        cache.max_offset))
        return out
