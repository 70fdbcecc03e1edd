"""Typed results about RocketMQ 5 controllers (controller mode): who leads, each broker set's master,
epochs and SyncStateSet, and the epochs a broker's commitlog went through."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ControllerMetadata:
    """One controller's answer to GET_METADATA_INFO."""

    address: str
    """The controller asked."""
    group: str | None
    leader_id: str | None
    leader_address: str | None
    """None while the controllers have no leader."""
    is_leader: bool
    peers: dict[str, str]
    """Controller id -> address, as the controller lists them."""


@dataclass(frozen=True, slots=True)
class Replica:
    broker_id: int
    address: str
    alive: bool
    in_sync: bool


@dataclass(frozen=True, slots=True)
class BrokerSetState:
    """A broker set (brokerName) as the controller leader holds it."""

    broker_name: str
    master_broker_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set_epoch: int
    replicas: list[Replica]

    @property
    def sync_state_set(self) -> list[int]:
        return [r.broker_id for r in self.replicas if r.in_sync]


@dataclass(frozen=True, slots=True)
class Election:
    """What ELECT_MASTER answered: the master now, and whether this call changed it."""

    broker_name: str
    master_broker_id: int | None
    master_address: str | None
    master_epoch: int | None
    sync_state_set_epoch: int | None
    changed: bool
    """False: the controller kept the master it had (CONTROLLER_MASTER_STILL_EXIST)."""


@dataclass(frozen=True, slots=True)
class Epoch:
    epoch: int
    start_offset: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class BrokerEpochs:
    """A controller-mode broker's epoch cache (GET_BROKER_EPOCH_CACHE): which master epoch wrote which
    commitlog range."""

    cluster_name: str
    broker_name: str
    broker_addr: str
    broker_id: int
    epochs: list[Epoch]
    max_offset: int


@dataclass(frozen=True, slots=True)
class ElectionEvent:
    """An election the controllers committed: when, which set, the master before and after, why."""

    at_ms: int
    broker_name: str
    old_master: int | None
    new_master: int | None
    """None: no replica could be elected."""
    master_epoch: int
    cause: str
    """controller (the master died), broker (a broker asked), admin (an operator named the master)."""
    down_since_ms: int | None = None
    """The controller's own election: when the old master was last seen alive (mq's controller)."""

    @property
    def unwritable_ms(self) -> int | None:
        """How long the set had no master that could take writes, as the controller saw it: from the old
        master's last sign of life to the election (clients add their own route refresh)."""
        return None if self.down_since_ms is None else max(0, self.at_ms - self.down_since_ms)
