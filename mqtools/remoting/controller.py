"""Headers and bodies of RocketMQ 5's controller mode (request codes 904 and 1001-1013).

Brokers in controller mode and admin tools talk to the controller with these; the controller pushes
NOTIFY_BROKER_ROLE_CHANGED (oneway) to brokers, and GET_BROKER_EPOCH_CACHE is a broker's answer to admin
tools. Field names are Apache's, so an Apache 5.x broker can use an mq controller and the other way round.
Java sends every primitive field (`invokeTime`, `isLeader`...), and writes maps keyed by broker id with
unquoted numeric keys, which `Body` decoding accepts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mqtools.common.javanum import INT_MAX, LONG_MAX
from mqtools.remoting import fastjson
from mqtools.remoting.bodies import Body
from mqtools.remoting.errors import BodyError
from mqtools.remoting.headers import Header, wire

#: The id the first broker of a broker set applies for (MixAll.FIRST_BROKER_CONTROLLER_ID).
FIRST_BROKER_CONTROLLER_ID = 1

#: Heartbeat fields a broker leaves out get these values (the controller's defaults).
DEFAULT_HEARTBEAT_TIMEOUT_MS = 10_000
LOWEST_ELECTION_PRIORITY = INT_MAX


# ---------------------------------------------------------------- headers


@dataclass(slots=True)
class BrokerHeartbeatRequestHeader(Header):
    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int | None = None
    epoch: int | None = None
    max_offset: int | None = None
    confirm_offset: int | None = None
    heartbeat_timeout_mills: int | None = None
    election_priority: int | None = None


@dataclass(slots=True)
class AlterSyncStateSetRequestHeader(Header):
    broker_name: str | None = None
    master_broker_id: int | None = None
    master_epoch: int | None = None
    invoke_time: int = 0


@dataclass(slots=True)
class AlterSyncStateSetResponseHeader(Header):
    new_sync_state_set_epoch: int = 0


@dataclass(slots=True)
class ElectMasterRequestHeader(Header):
    """brokerId -1 (and designateElect false): the controller's own election after a master died;
    a broker's own id: a broker asking; designateElect true: an admin naming the new master."""

    cluster_name: str
    broker_name: str
    broker_id: int
    designate_elect: bool
    invoke_time: int | None = None


@dataclass(slots=True)
class ElectMasterResponseHeader(Header):
    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: int | None = None
    sync_state_set_epoch: int | None = None


@dataclass(slots=True)
class RegisterBrokerToControllerRequestHeader(Header):
    cluster_name: str | None = None
    broker_name: str | None = None
    broker_id: int | None = None
    broker_address: str | None = None
    invoke_time: int = 0


@dataclass(slots=True)
class RegisterBrokerToControllerResponseHeader(Header):
    """The master fields are set only when the broker set has a master that is alive."""

    cluster_name: str | None = None
    broker_name: str | None = None
    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: int | None = None
    sync_state_set_epoch: int | None = None


@dataclass(slots=True)
class GetReplicaInfoRequestHeader(Header):
    broker_name: str | None = None


@dataclass(slots=True)
class GetReplicaInfoResponseHeader(Header):
    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: int | None = None


@dataclass(slots=True)
class GetMetaDataResponseHeader(Header):
    """`peers` is "id:ip:port;" per controller; the leader fields are absent while there is none."""

    group: str | None = None
    controller_leader_id: str | None = None
    controller_leader_address: str | None = None
    is_leader: bool = False
    peers: str | None = None


@dataclass(slots=True)
class NotifyBrokerRoleChangedRequestHeader(Header):
    master_address: str | None = None
    master_epoch: int | None = None
    sync_state_set_epoch: int | None = None
    master_broker_id: int | None = None


@dataclass(slots=True)
class CleanControllerBrokerDataRequestHeader(Header):
    broker_name: str
    cluster_name: str | None = None
    broker_controller_ids_to_clean: str | None = None
    """Broker ids separated by ';'; absent: the whole broker set."""
    is_clean_living_broker: bool = wire("isCleanLivingBroker", False)
    invoke_time: int = 0


@dataclass(slots=True)
class GetNextBrokerIdRequestHeader(Header):
    cluster_name: str | None = None
    broker_name: str | None = None


@dataclass(slots=True)
class GetNextBrokerIdResponseHeader(Header):
    cluster_name: str | None = None
    broker_name: str | None = None
    next_broker_id: int | None = None


@dataclass(slots=True)
class ApplyBrokerIdRequestHeader(Header):
    """`registerCheckCode` is "brokerAddr;millis": it tells a broker's retry from another broker."""

    cluster_name: str | None = None
    broker_name: str | None = None
    applied_broker_id: int | None = None
    register_check_code: str | None = None


@dataclass(slots=True)
class ApplyBrokerIdResponseHeader(Header):
    cluster_name: str | None = None
    broker_name: str | None = None


# ---------------------------------------------------------------- bodies


@dataclass(slots=True)
class SyncStateSet(Body):
    sync_state_set: set[int] = field(default_factory=set)
    sync_state_set_epoch: int = 0


@dataclass(slots=True)
class BrokerMemberGroup(Body):
    cluster: str = ""
    broker_name: str = ""
    broker_addrs: dict[int, str] = field(default_factory=dict)


@dataclass(slots=True)
class ElectMasterResponseBody(Body):
    broker_member_group: BrokerMemberGroup | None = None
    sync_state_set: set[int] = field(default_factory=set)


@dataclass(slots=True)
class ReplicaIdentity(Body):
    broker_name: str = ""
    broker_id: int = 0
    broker_address: str = ""
    alive: bool = False


@dataclass(slots=True)
class ReplicasInfo(Body):
    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: int = 0
    sync_state_set_epoch: int = 0
    in_sync_replicas: list[ReplicaIdentity] = field(default_factory=list)
    not_in_sync_replicas: list[ReplicaIdentity] = field(default_factory=list)


@dataclass(slots=True)
class BrokerReplicasInfo(Body):
    replicas_info_table: dict[str, ReplicasInfo] = field(default_factory=dict)


@dataclass(slots=True)
class EpochEntry(Body):
    epoch: int = 0
    start_offset: int = 0
    end_offset: int = LONG_MAX


@dataclass(slots=True)
class EpochEntryCache(Body):
    cluster_name: str = ""
    broker_name: str = ""
    broker_id: int = 0
    epoch_list: list[EpochEntry] = field(default_factory=list)
    max_offset: int = 0


@dataclass(slots=True)
class ElectionEntry(Body):
    """One election the controllers committed (mq's private GET_CONTROLLER_ELECTIONS)."""

    at_ms: int = 0
    broker_name: str = ""
    old_master: int | None = None
    new_master: int | None = None
    """None: no replica could be elected; the set was left without a master."""
    master_epoch: int = 0
    cause: str = ""
    """controller (its master died), broker (a broker asked) or admin (named by an operator)."""
    down_since_ms: int | None = None
    """The controller's own election, and the one that ends a spell without a master: when the old master was
    last seen alive."""


@dataclass(slots=True)
class ElectionHistory(Body):
    elections: list[ElectionEntry] = field(default_factory=list)


def broker_names_body(names: list[str]) -> bytes:
    """GET_SYNC_STATE_DATA's request body: a JSON array of broker names."""
    return fastjson.dumps(list(names))


def parse_broker_names(body: bytes | None) -> list[str]:
    """GET_SYNC_STATE_DATA's request body back; [] for none."""
    if not body:
        return []
    try:
        names = fastjson.loads(body, lenient_max=64 * 1024)
    except ValueError as exc:
        raise BodyError(f"bad broker name list: {exc}") from None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise BodyError("bad broker name list: expected a JSON array of strings")
    return names
