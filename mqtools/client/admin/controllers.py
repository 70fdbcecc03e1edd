"""Controllers (RocketMQ 5 controller mode), as mqadmin's getControllerMetaData, getSyncStateSet,
electMaster, cleanBrokerMetadata, getControllerConfig and getBrokerEpoch ask them.

Controller addresses are given by the caller (brokers' `controllerAddr`): any controller answers who
leads (GET_METADATA_INFO), and the rest goes to that leader. Works against mq's controller and Apache's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from mqtools.client.admin.base import AdminService, reason_of
from mqtools.client.admin.models.controller import (
    BrokerEpochs,
    BrokerSetState,
    ControllerMetadata,
    Election,
    ElectionEvent,
    Epoch,
    Replica,
)
from mqtools.client.errors import MQClientError, UnknownTargetError, UnreachableError, settled
from mqtools.common.javaprops import parse_properties
from mqtools.common.presentation import Unreachable
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
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

T = TypeVar("T")


class ControllersUnreachableError(UnreachableError):
    """No controller answered who leads, or the leader they named did not answer the read: each one that did
    not, named (a read of a controller-mode group names them as what it could not reach)."""

    def __init__(self, what: str, missed: list[Unreachable]) -> None:
        super().__init__(f"{what} (" + "; ".join(str(u) for u in missed) + ")")
        self.missed = missed


async def ask_each(targets: Sequence[tuple[str | None, str]], read: Callable[[str], Awaitable[T]],
                   ) -> tuple[list[tuple[str, T]], list[Unreachable]]:
    """Every (broker name, address) asked at once: the answers, in the given order, and those that did not answer,
    named (one hung node costs the read its timeout, not the others' answers). A refusal raises; so does the first
    failure when nobody answered."""
    answers = await asyncio.gather(*(settled(read(addr)) for _, addr in targets))
    got: list[tuple[str, T]] = []
    missed: list[Unreachable] = []
    failures: list[UnreachableError] = []
    for (name, addr), answer in zip(targets, answers, strict=True):
        if isinstance(answer, UnreachableError):
            missed.append(Unreachable(name, addr, reason_of(answer)))
            failures.append(answer)
        elif isinstance(answer, MQClientError):
            raise answer
        else:
            got.append((addr, answer))
    if failures and not got:
        raise failures[0]
    return got, missed


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
        got, missed = await ask_each([(None, a) for a in controllers], self.metadata)
        return [meta for _, meta in got], missed

    async def leader(self, controllers: list[str]) -> str:
        """The leader's address, from whichever controller names it first: all are asked at once, so a hung one
        costs nothing while another answers. ControllersUnreachableError when none answered (exit 3); a plain
        MQClientError when those that answered know no leader or refused."""
        if not controllers:
            raise MQClientError("no controller address given")
        pending = {asyncio.ensure_future(settled(self.metadata(addr))): addr for addr in controllers}
        outcomes: dict[str, ControllerMetadata | MQClientError] = {}
        try:
            while pending:
                done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    answer = task.result()
                    if isinstance(answer, ControllerMetadata) and answer.leader_address:
                        return answer.leader_address
                    outcomes[pending.pop(task)] = answer
        finally:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        ordered = [(addr, outcomes[addr]) for addr in controllers]
        if all(isinstance(o, UnreachableError) for _, o in ordered):
            raise ControllersUnreachableError("no controller answered", [
                Unreachable(None, addr, reason_of(o)) for addr, o in ordered if isinstance(o, UnreachableError)])
        raise MQClientError("no controller leader found (" + "; ".join(
            f"{addr}: {'no leader' if isinstance(o, ControllerMetadata) else o}" for addr, o in ordered) + ")")

    async def _read_at_leader(self, controllers: list[str], code: int, body: bytes | None = None) -> RemotingCommand:
        """A read the leader answers; a leader that does not is named, as a controller that did not answer."""
        leader = await self.leader(controllers)
        try:
            return await self.admin.call(leader, code, body=body)
        except UnreachableError as exc:
            raise ControllersUnreachableError("the controller leader did not answer",
                                              [Unreachable(None, leader, reason_of(exc))]) from exc

    async def broker_sets(self, controllers: list[str], broker_names: list[str]) -> list[BrokerSetState]:
        """The named broker sets as the leader holds them; names it does not know are left out."""
        resp = await self._read_at_leader(controllers, RequestCode.CONTROLLER_GET_SYNC_STATE_DATA,
                                          broker_names_body(broker_names))
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
        resp = await self._read_at_leader(controllers, RequestCode.GET_CONTROLLER_ELECTIONS)
        return [ElectionEvent(e.at_ms, e.broker_name, e.old_master, e.new_master, e.master_epoch, e.cause,
                              e.down_since_ms)
                for e in ElectionHistory.from_json(resp.body or b"{}").elections
                if broker_name is None or e.broker_name == broker_name]

    async def config(self, controller: str) -> dict[str, str]:
        resp = await self.admin.call(controller, RequestCode.GET_CONTROLLER_CONFIG)
        return parse_properties(bytes(resp.body or b"").decode("utf-8", errors="replace"))

    async def config_each(self, controllers: list[str]) -> tuple[dict[str, dict[str, str]], list[Unreachable]]:
        """Each controller's settings, all asked at once: those that answered (address -> settings, in the given
        order) and those that did not, named; as metadata_each."""
        got, missed = await ask_each([(None, a) for a in controllers], self.config)
        return dict(got), missed

    async def broker_epochs_each(self, cluster: str, broker_name: str | None = None,
                                 ) -> tuple[list[BrokerEpochs], list[Unreachable]]:
        """Each registered broker's epoch cache (masters and slaves, all asked at once) of a cluster, or of one of
        its broker sets: those that answered, by set and broker id, and those that did not, named. A refusal
        raises (a broker not in controller mode); so does the first failure when nobody answered."""
        info = await self.admin.cluster_info()
        if cluster not in info.cluster_addr_table:
            known = ", ".join(sorted(info.cluster_addr_table)) or "none"
            raise UnknownTargetError(f"cluster {cluster} not found (known: {known})")
        names = sorted(info.cluster_addr_table[cluster])
        if broker_name is not None:
            if broker_name not in names:
                raise UnknownTargetError(f"broker {broker_name} not found in cluster {cluster} (known: "
                                         f"{', '.join(names) or 'none'})")
            names = [broker_name]
        targets: list[tuple[str | None, str]] = []
        for name in names:
            data = info.broker_addr_table.get(name)
            targets += [(name, addr) for _, addr in sorted(data.broker_addrs.items())] if data else []
        got, missed = await ask_each(targets, self._epoch_cache)
        return [BrokerEpochs(c.cluster_name, c.broker_name, addr, c.broker_id,
                             [Epoch(e.epoch, e.start_offset, e.end_offset) for e in c.epoch_list], c.max_offset)
                for addr, c in got], missed

    async def broker_epochs(self, cluster: str, broker_name: str | None = None) -> list[BrokerEpochs]:
        """broker_epochs_each all or nothing, as mqadmin's getBrokerEpoch: a broker that did not answer fails it."""
        found, missed = await self.broker_epochs_each(cluster, broker_name)
        if missed:
            raise UnreachableError("; ".join(str(u) for u in missed))
        return found

    async def _epoch_cache(self, addr: str) -> EpochEntryCache:
        resp = await self.admin.call(addr, RequestCode.GET_BROKER_EPOCH_CACHE)
        return EpochEntryCache.from_json(resp.body or b"{}")
