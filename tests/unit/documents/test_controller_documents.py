"""The controller-mode documents, rendered from hand-made models (no controller)."""

from __future__ import annotations

from support.documents import check

from mqtools.cli.output import plain
from mqtools.client.admin.models.controller import (
    BrokerEpochs,
    BrokerSetState,
    ControllerMetadata,
    Election,
    ElectionEvent,
    Epoch,
    Replica,
    broker_epochs_view,
    controller_config_view,
    controller_elections_view,
    controller_metadata_view,
    election_view,
    sync_state_sets_view,
)
from mqtools.common.presentation import when


def test_controller_metadata_of_a_leader_and_of_one_without_a_leader() -> None:
    peers = {"n0": "10.0.0.9:9878", "n1": "10.0.0.8:9878"}
    view = controller_metadata_view([ControllerMetadata("10.0.0.9:9878", "group1", "n0", "10.0.0.9:9878", True, peers),
                                     ControllerMetadata("10.0.0.8:9878", None, None, None, False, peers)])
    doc = check(view)
    assert view.rows[0] == ["10.0.0.9:9878", "group1", "n0", "10.0.0.9:9878", True, 2]
    assert view.rows[1][1:4] == [None, None, None]
    assert doc["controllers"][1] == {"address": "10.0.0.8:9878", "group": None, "leaderId": None,
                                     "leaderAddress": None, "isLeader": False, "peers": peers}
    assert plain(view).splitlines()[2].split() == ["10.0.0.8:9878", "n/a", "n/a", "n/a", "no", "2"]


def test_sync_state_sets_name_the_replicas_and_the_sets_the_controller_does_not_know() -> None:
    sets = [BrokerSetState("broker-a", 0, "10.0.0.1:10911", 3, 4, [
                Replica(0, "10.0.0.1:10911", True, True), Replica(1, "10.0.0.2:10911", True, False),
                Replica(2, "10.0.0.6:10911", False, False)]),
            BrokerSetState("broker-b", None, None, 1, 1, [])]
    view = sync_state_sets_view(sets, ["broker-a", "broker-b", "broker-x"])
    doc = check(view)
    assert view.rows[0] == ["broker-a", 0, "10.0.0.1:10911", 3, 4, "0", "1,2", "2"]
    assert view.rows[1] == ["broker-b", None, None, 1, 1, None, None, None]
    assert doc["brokerSets"][1]["masterBrokerId"] is None and doc["brokerSets"][1]["replicas"] == []
    assert doc["brokerSets"][0]["replicas"][2] == {"brokerId": 2, "address": "10.0.0.6:10911", "alive": False,
                                                   "inSync": False}
    assert view.footer == ["broker-x: the controller does not know this broker set"]


def test_election_that_kept_the_master_and_one_with_no_master() -> None:
    kept = election_view(Election("broker-a", 0, "10.0.0.1:10911", 3, 4, False))
    check(kept)
    assert kept.footer == ["broker-a: the master did not change"]
    view = election_view(Election("broker-a", None, None, None, None, True))
    doc = check(view)
    assert view.rows == [["broker-a", None, None, None, None, True]] and view.footer == []
    assert (doc["masterBrokerId"], doc["masterAddress"], doc["masterEpoch"], doc["changed"]) == (None, None, None, True)


def test_controller_elections_oldest_first_with_unknown_unwritable_time() -> None:
    view = controller_elections_view([ElectionEvent(1_700_000_000_000, "broker-a", 0, 1, 4, "controller",
                                                    1_699_999_998_500),
                                      ElectionEvent(1_700_000_100_000, "broker-a", 1, None, 5, "admin")])
    doc = check(view)
    assert view.rows[0] == [when(1_700_000_000_000), "broker-a", 0, 1, 4, "controller", "1.500s"]
    assert view.rows[1][3] == "none" and view.rows[1][6] is None
    assert doc["elections"][0]["unwritableMs"] == 1500
    assert doc["elections"][1]["newMaster"] is None and doc["elections"][1]["unwritableMs"] is None


def test_controller_config_sorted_per_controller() -> None:
    view = controller_config_view({"10.0.0.9:9878": {"z": "1", "a": "x"}, "10.0.0.8:9878": {}})
    doc = check(view)
    assert view.rows == [["10.0.0.9:9878", "a", "x"], ["10.0.0.9:9878", "z", "1"]]
    assert doc["controllers"] == [{"address": "10.0.0.9:9878", "config": {"a": "x", "z": "1"}},
                                  {"address": "10.0.0.8:9878", "config": {}}]
    assert list(doc["controllers"][0]["config"]) == ["a", "z"]


def test_broker_epochs_the_open_epoch_ends_at_the_max_offset() -> None:
    view = broker_epochs_view([BrokerEpochs("DefaultCluster", "broker-a", "10.0.0.1:10911", 0,
                                            [Epoch(1, 0, 100), Epoch(2, 100, -1)], 250),
                               BrokerEpochs("DefaultCluster", "broker-b", "10.0.0.3:10911", 0, [], 0)])
    doc = check(view)
    assert view.rows == [["broker-a", 0, "10.0.0.1:10911", 1, 0, 100, 250],
                         ["broker-a", 0, "10.0.0.1:10911", 2, 100, 250, 250]]
    assert doc["brokers"][0]["epochs"][1] == {"epoch": 2, "startOffset": 100, "endOffset": -1}
    assert doc["brokers"][1]["epochs"] == [] and doc["brokers"][1]["clusterName"] == "DefaultCluster"
