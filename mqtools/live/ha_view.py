"""`mq top`'s HA view: per master, each slave with the master's figures for its connection and those `mq admin ha
status` derives from them; a set whose master left as red rows of its own; controller-mode columns and notes."""

from __future__ import annotations

import time

from mqtools.client.admin.models.brokers import BrokerRuntime, ClusterSnapshot
from mqtools.client.admin.models.controller import ElectionEvent, master_name
from mqtools.client.admin.models.ha import (
    GROWING,
    RUNTIME_INFO,
    ControllerView,
    HAStatus,
    SlaveConnection,
    diff_messages,
    pair_slaves,
    silent_slave,
    trend_of,
)
from mqtools.common.presentation import Unreachable, partial_note
from mqtools.live.cells import blank, cell, stale_note
from mqtools.live.state import LiveState
from mqtools.live.tables import CRIT, NA, OK, WARN, Cell, Column, Row, Table, age, na, size, sparkline

HA_COLUMNS = [
    Column("MASTER", key="master"), Column("MASTER ADDR", key="masterAddr"), Column("SLAVE", key="slave"),
    Column("ACK OFFSET", True, key="ackOffset"), Column("DIFF", True, key="diffBytes"),
    Column("DIFF MSGS", True, key="diffMessages"), Column("SPEED", True, key="speedBytesPerS"),
    Column("CATCH-UP", True, key="catchUpMs"), Column("IN SYNC", key="inSync"), Column("TREND", key="diffTrend"),
    Column("HISTORY", key="diffHistory"),
]
#: Shown when some group is in controller mode.
CONTROLLER_COLUMNS = [Column("EPOCH", True, key="masterEpoch"), Column("IN SSS", key="inSyncStateSet")]
HISTORY_AT = len(HA_COLUMNS) - 1
HA_COLUMNS += CONTROLLER_COLUMNS
#: Elections of a controller-mode group listed under the HA view, newest last.
ELECTIONS_SHOWN = 5
TREND_WINDOW = 10.0
"""Seconds of diff samples the trend is taken over (least squares, as `mq admin ha status`)."""


def ha(state: LiveState, mono: float) -> Table:
    """Per master, each slave: the master's figures for its connection, and those `mq admin ha status`
    derives from them (models.ha: messages, catch-up, trend, which slave holds which connection)."""
    snap: ClusterSnapshot | None = state.value("snapshot")
    table = Table("ha", "HA: slaves per master", HA_COLUMNS, [])
    table.notes += stale_note("name servers", state.slot("snapshot"), mono)
    for master in snap.masters() if snap else []:
        slot = state.slot(f"ha:{master.addr}")
        status: HAStatus | None = slot.value
        registered = [b for b in snap.group(master.broker_name) if not b.is_master] if snap else []
        head = [Cell(master.broker_name, master.broker_name), Cell(master.addr, master.addr)]
        if slot.error is not None:
            table.notes.append(f"{master.broker_name} {master.addr}: {slot.error}")
        if status is None:
            text = "unreachable" if slot.error else "waiting"
            table.rows.append(Row(master.addr, [*head, Cell(None, text, CRIT if slot.error else OK),
                                                *blank(len(HA_COLUMNS) - 3)]))
            continue
        if status.source == RUNTIME_INFO:
            table.notes.append(f"{master.broker_name}: diff from runtime offsets (the master has no "
                               "GET_BROKER_HA_STATUS, as Apache 4.x); speed and in-sync n/a")
        ctl: ControllerView | None = state.value(f"controller:{master.addr}")
        table.notes += _controller_notes(master.broker_name, ctl)
        rt: BrokerRuntime | None = state.value(f"runtime:{master.addr}")
        own = [state.value(f"runtime:{b.addr}") for b in registered]
        pairs = pair_slaves([(c.addr, c.ack_offset) for c in status.slaves],
                            [(b.addr, r.commitlog_max_offset if r else None) for b, r in zip(registered, own,
                                                                                            strict=True)])
        if not pairs:
            table.rows.append(Row(f"{master.addr}>", [*head, Cell(None, "no slave"), *blank(5),
                                                      Cell(None, NA), Cell(None, NA), Cell([], ""),
                                                      *_controller_cells(ctl, None)],
                                  stale=slot.stale))
        for ci, si in pairs:
            slave = registered[si] if si is not None else None
            if ci is None:
                assert slave is not None
                label = f"{slave.addr} not connected"
                table.rows.append(Row(f"{master.addr}>{slave.addr}", [
                    *head, Cell(slave.addr, label), *blank(5), Cell(False, "no", CRIT), Cell(None, NA),
                    Cell([], ""), *_controller_cells(ctl, slave.addr)], stale=slot.stale))
                continue
            conn = status.slaves[ci]
            label = slave.addr if slave is not None else conn.addr
            if conn.overdue:  # hung or cut off: the master's figures for it are as of its last report
                table.notes.append(f"{master.broker_name}: slave {label}: {silent_slave(conn.silent_ms)}")
            table.rows.append(Row(f"{master.addr}>{conn.addr}",
                                  [*head, Cell(label, label), *_slave_cells(state, master.addr, conn, rt, mono),
                                   *_controller_cells(ctl, slave.addr if slave is not None else None)],
                                  stale=slot.stale or conn.overdue))
    for _cluster, name in snap.without_master() if snap else []:
        _no_master_ha_rows(state, snap, name, table, mono)
    if snap is not None and not snap.masters():
        table.notes.append("no master is registered with the name servers")
    if snap is None or not any(state.value(f"controller:{m.addr}") for m in snap.masters()):
        _drop_controller_columns(table)  # no group in controller mode: the classic view, no n/a columns
    return table


def _no_master_ha_rows(state: LiveState, snap: ClusterSnapshot, name: str, table: Table, mono: float) -> None:
    """A set whose master is gone: a red row per slave, and a note with how long the master has been missing
    (since `mq top` last saw it registered) and how far each slave's own commitlog reaches."""
    last_seen = [seen for row, seen in state.seen_brokers.values() if row.broker_name == name and row.broker_id == 0
                 and row.addr not in {b.addr for b in snap.brokers}]
    since = f"missing for {age((mono - max(last_seen)) * 1000)}" if last_seen else "not seen by this session"
    head = [Cell(name, name), Cell(None, "no master", CRIT)]
    for slave in snap.group(name):
        rt: BrokerRuntime | None = state.value(f"runtime:{slave.addr}")
        offset = rt.commitlog_max_offset if rt else None
        figures = blank(len(HA_COLUMNS) - 3)
        figures[HISTORY_AT - 3] = Cell([], "")  # nothing to follow without a master: no history, not an unknown
        table.rows.append(Row(f"{name}/no-master>{slave.addr}", [*head, Cell(slave.addr, slave.addr), *figures]))
        table.notes.append(f"{name}: no master registered ({since}); slave {slave.addr} holds commitlog up to "
                           f"{na(offset)}")


def _drop_controller_columns(table: Table) -> None:
    keep = len(HA_COLUMNS) - len(CONTROLLER_COLUMNS)
    table.columns = table.columns[:keep]
    for row in table.rows:
        row.cells = row.cells[:keep]


def _controller_cells(ctl: ControllerView | None, slave_addr: str | None) -> list[Cell]:
    """EPOCH and IN SSS: the group's master epoch, and whether the slave is in the SyncStateSet (the
    controllers elect only from it); n/a outside controller mode or when the controllers cannot be asked."""
    if ctl is None or ctl.state.error is not None:
        return blank(2)
    epoch = ctl.state.master_epoch
    inside = None if slave_addr is None else slave_addr in ctl.state.in_sync_addrs
    return [Cell(epoch, NA if epoch is None else str(epoch)),
            Cell(inside, NA if inside is None else "yes" if inside else "no", WARN if inside is False else OK)]


def _controller_notes(broker_name: str, ctl: ControllerView | None) -> list[str]:
    """The group at its controllers, and its last elections (when, old and new master, epoch, why, how long
    it could not take writes: still, after the last one when it found no master)."""
    if ctl is None:
        return []
    c = ctl.state
    if c.error is not None:  # the set's epoch and SyncStateSet unknown: worded as every partial read
        missed = c.unreachable or [Unreachable(broker_name, None, f"controllers: {c.error}")]
        return partial_note(missed, f"{broker_name} is in controller mode: its epoch and SyncStateSet are unknown")
    lines = [(f"{broker_name}: controller mode, leader {na(ctl.leader)}, master id {na(c.master_broker_id)}, "
             f"epoch {na(c.master_epoch)}, SyncStateSet {c.sync_state_set} (epoch {na(c.sync_state_set_epoch)})")]
    elections = ctl.elections or []
    for e in elections[-ELECTIONS_SHOWN:]:
        lines.append(f"{broker_name}: election {_clock(e.at_ms)} master {master_name(e.old_master)} -> "
                     f"{master_name(e.new_master)}, epoch {e.master_epoch}, {e.cause}, "
                     f"{_unwritable(e, e is elections[-1])}")
    return lines


def _unwritable(e: ElectionEvent, last: bool) -> str:
    """How long the set could not take writes; after a last election that found no master, it still cannot."""
    if e.new_master is None and last:
        return "still unwritable"
    return f"unwritable {NA if e.unwritable_ms is None else f'{e.unwritable_ms / 1000:.3f}s'}"


def _clock(at_ms: int) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at_ms / 1000)) + f".{at_ms % 1000:03d}"


def _slave_cells(state: LiveState, master: str, conn: SlaveConnection, rt: BrokerRuntime | None,
                 mono: float) -> list[Cell]:
    history = state.series_of(f"ha-diff:{master}:{conn.addr}")
    recent = [(t, int(v)) for t, v in history.points if mono - t <= TREND_WINDOW]
    trend = trend_of(recent)
    speed = conn.transfer_bytes_per_s
    catch_up = conn.catch_up(speed)
    return [
        cell(conn.ack_offset), Cell(conn.diff_bytes, size(conn.diff_bytes)),
        cell(diff_messages(conn.diff_bytes, rt.average_message_size if rt else None)),
        Cell(speed, NA if speed is None else f"{size(speed)}/s"),
        Cell(None if catch_up is None else int(catch_up * 1000), NA if catch_up is None else age(catch_up * 1000)),
        Cell(conn.in_sync, NA if conn.in_sync is None else "yes" if conn.in_sync else "no",
             CRIT if conn.in_sync is False else OK),
        Cell(trend, trend or NA, WARN if trend == GROWING else OK),
        Cell(history.values()[-16:], sparkline(history.values())),
    ]
