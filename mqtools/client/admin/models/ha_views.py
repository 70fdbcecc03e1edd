"""The replication documents (`HAStatus`, `HAReady`), rendered from the models of `ha`, beside which
they would not fit: per slave the master's figures, the derived ones and the slave's own view; a
verdict with its checks and the exit code scripts get for it."""

from __future__ import annotations

from typing import Any

from mqtools.client.admin.models.ha import (
    NOT_SAFE,
    SAFE,
    UNKNOWN,
    ControllerState,
    ReplicationGroup,
    SlaveReplication,
)
from mqtools.client.admin.models.ha_readiness import HAReadiness
from mqtools.common.exitcodes import EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE
from mqtools.common.presentation import Column, Unreachable, View, renders, when

EXIT_BY_VERDICT = {SAFE: EXIT_OK, NOT_SAFE: EXIT_REFUSED, UNKNOWN: EXIT_UNREACHABLE}
"""How `mq admin ha ready` exits for each verdict (its document says it too)."""
STATUS_COLUMNS = [
    Column("BROKER"), Column("MASTER"), Column("SLAVE"), Column("ACK OFFSET", True), Column("DIFF", True),
    Column("DIFF MSGS", True), Column("KB/S", True), Column("CATCH-UP", True), Column("IN SYNC"), Column("TREND"),
    Column("FOLLOWS"), Column("MAX OFFSET", True), Column("LAST READ"), Column("LAST WRITE"),
]


def _seconds(value: float | None) -> str | None:
    """Hundredths below ten seconds: a catch-up of 20 ms is not 0.0s."""
    if value is None:
        return None
    return f"{value:.2f}s" if value < 10 else f"{value:.1f}s"


def _kb(value: float | None) -> float | None:
    return None if value is None else value / 1024


def slave_json(s: SlaveReplication) -> dict[str, Any]:
    v = s.slave
    return {
        "connection": s.connection, "brokerAddr": v.broker_addr if v else None, "brokerId": v.broker_id if v else None,
        "ackOffset": s.ack_offset, "diffBytes": s.diff_bytes, "diffMessages": s.diff_messages,
        "transferBytesPerSecond": s.transfer_bytes_per_s, "catchUpSeconds": s.catch_up_s, "inSync": s.in_sync,
        "trend": s.trend, "transferFromWhere": s.transfer_from,
        "samples": [{"t": at, "diffBytes": diff} for at, diff in s.samples],
        "slaveReport": None if v is None else {
            "masterHaAddr": v.master_ha_addr, "maxOffset": v.max_offset,
            "transferBytesPerSecond": v.transfer_bytes_per_s, "lastReadMs": v.last_read_ms,
            "lastWriteMs": v.last_write_ms, "connected": v.connected, "error": v.error},
    }


def group_json(g: ReplicationGroup) -> dict[str, Any]:
    return {"cluster": g.cluster, "brokerName": g.broker_name, "masterAddr": g.master_addr, "role": g.role,
            "commitLogMaxOffset": g.max_offset, "inSyncSlaves": g.in_sync_slaves,
            "averageMessageSize": g.average_message_size, "error": g.error, "source": g.source,
            "controller": None if g.controller is None else controller_json(g.controller),
            "slaves": [slave_json(s) for s in g.slaves]}


def controller_json(c: ControllerState) -> dict[str, Any]:
    return {"controllers": c.controllers, "masterBrokerId": c.master_broker_id, "masterEpoch": c.master_epoch,
            "syncStateSet": c.sync_state_set, "syncStateSetEpoch": c.sync_state_set_epoch, "error": c.error}


def controller_line(g: ReplicationGroup) -> str | None:
    """One footer line for a controller-mode group: its master epoch and SyncStateSet at the controllers."""
    c = g.controller
    if c is None:
        return None
    if c.error:
        return f"{g.broker_name}: controller mode; the controllers ({';'.join(c.controllers)}) not known: {c.error}"
    return (f"{g.broker_name}: controller mode: master id {c.master_broker_id}, master epoch {c.master_epoch}, "
            f"SyncStateSet {c.sync_state_set} (epoch {c.sync_state_set_epoch})")


def _once(missed: list[Unreachable]) -> list[Unreachable]:
    """Each node once, as first named: every group behind the same controllers names them."""
    first: dict[tuple[str | None, str | None], Unreachable] = {}
    for u in missed:
        first.setdefault((u.broker_name, u.addr), u)
    return list(first.values())


def _row(g: ReplicationGroup, s: SlaveReplication | None) -> list[Any]:
    head = [g.broker_name, g.master_addr]
    if s is None:
        return [*head, *([None] * (len(STATUS_COLUMNS) - 2))]
    v = s.slave
    return [*head, v.broker_addr if v else s.connection, s.ack_offset, s.diff_bytes, s.diff_messages,
            _kb(s.transfer_bytes_per_s), _seconds(s.catch_up_s), s.in_sync, s.trend,
            v.master_ha_addr if v else None, v.max_offset if v else None,
            when(v.last_read_ms) if v else None, when(v.last_write_ms) if v else None]


@renders("HAStatus")
def ha_status_view(groups: list[ReplicationGroup], window: float) -> View:
    """One row per slave (a group without one: a row of its own); `window` is the trend's, in seconds."""
    rows = [_row(g, s) for g in groups for s in (g.slaves or [None])]
    missed = _once([*(u for g in groups for u in g.unreachable),
                   *(u for g in groups if g.controller for u in g.controller.unreachable)])
    said = {u.addr for u in missed}  # named once, in the partial line
    footer = [f"{g.broker_name or g.master_addr}: master {g.master_addr or 'not registered'}: {g.error}"
              for g in groups if g.error and g.master_addr not in said]
    footer += [f"{g.broker_name}: no slave registered (nothing replicates {g.master_addr})" for g in groups
               if g.master_addr and not g.slaves and not g.error]
    footer += [f"{s.slave.broker_addr}: {s.slave.error}" for g in groups for s in g.slaves
               if s.slave is not None and s.slave.error and s.slave.broker_addr not in said]
    footer += [f"{g.broker_name}: from each broker's runtime commitLogMaxOffset (the master less the slave's); "
               "the master has no GET_BROKER_HA_STATUS (Apache 4.x)" for g in groups if g.from_runtime_info]
    footer += [line for g in groups if (line := controller_line(g))]
    footer.append(f"trend over {window:g}s; DIFF MSGS over each master's average stored message size; "
                  "CATCH-UP is DIFF over the transfer speed")
    return View("HAStatus", STATUS_COLUMNS, rows,
                {"windowSeconds": window, "groups": [group_json(g) for g in groups]}, footer=footer,
                unreachable=missed)


@renders("HAReady")
def ha_ready_view(r: HAReadiness, window: float) -> View:
    master = r.group.master_addr if r.group else None
    chosen = r.slave
    rows = [[c.name, {True: "ok", False: "FAIL", None: "info"}[c.ok], c.detail] for c in r.checks]
    data = {
        "brokerName": r.broker_name, "verdict": r.verdict, "safe": r.safe, "exitCode": EXIT_BY_VERDICT[r.verdict],
        "masterAddr": master, "role": r.group.role if r.group else None,
        "slave": None if chosen is None else (chosen.slave.broker_addr if chosen.slave else chosen.connection),
        "maxDiffBytes": r.max_diff, "maxCatchUpSeconds": r.max_catchup_s, "windowSeconds": window,
        "lossBytes": r.loss_bytes, "lossMessages": r.loss_messages,
        "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in r.checks],
        "group": group_json(r.group) if r.group else None,
    }
    title = (f"{r.broker_name}: cannot tell whether stopping the master is safe" if r.verdict == UNKNOWN
             else f"{r.broker_name}: {r.verdict.upper()} to stop the master {master}")
    return View("HAReady", [Column("CHECK"), Column("RESULT"), Column("DETAIL")], rows, data, title=title,
                footer=[f"verdict: {r.verdict} (exit {EXIT_BY_VERDICT[r.verdict]})"])
