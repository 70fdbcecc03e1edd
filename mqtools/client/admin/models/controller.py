"""Typed results about RocketMQ 5 controllers (controller mode): who leads, each broker set's master,
epochs and SyncStateSet, and the epochs a broker's commitlog went through; their documents are
rendered here."""

from __future__ import annotations

from dataclasses import dataclass

from mqtools.common.presentation import Column, Unreachable, View, renders, when


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
    """The controller's own election, and the one that ends a spell without a master: when the old master was
    last seen alive (mq's controller)."""

    @property
    def unwritable_ms(self) -> int | None:
        """How long the set had no master that could take writes, as the controller saw it: from the old
        master's last sign of life to the election (clients add their own route refresh). None when not known,
        and when the election found no master: the set stayed unwritable past it."""
        if self.down_since_ms is None or self.new_master is None:
            return None
        return max(0, self.at_ms - self.down_since_ms)


# -- documents ---------------------------------------------------------------------------------------


@renders("ControllerMetadata")
def controller_metadata_view(metas: list[ControllerMetadata], unreachable: list[Unreachable] | None = None) -> View:
    """One row per controller that answered; one that did not makes the view partial, named."""
    rows = [[m.address, m.group, m.leader_id, m.leader_address, m.is_leader, len(m.peers)] for m in metas]
    data = {"controllers": [{"address": m.address, "group": m.group, "leaderId": m.leader_id,
                             "leaderAddress": m.leader_address, "isLeader": m.is_leader, "peers": m.peers}
                            for m in metas]}
    return View("ControllerMetadata", [Column("CONTROLLER"), Column("GROUP"), Column("LEADER ID"),
                                       Column("LEADER ADDRESS"), Column("IS LEADER"), Column("PEERS", True)],
                rows, data, unreachable=list(unreachable or []))


@renders("SyncStateSets")
def sync_state_sets_view(sets: list[BrokerSetState], asked: list[str]) -> View:
    """The broker sets the controller leader holds; a footer line for each of `asked` it does not know."""
    rows = [[b.broker_name, b.master_broker_id, b.master_address, b.master_epoch, b.sync_state_set_epoch,
             ",".join(str(r.broker_id) for r in b.replicas if r.in_sync) or None,
             ",".join(str(r.broker_id) for r in b.replicas if not r.in_sync) or None,
             ",".join(str(r.broker_id) for r in b.replicas if not r.alive) or None] for b in sets]
    found = {b.broker_name for b in sets}
    footer = [f"{name}: the controller does not know this broker set" for name in asked if name not in found]
    data = {"brokerSets": [{"brokerName": b.broker_name, "masterBrokerId": b.master_broker_id,
                            "masterAddress": b.master_address, "masterEpoch": b.master_epoch,
                            "syncStateSetEpoch": b.sync_state_set_epoch,
                            "replicas": [{"brokerId": r.broker_id, "address": r.address, "alive": r.alive,
                                          "inSync": r.in_sync} for r in b.replicas]} for b in sets]}
    return View("SyncStateSets", [Column("BROKER"), Column("MASTER ID", True), Column("MASTER ADDRESS"),
                                  Column("MASTER EPOCH", True), Column("SSS EPOCH", True), Column("IN SYNC"),
                                  Column("NOT IN SYNC"), Column("DEAD")], rows, data, footer=footer)


@renders("Election")
def election_view(e: Election) -> View:
    footer = [] if e.changed else [f"{e.broker_name}: the master did not change"]
    return View("Election", [Column("BROKER"), Column("MASTER ID", True), Column("MASTER ADDRESS"),
                             Column("MASTER EPOCH", True), Column("SSS EPOCH", True), Column("CHANGED")],
                [[e.broker_name, e.master_broker_id, e.master_address, e.master_epoch, e.sync_state_set_epoch,
                  e.changed]],
                {"brokerName": e.broker_name, "masterBrokerId": e.master_broker_id, "masterAddress": e.master_address,
                 "masterEpoch": e.master_epoch, "syncStateSetEpoch": e.sync_state_set_epoch, "changed": e.changed},
                footer=footer)


def master_name(broker_id: int | None) -> int | str:
    """No master is a fact of an election (the set had none, or it found none), not a figure unknown: `none`."""
    return "none" if broker_id is None else broker_id


@renders("ControllerElections")
def controller_elections_view(events: list[ElectionEvent]) -> View:
    rows = [[when(e.at_ms), e.broker_name, master_name(e.old_master), master_name(e.new_master), e.master_epoch, e.cause,
             None if e.unwritable_ms is None else f"{e.unwritable_ms / 1000:.3f}s"] for e in events]
    data = {"elections": [{"atMs": e.at_ms, "brokerName": e.broker_name, "oldMaster": e.old_master,
                           "newMaster": e.new_master, "masterEpoch": e.master_epoch, "cause": e.cause,
                           "unwritableMs": e.unwritable_ms} for e in events]}
    return View("ControllerElections", [Column("WHEN"), Column("BROKER"), Column("OLD MASTER", True),
                                        Column("NEW MASTER", True), Column("MASTER EPOCH", True),
                                        Column("CAUSE"), Column("UNWRITABLE", True)], rows, data)


@renders("ControllerConfig")
def controller_config_view(configs: dict[str, dict[str, str]], unreachable: list[Unreachable] | None = None) -> View:
    """Each controller's settings (controller address -> key -> value), keys sorted; a controller that did not
    answer makes the view partial, named."""
    rows = [[a, k, v] for a, conf in configs.items() for k, v in sorted(conf.items())]
    return View("ControllerConfig", [Column("CONTROLLER"), Column("KEY"), Column("VALUE")], rows,
                {"controllers": [{"address": a, "config": dict(sorted(c.items()))} for a, c in configs.items()]},
                unreachable=list(unreachable or []))


@renders("BrokerEpochs")
def broker_epochs_view(found: list[BrokerEpochs], unreachable: list[Unreachable] | None = None) -> View:
    """One row per epoch; the last epoch of a broker is still open: it ends at the broker's max offset. A broker
    that did not answer makes the view partial, named."""
    rows = [[b.broker_name, b.broker_id, b.broker_addr, e.epoch, e.start_offset,
             b.max_offset if i == len(b.epochs) - 1 else e.end_offset, b.max_offset]
            for b in found for i, e in enumerate(b.epochs)]
    data = {"brokers": [{"clusterName": b.cluster_name, "brokerName": b.broker_name, "brokerAddr": b.broker_addr,
                         "brokerId": b.broker_id, "maxOffset": b.max_offset,
                         "epochs": [{"epoch": e.epoch, "startOffset": e.start_offset, "endOffset": e.end_offset}
                                    for e in b.epochs]} for b in found]}
    return View("BrokerEpochs", [Column("BROKER"), Column("ID", True), Column("ADDRESS"), Column("EPOCH", True),
                                 Column("START OFFSET", True), Column("END OFFSET", True),
                                 Column("MAX OFFSET", True)], rows, data, unreachable=list(unreachable or []))
