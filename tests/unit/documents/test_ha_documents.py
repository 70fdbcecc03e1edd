"""The replication documents (ha status, ha ready), rendered from hand-made models (no cluster)."""

from __future__ import annotations

from support.documents import check

from mqtools.cli.output import plain
from mqtools.client.admin.models.ha import (
    RUNTIME_INFO,
    ControllerState,
    ReplicationGroup,
    SlaveReplication,
    SlaveView,
)
from mqtools.client.admin.models.ha_readiness import assess
from mqtools.client.admin.models.ha_views import EXIT_BY_VERDICT, ha_ready_view, ha_status_view
from mqtools.common.exitcodes import EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE

SLAVE = SlaveView("10.0.0.2:10911", 1, "10.0.0.1:10912", 123_000, 2048.0, None, None, True)
IN_SYNC = SlaveReplication("10.0.0.2:50001", 123_000, 456, 2, 2048.0, 0.02, True, "steady", 0,
                           [(0.0, 500), (1.0, 456)], SLAVE)
STOPPED = SlaveReplication(None, None, None, None, None, None, None, None, None,
                           slave=SlaveView("10.0.0.6:10911", None, None, None, None, None, None, None, "connection refused"))
CONTROLLERS = ControllerState(["10.0.0.9:9878"], 0, 3, [0, 1], 4)


def group(**changes: object) -> ReplicationGroup:
    fields: dict = {"cluster": "DefaultCluster", "broker_name": "broker-a", "master_addr": "10.0.0.1:10911",
                    "role": "SYNC_MASTER", "max_offset": 123_456, "in_sync_slaves": 1, "average_message_size": 256.0,
                    "window_s": 2.0, "slaves": [IN_SYNC, STOPPED], "controller": CONTROLLERS}
    return ReplicationGroup(**{**fields, **changes})


def test_ha_status_one_row_per_slave_and_a_row_for_a_group_without_one() -> None:
    silent = group(broker_name="broker-b", master_addr="10.0.0.3:10911", role=None, max_offset=None,
                   in_sync_slaves=None, average_message_size=None, slaves=[], controller=None, error="timed out")
    view = ha_status_view([group(), silent], 2.0)
    doc = check(view, "ha status")
    assert view.rows[0] == ["broker-a", "10.0.0.1:10911", "10.0.0.2:10911", 123_000, 456, 2, 2.0, "0.02s", True,
                            "steady", "10.0.0.1:10912", 123_000, None, None]
    assert view.rows[1][2] == "10.0.0.6:10911" and view.rows[1][3:] == [None] * 11
    assert view.rows[2] == ["broker-b", "10.0.0.3:10911", *[None] * 12]
    assert plain(view).splitlines()[3].split()[2:] == ["n/a"] * 12
    first = doc["groups"][0]
    assert first["controller"] == {"controllers": ["10.0.0.9:9878"], "masterBrokerId": 0, "masterEpoch": 3,
                                   "syncStateSet": [0, 1], "syncStateSetEpoch": 4, "error": None}
    assert first["slaves"][0]["samples"] == [{"t": 0.0, "diffBytes": 500}, {"t": 1.0, "diffBytes": 456}]
    assert first["slaves"][0]["slaveReport"]["lastReadMs"] is None
    assert first["slaves"][1]["connection"] is None and first["slaves"][1]["slaveReport"]["error"] == "connection refused"
    assert doc["groups"][1]["commitLogMaxOffset"] is None and doc["groups"][1]["slaves"] == []
    assert view.footer == [
        "broker-b: master 10.0.0.3:10911: timed out",
        "10.0.0.6:10911: connection refused",
        "broker-a: controller mode: master id 0, master epoch 3, SyncStateSet [0, 1] (epoch 4)",
        ("trend over 2s; DIFF MSGS over each master's average stored message size; CATCH-UP is DIFF over the "
         "transfer speed")]


def test_ha_status_from_runtime_offsets_with_controllers_that_do_not_answer() -> None:
    slow = SlaveReplication("10.0.0.2:10911", 1000, 12_000_000, None, None, 12.5, False, None, None, slave=SLAVE)
    g = group(source=RUNTIME_INFO, slaves=[slow], controller=ControllerState(["10.0.0.9:9878"], None, None, [], None,
                                                                              "timed out"))
    view = ha_status_view([g], 0.0)
    doc = check(view, "ha status")
    assert view.rows[0][6:10] == [None, "12.5s", False, None]
    assert doc["groups"][0]["source"] == "runtimeInfo" and doc["groups"][0]["controller"]["masterEpoch"] is None
    assert view.footer[0].startswith("broker-a: from each broker's runtime commitLogMaxOffset")
    assert view.footer[1] == "broker-a: controller mode; the controllers (10.0.0.9:9878) not known: timed out"
    assert view.footer[2].startswith("trend over 0s;")


def test_ha_ready_safe_names_the_slave_and_exits_0() -> None:
    view = ha_ready_view(assess(group()), 2.0)
    doc = check(view)
    assert view.title == "broker-a: SAFE to stop the master 10.0.0.1:10911"
    assert (doc["verdict"], doc["safe"], doc["exitCode"], doc["slave"]) == ("safe", True, EXIT_OK, "10.0.0.2:10911")
    assert (doc["lossBytes"], doc["lossMessages"]) == (0, 0)
    assert view.rows[0] == ["master reachable", "ok", "10.0.0.1:10911 answers"]
    assert view.rows[-1][:2] == ["send mode", "info"]
    assert doc["group"]["brokerName"] == "broker-a" and view.footer == ["verdict: safe (exit 0)"]


def test_ha_ready_unknown_without_a_master_is_null_and_exits_3() -> None:
    view = ha_ready_view(assess(group(master_addr=None, slaves=[], controller=None)), 2.0)
    doc = check(view)
    assert view.title == "broker-a: cannot tell whether stopping the master is safe"
    assert (doc["safe"], doc["exitCode"], doc["masterAddr"], doc["slave"], doc["lossBytes"]) == (
        None, EXIT_UNREACHABLE, None, None, None)
    assert view.rows == [["master reachable", "FAIL", "no master of broker-a is registered with the name servers"]]
    assert view.footer == ["verdict: unknown (exit 3)"]


def test_ha_ready_not_safe_exits_1() -> None:
    behind = SlaveReplication("10.0.0.2:50001", 1000, 10_000_000, None, 0.0, None, False, "growing", 0, slave=SLAVE)
    doc = check(ha_ready_view(assess(group(slaves=[behind], role="ASYNC_MASTER")), 2.0))
    assert (doc["verdict"], doc["safe"], doc["exitCode"]) == ("not safe", False, EXIT_REFUSED)
    assert doc["lossBytes"] == 10_000_000 and doc["lossMessages"] is None
    assert EXIT_BY_VERDICT == {"safe": EXIT_OK, "not safe": EXIT_REFUSED, "unknown": EXIT_UNREACHABLE}
