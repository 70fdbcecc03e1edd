"""A slave that stopped reporting to its master (hung, SIGSTOPped, cut off) before the housekeeping drops it: the
master gives its last report age and `reportOverdue` (inSync false); `mq admin ha status`, `ha ready` and `mq top`
read its in-sync state, speed and catch-up as unknown, not as frozen figures, and name it with how long it has been
silent. They read it in sync, at speed 0 and caught up, and `ha ready` could say safe."""

from __future__ import annotations

from mqtools.client.admin.ha import _group, _Target
from mqtools.client.admin.models.brokers import BrokerRow, ClusterSnapshot
from mqtools.client.admin.models.ha import HA_STATUS, NOT_SAFE, SAFE, HAStatus, SlaveView, silent_slave
from mqtools.client.admin.models.ha_readiness import assess
from mqtools.live.ha_view import ha
from mqtools.live.state import LiveState, Outcome
from mqtools.live.tables import Table

MASTER, SLAVE, CONN = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.2:51000"


def answer(*, overdue: bool, age_ms: int = 3200) -> dict:
    """GET_BROKER_HA_STATUS of a master whose one slave is caught up (its figures frozen when it went silent)."""
    return {"master": True, "masterCommitLogMaxOffset": 5000, "inSyncSlaveNums": 0 if overdue else 1,
            "haConnectionInfo": [{"addr": CONN, "slaveAckOffset": 5000, "diff": 0, "inSync": not overdue,
                                  "transferredByteInSecond": 0, "transferFromWhere": 5000,
                                  "lastReportAgeMs": age_ms, "reportOverdue": overdue}]}


def test_an_overdue_connection_reads_in_sync_and_speed_unknown() -> None:
    (conn,) = HAStatus.from_json(answer(overdue=True)).slaves
    assert conn.in_sync is None and conn.transfer_bytes_per_s is None
    assert conn.overdue and conn.silent_ms == 3200 and conn.ack_offset == 5000 and conn.diff_bytes == 0
    (live,) = HAStatus.from_json(answer(overdue=False, age_ms=120)).slaves
    assert live.in_sync is True and live.transfer_bytes_per_s == 0 and not live.overdue and live.silent_ms == 120
    old = answer(overdue=False)  # a master without the fields (Apache's): as it says
    del old["haConnectionInfo"][0]["reportOverdue"], old["haConnectionInfo"][0]["lastReportAgeMs"]
    (apache,) = HAStatus.from_json(old).slaves
    assert apache.in_sync is True and not apache.overdue and apache.silent_ms is None


def _replication(overdue: bool):
    target = _Target("C", "broker-a", MASTER, {1: SLAVE})
    status = HAStatus.from_json(answer(overdue=overdue))
    view = SlaveView(SLAVE, 1, "10.0.0.1:10912", 5000, 0.0, 1, 1, True)
    return _group(target, [(0.0, status), (0.5, status)], None, {"brokerRole": "SYNC_MASTER"}, [view], 0.5,
                  HA_STATUS, {})


def test_ha_status_and_ready_name_the_silent_slave_and_never_call_it_safe() -> None:
    group = _replication(overdue=True)
    (s,) = group.slaves
    assert s.in_sync is None and s.catch_up_s is None and s.transfer_bytes_per_s is None
    assert s.overdue and s.silent_ms == 3200 and s.ack_offset == 5000
    (missed,) = group.unreachable  # the document is partial, naming the slave and its silence
    assert missed.addr == SLAVE and "3.2s" in missed.reason
    verdict = assess(group)
    assert verdict.verdict == NOT_SAFE
    (check,) = [c for c in verdict.checks if c.name == "in sync"]
    assert check.ok is False and SLAVE in check.detail and "3.2s" in check.detail
    assert assess(_replication(overdue=False)).verdict == SAFE  # the same slave reporting: safe


def _top_ha_table() -> Table:
    """mq top's HA view of the set whose slave is silent."""
    state = LiveState()
    snap = ClusterSnapshot(["ns:9876"], {"C": ["broker-a"]},
                           [BrokerRow("C", "broker-a", 0, MASTER), BrokerRow("C", "broker-a", 1, SLAVE)], True)
    state.apply(Outcome("snapshot", snap, None, 1000.0, 10.0))
    state.apply(Outcome(f"ha:{MASTER}", HAStatus.from_json(answer(overdue=True)), None, 1000.0, 10.0))
    return ha(state, 10.5)


def test_mq_top_marks_the_silent_slave_stale_with_a_note() -> None:
    table = _top_ha_table()
    (row,) = table.rows
    assert row.stale
    assert table.value(row, "inSync") is None and table.value(row, "speedBytesPerS") is None
    assert table.value(row, "catchUpMs") is None
    assert any(SLAVE in n and "3.2s" in n for n in table.notes), table.notes


def test_ha_ready_says_why_a_slave_is_not_replicating() -> None:
    """The slave's own status says why its last connection ended (refused as ahead of its master...)."""
    why = "the master has only 1703 bytes this slave can follow, this slave has 3288: ... wipe this slave's store"
    slave_answer = {"master": False, "haConnectionInfo": [], "haClientRuntimeInfo": {
        "masterAddr": "10.0.0.1:10912", "maxOffset": 3288, "activated": False, "lastCloseReason": why}}
    client = HAStatus.from_json(slave_answer).client
    assert client is not None and client.close_reason == why and client.activated is False
    target = _Target("C", "broker-a", MASTER, {1: SLAVE})
    master = HAStatus.from_json({"master": True, "masterCommitLogMaxOffset": 7103, "haConnectionInfo": []})
    view = SlaveView(SLAVE, 1, client.master_addr, 3288, 0.0, 1, 1, False, close_reason=client.close_reason)
    group = _group(target, [(0.0, master)], None, {"brokerRole": "SYNC_MASTER"}, [view], 0.0, HA_STATUS, {})
    (check,) = [c for c in assess(group).checks if c.name == "slave answers"]
    assert check.ok is False and why in check.detail


def test_every_view_says_a_silent_slave_in_the_same_words() -> None:
    """`ha status`'s partial reason, `ha ready`'s check and mq top's note: one sentence from the model."""
    words = silent_slave(3200)
    (missed,) = _replication(overdue=True).unreachable
    (check,) = [c for c in assess(_replication(overdue=True)).checks if c.name == "in sync"]
    (note,) = _top_ha_table().notes
    assert words in missed.reason and words in check.detail and words in note
    assert "3.2s" in words and "in sync unknown" in words
