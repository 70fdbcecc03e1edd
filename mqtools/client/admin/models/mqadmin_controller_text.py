"""The controller-mode answers as Apache 5's mqadmin prints them: getControllerMetaData, getSyncStateSet,
electMaster and getBrokerEpoch (tab-separated `#Label` lines, Java's toString of ReplicaIdentity and EpochEntry)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqtools.common.javatext import java_null

if TYPE_CHECKING:
    from mqtools.client.admin.models.controller import (
        BrokerEpochs,
        BrokerSetState,
        ControllerMetadata,
        Election,
    )


def controller_metadata_text(meta: ControllerMetadata) -> str:
    """getControllerMetaData: the group, the leader, then each peer."""
    text = (f"\n#ControllerGroup\t{java_null(meta.group)}\n#ControllerLeaderId\t{java_null(meta.leader_id)}"
            f"\n#ControllerLeaderAddress\t{java_null(meta.leader_address)}")
    return text + "".join(f"\n#Peer:\t{pid}:{peer}" for pid, peer in meta.peers.items()) + "\n"


def sync_state_set_lines(b: BrokerSetState) -> list[str]:
    """getSyncStateSet for one broker set: its master and epochs, then each replica in or out of the set."""
    in_sync = [r for r in b.replicas if r.in_sync]
    head = (f"\n#brokerName\t{b.broker_name}\n#MasterBrokerId\t{java_null(b.master_broker_id)}\n#MasterAddr\t"
            f"{java_null(b.master_address)}\n#MasterEpoch\t{b.master_epoch}\n#SyncStateSetEpoch\t"
            f"{b.sync_state_set_epoch}\n#SyncStateSetNums\t{len(in_sync)}")
    return [head] + [(f"\n{'InSyncReplica' if r.in_sync else 'NotInSyncReplica'}:\tReplicaIdentity{{brokerName="
                      f"'{b.broker_name}', brokerId={r.broker_id}, brokerAddress='{r.address}', "
                      f"alive={str(r.alive).lower()}}}") for r in b.replicas]


def election_text(cluster: str, broker_name: str, e: Election) -> str:
    """electMaster's answer: the set's new master and epochs."""
    return (f"\n#ClusterName\t{cluster}\n#BrokerName\t{broker_name}\n#BrokerMasterAddr\t{java_null(e.master_address)}"
            f"\n#MasterEpoch\t{java_null(e.master_epoch)}\n#SyncStateSetEpoch\t{java_null(e.sync_state_set_epoch)}")


def broker_epochs_text(b: BrokerEpochs) -> str:
    """getBrokerEpoch for one broker: its epoch entries, the last one ending at the broker's max offset."""
    text = (f"\n#clusterName\t{b.cluster_name}\n#brokerName\t{b.broker_name}\n#brokerAddr\t{b.broker_addr}"
            f"\n#brokerId\t{b.broker_id}")
    for i, e in enumerate(b.epochs):
        end = b.max_offset if i == len(b.epochs) - 1 else e.end_offset
        text += f"\n#Epoch: EpochEntry{{epoch={e.epoch}, startOffset={e.start_offset}, endOffset={end}}}"
    return text + "\n"
