"""ReplicasInfoManager: the controller's metadata and the rules that change it.

Per broker set (brokerName): the registered broker ids with their addresses, the master, the master
epoch, the SyncStateSet and its epoch. Sans-IO and in two steps, as Raft needs: a request is *checked*
against the current state on the leader, giving a result (the answer) and events; the events are
replicated, and *applied* in log order on every controller. Applying is deterministic and never fails,
so the controllers' tables stay equal. An election or SyncStateSet change carries the epochs its check saw
and is dropped when applied to a set that has moved on since: a check made on a controller that lost the
lead (pysyncobj forwards a follower's entries to the leader) must not undo a newer election.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mqtools.common.javanum import LONG_MAX
from mqtools.remoting.bodies import Body
from mqtools.remoting.codes import ResponseCode as RC
from mqtools.remoting.controller import (
    FIRST_BROKER_CONTROLLER_ID,
    AlterSyncStateSetResponseHeader,
    ApplyBrokerIdResponseHeader,
    BrokerMemberGroup,
    BrokerReplicasInfo,
    ElectionEntry,
    ElectMasterResponseBody,
    ElectMasterResponseHeader,
    GetNextBrokerIdResponseHeader,
    GetReplicaInfoResponseHeader,
    RegisterBrokerToControllerResponseHeader,
    ReplicaIdentity,
    ReplicasInfo,
    SyncStateSet,
)
from mqtools.remoting.headers import Header
from mqtools.server.controller import elect_policy
from mqtools.server.controller.heartbeat import BrokerLiveInfo

Live = Callable[[str, str, int], BrokerLiveInfo | None]
"""(cluster, brokerName, brokerId) -> live info, None when that broker is not alive."""


#: Who asked for an election: the controller itself (the master died), a broker, or an admin naming one.
CAUSE_CONTROLLER, CAUSE_BROKER, CAUSE_ADMIN = "controller", "broker", "admin"
#: Elections kept in the history (all broker sets together), newest last.
MAX_ELECTIONS = 200


# ---------------------------------------------------------------- events (replicated, pickled)


@dataclass(frozen=True, slots=True)
class ApplyBrokerIdEvent:
    cluster_name: str
    broker_name: str
    broker_address: str
    register_check_code: str
    new_broker_id: int


@dataclass(frozen=True, slots=True)
class UpdateBrokerAddressEvent:
    broker_name: str
    broker_id: int
    broker_address: str


@dataclass(frozen=True, slots=True)
class ElectMasterEvent:
    broker_name: str
    new_master: int | None
    """None: no one could be elected; the set has no master from now on (the epoch still moves)."""
    at_ms: int = 0
    """When the leader decided (its wall clock): the election history's time."""
    cause: str = CAUSE_BROKER
    down_since_ms: int | None = None
    """The controller's own election: when the old master was last seen alive (its last heartbeat, or its
    connection closing), so the history tells how long the set could not take writes."""
    master_epoch: int | None = None
    """The master epoch the check saw; None (entries of logs written before it was kept): not fenced."""


@dataclass(frozen=True, slots=True)
class AlterSyncStateSetEvent:
    broker_name: str
    new_sync_state_set: frozenset[int]
    master_epoch: int | None = None
    sync_state_set_epoch: int | None = None
    """The epochs the check saw; None (entries of logs written before they were kept): not fenced."""


@dataclass(frozen=True, slots=True)
class CleanBrokerDataEvent:
    broker_name: str
    broker_ids: frozenset[int] | None
    """None: the whole broker set."""


Event = ApplyBrokerIdEvent | UpdateBrokerAddressEvent | ElectMasterEvent | AlterSyncStateSetEvent | CleanBrokerDataEvent


@dataclass(slots=True)
class ControllerResult:
    code: int = RC.SUCCESS
    remark: str | None = None
    header: Header | None = None
    body: Body | None = None
    events: list[Event] = field(default_factory=list)


def _fail(code: int, remark: str, header: Header | None = None) -> ControllerResult:
    return ControllerResult(code, remark, header)


# ---------------------------------------------------------------- state


@dataclass(slots=True)
class BrokerSet:
    cluster_name: str
    broker_name: str
    #: brokerId -> (address, registerCheckCode)
    brokers: dict[int, tuple[str, str]] = field(default_factory=dict)
    next_assign_broker_id: int = FIRST_BROKER_CONTROLLER_ID
    master_broker_id: int | None = None
    master_epoch: int = 0
    sync_state_set: set[int] = field(default_factory=set)
    sync_state_set_epoch: int = 0

    def address(self, broker_id: int | None) -> str | None:
        entry = self.brokers.get(broker_id) if broker_id is not None else None
        return entry[0] if entry else None

    def addresses(self) -> dict[int, str]:
        return {bid: addr for bid, (addr, _code) in sorted(self.brokers.items())}


class ReplicasInfoManager:
    def __init__(self) -> None:
        self.sets: dict[str, BrokerSet] = {}
        #: The history GET_CONTROLLER_ELECTIONS answers, kept in its wire form.
        self.elections: list[ElectionEntry] = []

    # ---------------------------------------------------------------- checks (leader only)

    def next_broker_id(self, cluster: str, broker_name: str) -> ControllerResult:
        bset = self.sets.get(broker_name)
        next_id = bset.next_assign_broker_id if bset else FIRST_BROKER_CONTROLLER_ID
        return ControllerResult(header=GetNextBrokerIdResponseHeader(cluster, broker_name, next_id))

    def apply_broker_id(self, cluster: str, broker_name: str, broker_id: int, check_code: str) -> ControllerResult:
        """An id from 1 to Long.MAX_VALUE - 1 only: the set's next id is one more, and must still be a long that
        brokers can decode, or the set could never grow."""
        header = ApplyBrokerIdResponseHeader(cluster, broker_name)
        if not FIRST_BROKER_CONTROLLER_ID <= broker_id < LONG_MAX:
            return _fail(RC.CONTROLLER_BROKER_ID_INVALID, f"Fail to apply brokerId: {broker_id} in broker-set: "
                         f"{broker_name}: a brokerId is from {FIRST_BROKER_CONTROLLER_ID} to {LONG_MAX - 1}", header)
        address = check_code.split(";", 1)[0]
        event = ApplyBrokerIdEvent(cluster, broker_name, address, check_code, broker_id)
        bset = self.sets.get(broker_name)
        if bset is None:
            if broker_id != FIRST_BROKER_CONTROLLER_ID:
                return _fail(RC.CONTROLLER_BROKER_ID_INVALID, f"Broker-set: {broker_name} hasn't been registered in "
                             f"controller, but broker try to apply brokerId: {broker_id}", header)
            return ControllerResult(header=header, events=[event])
        held = bset.brokers.get(broker_id)
        if held is not None and held[1] != check_code:
            return _fail(RC.CONTROLLER_BROKER_ID_INVALID,
                         f"Fail to apply brokerId: {broker_id} in broker-set: {broker_name}", header)
        return ControllerResult(header=header, events=[event])

    def register_broker(self, cluster: str, broker_name: str, broker_id: int, address: str,
                        live: Live) -> ControllerResult:
        bset = self.sets.get(broker_name)
        if bset is None:
            return _fail(RC.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                         f"Broker-set: {broker_name} hasn't been registered in controller")
        if broker_id not in bset.brokers:
            return _fail(RC.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                         f"BrokerId: {broker_id} hasn't been registered in broker-set: {broker_name}")
        header = RegisterBrokerToControllerResponseHeader(cluster, broker_name)
        master = bset.master_broker_id
        if master is not None and live(bset.cluster_name, broker_name, master) is not None:
            header.master_broker_id, header.master_address = master, bset.address(master)
            header.master_epoch, header.sync_state_set_epoch = bset.master_epoch, bset.sync_state_set_epoch
        events: list[Event] = []
        if bset.address(broker_id) != address:
            events.append(UpdateBrokerAddressEvent(broker_name, broker_id, address))
        return ControllerResult(header=header, body=SyncStateSet(set(bset.sync_state_set), bset.sync_state_set_epoch),
                                events=events)

    def replica_info(self, broker_name: str) -> ControllerResult:
        bset = self.sets.get(broker_name)
        if bset is None:
            return _fail(RC.CONTROLLER_BROKER_METADATA_NOT_EXIST, "Broker metadata is not existed")
        master = bset.master_broker_id
        return ControllerResult(header=GetReplicaInfoResponseHeader(master, bset.address(master), bset.master_epoch),
                                body=SyncStateSet(set(bset.sync_state_set), bset.sync_state_set_epoch))

    def sync_state_data(self, broker_names: list[str], live: Live) -> ControllerResult:
        table = {}
        for name in broker_names:
            bset = self.sets.get(name)
            if bset is None:
                continue
            info = ReplicasInfo(bset.master_broker_id, bset.address(bset.master_broker_id), bset.master_epoch,
                                bset.sync_state_set_epoch)
            for bid, addr in bset.addresses().items():
                ident = ReplicaIdentity(name, bid, addr, live(bset.cluster_name, name, bid) is not None)
                (info.in_sync_replicas if bid in bset.sync_state_set else info.not_in_sync_replicas).append(ident)
            table[name] = info
        return ControllerResult(body=BrokerReplicasInfo(table))

    def elect_master(self, broker_name: str, broker_id: int, designate: bool, unclean: bool,
                     live: Live, now_ms: int = 0, down_since_ms: int | None = None) -> ControllerResult:
        """brokerId -1: the controller's own election after its master died; otherwise a broker's (or,
        with `designate`, an admin's) request."""
        bset = self.sets.get(broker_name)
        if bset is None:
            return _fail(RC.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, "Broker hasn't been registered",
                         ElectMasterResponseHeader())
        by_controller = broker_id == -1
        cause = CAUSE_CONTROLLER if by_controller else CAUSE_ADMIN if designate else CAUSE_BROKER
        if bset.master_epoch == 0 and not by_controller:
            chosen: int | None = broker_id  # the first master of a new set: whoever asks first
        else:
            def live_of(bid: int) -> BrokerLiveInfo | None:
                return live(bset.cluster_name, broker_name, bid)

            chosen = elect_policy.elect(bset.sync_state_set, set(bset.brokers) if unclean else None,
                                        bset.master_broker_id, broker_id if designate else None, live_of)
        if chosen is not None and chosen == bset.master_broker_id:
            header = ElectMasterResponseHeader(chosen, bset.address(chosen), bset.master_epoch,
                                               bset.sync_state_set_epoch)
            return ControllerResult(RC.CONTROLLER_MASTER_STILL_EXIST,
                                    f"The old master {chosen} is still alive, not need to elect new master for "
                                    f"broker {broker_name}", header,
                                    ElectMasterResponseBody(None, set(bset.sync_state_set)))
        if chosen is not None and chosen in bset.brokers:
            header = ElectMasterResponseHeader(chosen, bset.address(chosen), bset.master_epoch + 1,
                                               bset.sync_state_set_epoch + 1)
            body = ElectMasterResponseBody(BrokerMemberGroup(bset.cluster_name, broker_name, bset.addresses()),
                                           {chosen})
            return ControllerResult(header=header, body=body,
                                    events=[ElectMasterEvent(broker_name, chosen, now_ms, cause, down_since_ms,
                                                             bset.master_epoch)])
        if by_controller:
            return ControllerResult(RC.CONTROLLER_MASTER_NOT_AVAILABLE, "Old master has down and failed to elect "
                                    "a new broker master", ElectMasterResponseHeader(),
                                    events=[ElectMasterEvent(broker_name, None, now_ms, cause, down_since_ms,
                                                             bset.master_epoch)])
        return _fail(RC.CONTROLLER_ELECT_MASTER_FAILED, "Failed to elect a new master", ElectMasterResponseHeader())

    def alter_sync_state_set(self, broker_name: str, master_id: int | None, master_epoch: int | None,
                             new_set: SyncStateSet, live: Live) -> ControllerResult:
        header = AlterSyncStateSetResponseHeader()
        bset = self.sets.get(broker_name)
        if bset is None:
            return _fail(RC.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, "Broker metadata is not existed", header)
        wanted = set(new_set.sync_state_set)
        if wanted == bset.sync_state_set:
            return _fail(RC.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                         "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet", header)
        if bset.master_broker_id is None or bset.master_broker_id != master_id:
            return _fail(RC.CONTROLLER_INVALID_MASTER, f"Rejecting alter syncStateSet request because the current "
                         f"leader is:{bset.master_broker_id}, not {master_id}", header)
        if master_epoch != bset.master_epoch:
            return _fail(RC.CONTROLLER_FENCED_MASTER_EPOCH, f"Rejecting alter syncStateSet request because the "
                         f"current master epoch is:{bset.master_epoch}, not {master_epoch}", header)
        if new_set.sync_state_set_epoch != bset.sync_state_set_epoch:
            return _fail(RC.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH, f"Rejecting alter syncStateSet request because "
                         f"the current syncStateSet epoch is:{bset.sync_state_set_epoch}, not "
                         f"{new_set.sync_state_set_epoch}", header)
        for bid in sorted(wanted):
            if bid not in bset.brokers:
                return _fail(RC.CONTROLLER_INVALID_REPLICAS, f"Rejecting alter syncStateSet request because the "
                             f"replicas {bid} don't exist", header)
            if live(bset.cluster_name, broker_name, bid) is None:
                return _fail(RC.CONTROLLER_BROKER_NOT_ALIVE, f"Rejecting alter syncStateSet request because the "
                             f"replicas {bid} don't alive", header)
        if bset.master_broker_id not in wanted:
            return _fail(RC.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, f"Rejecting alter syncStateSet request because "
                         f"the newSyncStateSet don't contains origin leader {bset.master_broker_id}", header)
        epoch = bset.sync_state_set_epoch + 1
        return ControllerResult(header=AlterSyncStateSetResponseHeader(epoch), body=SyncStateSet(wanted, epoch),
                                events=[AlterSyncStateSetEvent(broker_name, frozenset(wanted), bset.master_epoch,
                                                               bset.sync_state_set_epoch)])

    def clean_broker_data(self, broker_name: str, ids_text: str | None, clean_living: bool,
                          live: Live) -> ControllerResult:
        bset = self.sets.get(broker_name)
        try:
            ids = parse_broker_ids(ids_text)
        except ValueError as exc:
            return _fail(RC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA, f"Please set the option "
                         f"<brokerControllerIdsToClean> according to the format (ids separated by ';'): {exc}")
        if not clean_living and bset is not None:
            if ids is None and bset.master_broker_id is not None:
                return _fail(RC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                             f"Broker {broker_name} is still alive, clean up failure")
            for bid in sorted(ids or ()):
                if live(bset.cluster_name, broker_name, bid) is not None:
                    return _fail(RC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                                 f"Broker {broker_name}, brokerId {bid} is still alive, clean up failure")
        if bset is None:
            return _fail(RC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                         f"Broker {broker_name} is not existed,clean broker data failure.")
        return ControllerResult(events=[CleanBrokerDataEvent(broker_name, frozenset(ids) if ids else None)])

    # ---------------------------------------------------------------- apply (every controller, log order)

    def _masterless_since(self, broker_name: str) -> int | None:
        """When a set left without a master by an election that found none was last known to have one (its old
        master's last sign of life): the election that ends the spell counts the set unwritable from there."""
        last = next((e for e in reversed(self.elections) if e.broker_name == broker_name), None)
        if last is None or last.new_master is not None:
            return None
        return last.down_since_ms if last.down_since_ms is not None else last.at_ms

    def apply(self, event: Event) -> bool:
        """False: the event was checked against epochs this set has left, and changed nothing."""
        bset = self.sets.get(event.broker_name)
        if isinstance(event, ApplyBrokerIdEvent):
            if bset is None:
                bset = self.sets[event.broker_name] = BrokerSet(event.cluster_name, event.broker_name)
            if event.new_broker_id not in bset.brokers:
                bset.brokers[event.new_broker_id] = (event.broker_address, event.register_check_code)
                bset.next_assign_broker_id = max(bset.next_assign_broker_id, event.new_broker_id) + 1
        elif bset is None:
            return True
        elif isinstance(event, UpdateBrokerAddressEvent):
            if event.broker_id in bset.brokers:
                bset.brokers[event.broker_id] = (event.broker_address, bset.brokers[event.broker_id][1])
        elif isinstance(event, ElectMasterEvent):
            if _moved_on(getattr(event, "master_epoch", None), bset.master_epoch):
                return False
            down_since = getattr(event, "down_since_ms", None)
            if down_since is None and bset.master_broker_id is None and event.new_master is not None:
                down_since = self._masterless_since(event.broker_name)
            self.elections.append(ElectionEntry(event.at_ms, event.broker_name, bset.master_broker_id,
                                                event.new_master, bset.master_epoch + 1, event.cause, down_since))
            del self.elections[:-MAX_ELECTIONS]
            bset.master_broker_id = event.new_master
            bset.master_epoch += 1
            if event.new_master is not None:
                bset.sync_state_set = {event.new_master}
                bset.sync_state_set_epoch += 1
        elif isinstance(event, AlterSyncStateSetEvent):
            if (_moved_on(getattr(event, "master_epoch", None), bset.master_epoch)
                    or _moved_on(getattr(event, "sync_state_set_epoch", None), bset.sync_state_set_epoch)):
                return False
            bset.sync_state_set = set(event.new_sync_state_set)
            bset.sync_state_set_epoch += 1
        elif isinstance(event, CleanBrokerDataEvent):
            if not event.broker_ids:
                del self.sets[event.broker_name]
                return True
            for bid in event.broker_ids:
                bset.brokers.pop(bid, None)
                bset.sync_state_set.discard(bid)
                if bset.master_broker_id == bid:
                    bset.master_broker_id = None
            if not bset.brokers:
                del self.sets[event.broker_name]
        return True


def parse_broker_ids(ids_text: str | None) -> set[int] | None:
    """CLEAN_BROKER_DATA's brokerControllerIdsToClean: None when blank (the whole set). A list of separators
    only is a ValueError, not the whole set: read so, it deleted a set whose master was alive."""
    if ids_text is None or not ids_text.strip():
        return None
    try:
        ids = {int(part) for part in ids_text.split(";") if part.strip()}
    except ValueError:
        raise ValueError(f"not a broker id list: {ids_text!r}") from None
    if not ids:
        raise ValueError(f"no broker id in {ids_text!r}")
    return ids


def _moved_on(checked: int | None, current: int) -> bool:
    """An epoch a check saw (None: not recorded, as in older logs) that is no longer the set's."""
    return checked is not None and checked != current
