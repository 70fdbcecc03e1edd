"""The views of a live cluster, built from a LiveState at one instant: brokers, HA, topics, groups,
name servers, and the drill-downs of a topic, a group and a broker (its verdict's findings).

Only ages and rates are computed here (a heartbeat's age moves on between refreshes; diffs and lags
turn into speeds and trends through the state's histories). Threshold levels: a heartbeat older than
30 s warns and older than 90 s is critical; a broker that cannot be asked, a slave not in sync and a
broker missing from a name server are critical; a diff or lag that grows warns.
"""

from __future__ import annotations

import time
from typing import Any

from mqtools.client.admin.models.brokers import BrokerRow, BrokerRuntime, ClusterSnapshot, broker_json
from mqtools.client.admin.models.groups import GroupSummary
from mqtools.client.admin.models.ha import (
    GROWING,
    RUNTIME_INFO,
    ControllerView,
    HAStatus,
    SlaveConnection,
    catch_up_seconds,
    diff_messages,
    pair_slaves,
    trend_of,
)
from mqtools.client.admin.models.live import NamesrvStatus, TopicOverview
from mqtools.common.perm import perm_to_string
from mqtools.live.collect import GroupDetail, TopicDetail
from mqtools.live.state import LiveState, Slot
from mqtools.live.tables import (
    CRIT,
    NA,
    OK,
    WARN,
    Cell,
    Column,
    Row,
    Table,
    age,
    na,
    num,
    percent,
    signed_rate,
    size,
    sparkline,
)
from mqtools.live.verdicts import broker_detail, broker_verdict, group_evidence, group_verdict, verdict_cell

HEARTBEAT_WARN_MS = 30_000
HEARTBEAT_CRIT_MS = 90_000
VIEWS = ("brokers", "ha", "topics", "groups", "namesrv")


def build(state: LiveState, view: str, target: str | None = None, now: float | None = None,
          wall: float | None = None) -> Table:
    """The table of a view (`target`: the topic or group a drill-down shows) at monotonic time `now`
    and wall-clock time `wall` (defaults: the clocks)."""
    mono = time.monotonic() if now is None else now
    wall_ms = (time.time() if wall is None else wall) * 1000
    if view == "topic" and target is not None:
        return topic_detail(state, target, mono, wall_ms)
    if view == "group" and target is not None:
        return group_detail(state, target, mono, wall_ms)
    if view == "broker" and target is not None:
        return broker_detail(state, target)
    return {"brokers": brokers, "ha": ha, "topics": topics, "groups": groups, "namesrv": namesrv}[view](state, mono)


def _since(slot: Slot, mono: float) -> float:
    """ms since the slot's value was read."""
    return 0.0 if slot.ok_mono is None else max(0.0, (mono - slot.ok_mono) * 1000)


def _stale_note(what: str, slot: Slot, mono: float) -> list[str]:
    if not slot.stale:
        return []
    held = f"; figures from {age(_since(slot, mono))} ago" if slot.ok_mono is not None else ""
    return [f"{what}: {slot.error}{held}"]


def _missing(probe: list[NamesrvStatus] | None, addr: str) -> list[str]:
    """Reachable name servers that do not list the broker."""
    return [s.addr for s in probe or [] if s.knows(addr) is False]


# -- brokers ---------------------------------------------------------------------------------------

#: The keys of a broker row, as `mq admin cluster list` has them (models.brokers.broker_json gives the figures
#: they share); HEARTBEAT and EXPIRES IN are aged here since the read, and a map per name server when several.
BROKER_COLUMNS = [
    Column("CLUSTER", key="cluster"), Column("BROKER", key="brokerName"), Column("ID", True, key="brokerId"),
    Column("ROLE", key="role"), Column("ADDR", key="addr"), Column("VERSION", key="version"),
    Column("HEARTBEAT", True, key="heartbeatAgeMs"), Column("EXPIRES IN", True, key="expiresInMs"),
    Column("IN TPS", True, key="inTps"), Column("OUT TPS", True, key="outTps"),
    Column("MAX OFFSET", True, key="commitLogMaxOffset"), Column("DISK", True, key="diskRatio"),
    Column("CPU", True, key="cpuPercent"), Column("RSS", True, key="rssBytes"), Column("FILES", True, key="openFiles"),
    Column("STATUS", key="status"), Column("VERDICT", key="verdict"),
]


def brokers(state: LiveState, mono: float) -> Table:
    snap_slot = state.slot("snapshot")
    snap: ClusterSnapshot | None = snap_slot.value
    probe: list[NamesrvStatus] | None = state.value("probe")
    procs: dict[str, Any] | None = state.value("procs")
    table = Table("brokers", "brokers", BROKER_COLUMNS, [])
    table.notes += _stale_note("name servers", snap_slot, mono)
    if snap is None:
        if not snap_slot.stale:
            table.notes.append("waiting for the first answer of the name servers")
        return table
    if not snap.brokers:
        table.notes.append("no broker is registered with the name servers")
    if not snap.live_table_available:
        table.notes.append("heartbeat ages: n/a (the name servers do not answer mq's private GET_BROKER_LIVE_TABLE)")
    present = {b.addr for b in snap.brokers}
    gone = [(row, seen) for addr, (row, seen) in state.seen_brokers.items() if addr not in present]
    listed = [(b, _since(snap_slot, mono), False) for b in snap.brokers]
    listed += [(row, (mono - seen) * 1000, True) for row, seen in gone]
    for b, elapsed, is_gone in sorted(listed, key=lambda x: (x[0].cluster, x[0].broker_name, x[0].broker_id)):
        slot = state.slot(f"runtime:{b.addr}")
        rt: BrokerRuntime | None = slot.value
        beat, expires = _heartbeat_cells(b, elapsed, _missing(probe, b.addr) if not is_gone else [])
        proc = (procs or {}).get(b.addr)
        status = Cell("ok", "ok")
        if is_gone:
            status = Cell("gone", "gone from the name servers", CRIT)
            table.notes.append(f"{b.broker_name}/{b.broker_id} {b.addr}: no longer registered with any name server "
                               "(its last heartbeat ages on)")
        elif slot.error is not None:
            status = Cell(slot.error, "stale" if rt is not None else "unreachable", CRIT)
            table.notes.append(f"{b.broker_name}/{b.broker_id} {b.addr}: {slot.error}")
        elif rt is None:
            status = Cell(None, "waiting")
        doc = broker_json(b, rt)
        cells = [
            Cell(doc["cluster"], b.cluster), Cell(doc["brokerName"], b.broker_name), Cell(doc["brokerId"], str(b.broker_id)),
            Cell(doc["role"], doc["role"].lower()), Cell(doc["addr"], b.addr),
            _cell(doc["version"]), beat, expires,
            _cell(doc["inTps"], num), _cell(doc["outTps"], num),
            _cell(doc["commitLogMaxOffset"]), _cell(doc["diskRatio"], percent),
            _cell(proc and proc.cpu_percent, lambda v: f"{v:.1f}%"), _cell(proc and proc.rss_bytes, size),
            _cell(proc and proc.open_files), status,
            verdict_cell(None if is_gone else broker_verdict(state, b.broker_name, b.addr)),
        ]
        table.rows.append(Row(b.addr, cells, stale=(slot.stale or is_gone) and rt is not None, drill=b.addr))
    for cluster, name in snap.without_master():
        table.rows.append(_no_master_row(cluster, name))
        table.notes.append(f"{name}: no master registered: its slaves serve reads only, sends and commits there "
                           "fail (mq admin diagnose cluster)")
    return table


def _no_master_row(cluster: str, name: str) -> Row:
    """A broker set without a master, as a red row of its own: the missing master is what the operator must see."""
    cells = [Cell(cluster, cluster), Cell(name, name), Cell(0, "0"), Cell("MASTER", "master"), Cell(None, NA)]
    cells += [Cell(None, NA) for _ in BROKER_COLUMNS[len(cells):-2]]
    cells += [Cell("no master", "no master", CRIT), Cell(None, NA)]
    return Row(f"{name}/no-master", cells)


def _cell(value: Any, fmt: Any = None, level: int = OK) -> Cell:
    """A figure formatted by `fmt`, or n/a."""
    if value is None:
        return Cell(None, NA, level)
    return Cell(value, fmt(value) if fmt else str(value), level)


def _heartbeat_cells(b: BrokerRow, elapsed_ms: float, missing: list[str]) -> tuple[Cell, Cell]:
    """The age at each name server (several: one after another) and the least time left before one
    of them would drop the broker."""
    ages: dict[str, int | None] = {}
    texts, level, expires = [], OK, []
    for ns, beat in b.heartbeats.items():
        if beat is None:
            ages[ns] = None
            texts.append("missing" if ns in missing else NA)
            level = max(level, CRIT if ns in missing else OK)
            continue
        now_age = int(beat.age_ms + elapsed_ms)
        ages[ns] = now_age
        texts.append(age(now_age))
        level = max(level, CRIT if now_age > HEARTBEAT_CRIT_MS else WARN if now_age > HEARTBEAT_WARN_MS else OK)
        expires.append(beat.timeout_ms - now_age)
    for ns in missing:
        if ns not in ages:
            ages[ns], level = None, CRIT
            texts.append("missing")
    known = [a for a in ages.values() if a is not None]
    value: Any = ages if len(ages) > 1 else (known[0] if known else None)
    beat_cell = Cell(value if known or len(ages) > 1 else None, " ".join(texts) if texts else NA, level)
    left = min(expires) if expires else None
    return beat_cell, Cell(left, age(left), CRIT if left is not None and left <= 0 else OK)


# -- HA --------------------------------------------------------------------------------------------

HA_COLUMNS = [
    Column("MASTER", key="master"), Column("MASTER ADDR", key="masterAddr"), Column("SLAVE", key="slave"),
    Column("ACK OFFSET", True, key="ackOffset"), Column("DIFF", True, key="diffBytes"),
    Column("DIFF MSGS", True, key="diffMessages"), Column("SPEED", True, key="speedBytesPerS"),
    Column("CATCH-UP", True, key="catchUpMs"), Column("IN SYNC", key="inSync"), Column("TREND", key="diffTrend"),
    Column("HISTORY", key="diffHistory"),
]
#: Shown when some group is in controller mode.
CONTROLLER_COLUMNS = [Column("EPOCH", True, key="masterEpoch"), Column("IN SSS", key="inSyncStateSet")]
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
    table.notes += _stale_note("name servers", state.slot("snapshot"), mono)
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
                                                *_blank(len(HA_COLUMNS) - 3)]))
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
            table.rows.append(Row(f"{master.addr}>", [*head, Cell(None, "no slave"), *_blank(5),
                                                      Cell(None, NA), Cell(None, NA), Cell([], ""),
                                                      *_controller_cells(ctl, None)],
                                  stale=slot.stale))
        for ci, si in pairs:
            slave = registered[si] if si is not None else None
            if ci is None:
                assert slave is not None
                label = f"{slave.addr} not connected"
                table.rows.append(Row(f"{master.addr}>{slave.addr}", [
                    *head, Cell(slave.addr, label), *_blank(5), Cell(False, "no", CRIT), Cell(None, NA),
                    Cell([], ""), *_controller_cells(ctl, slave.addr)], stale=slot.stale))
                continue
            conn = status.slaves[ci]
            label = slave.addr if slave is not None else conn.addr
            table.rows.append(Row(f"{master.addr}>{conn.addr}",
                                  [*head, Cell(label, label), *_slave_cells(state, master.addr, conn, rt, mono),
                                   *_controller_cells(ctl, slave.addr if slave is not None else None)],
                                  stale=slot.stale))
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
        table.rows.append(Row(f"{name}/no-master>{slave.addr}", [*head, Cell(slave.addr, slave.addr),
                                                                 *_blank(len(HA_COLUMNS) - 3)]))
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
        return _blank(2)
    epoch = ctl.state.master_epoch
    inside = None if slave_addr is None else slave_addr in ctl.state.in_sync_addrs
    return [Cell(epoch, NA if epoch is None else str(epoch)),
            Cell(inside, NA if inside is None else "yes" if inside else "no", WARN if inside is False else OK)]


def _controller_notes(broker_name: str, ctl: ControllerView | None) -> list[str]:
    """The group at its controllers, and its last elections (when, old and new master, epoch, why, how long
    it could not take writes)."""
    if ctl is None:
        return []
    c = ctl.state
    if c.error is not None:
        return [f"{broker_name}: controller mode, the controllers cannot be asked: {c.error}"]
    lines = [(f"{broker_name}: controller mode, leader {na(ctl.leader)}, master id {na(c.master_broker_id)}, "
             f"epoch {na(c.master_epoch)}, SyncStateSet {c.sync_state_set} (epoch {na(c.sync_state_set_epoch)})")]
    for e in (ctl.elections or [])[-ELECTIONS_SHOWN:]:
        new = "none" if e.new_master is None else str(e.new_master)
        lines.append(f"{broker_name}: election {_clock(e.at_ms)} master {na(e.old_master)} -> {new}, epoch "
                     f"{e.master_epoch}, {e.cause}, unwritable "
                     f"{NA if e.unwritable_ms is None else f'{e.unwritable_ms / 1000:.3f}s'}")
    return lines


def _clock(at_ms: int) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at_ms / 1000)) + f".{at_ms % 1000:03d}"


def _blank(n: int) -> list[Cell]:
    return [Cell(None, NA) for _ in range(n)]


def _slave_cells(state: LiveState, master: str, conn: SlaveConnection, rt: BrokerRuntime | None,
                 mono: float) -> list[Cell]:
    history = state.series_of(f"ha-diff:{master}:{conn.addr}")
    recent = [(t, int(v)) for t, v in history.points if mono - t <= TREND_WINDOW]
    trend = trend_of(recent)
    speed = conn.transfer_bytes_per_s
    catch_up = catch_up_seconds(conn.diff_bytes, speed)
    return [
        _cell(conn.ack_offset), Cell(conn.diff_bytes, size(conn.diff_bytes)),
        _cell(diff_messages(conn.diff_bytes, rt.average_message_size if rt else None)),
        Cell(speed, NA if speed is None else f"{size(speed)}/s"),
        Cell(None if catch_up is None else int(catch_up * 1000), NA if catch_up is None else age(catch_up * 1000)),
        Cell(conn.in_sync, NA if conn.in_sync is None else "yes" if conn.in_sync else "no",
             CRIT if conn.in_sync is False else OK),
        Cell(trend, trend or NA, WARN if trend == GROWING else OK),
        Cell(history.values()[-16:], sparkline(history.values())),
    ]


# -- topics and groups -----------------------------------------------------------------------------

TOPIC_COLUMNS = [
    Column("TOPIC", key="topic"), Column("KIND", key="kind"), Column("QUEUES", True, key="queues"), Column("PERM", key="perm"),
    Column("IN TPS", True, key="inTps"), Column("MESSAGES", True, key="messages"), Column("BROKERS", key="brokers"),
]


def topics(state: LiveState, mono: float) -> Table:
    slot = state.slot("topics")
    overview: TopicOverview | None = slot.value
    table = Table("topics", "topics", TOPIC_COLUMNS, [], notes=_stale_note("topics", slot, mono))
    if overview is None:
        if not slot.stale:
            table.notes.append("reading every topic ...")
        return table
    table.notes += [f"{addr}: {error} (its topics are missing)" for addr, error in overview.errors.items()]
    before, after = state.memo.get("topics", {}), {}
    for line in overview.lines:
        key = (line.topic, line.kind, tuple(line.brokers), line.read_queues, line.write_queues, line.perm,
               line.messages, line.put_tps, slot.stale)
        row = before.get(key) or Row(line.topic, [
            Cell(line.topic, line.topic), Cell(line.kind, line.kind),
            Cell({"read": line.read_queues, "write": line.write_queues}, f"{line.read_queues}/{line.write_queues}"),
            _cell(line.perm, perm_to_string), _cell(line.put_tps, num), _cell(line.messages),
            Cell(line.brokers, ",".join(line.brokers)),
        ], stale=slot.stale, drill=line.topic)
        after[key] = row
        table.rows.append(row)
    state.memo["topics"] = after  # a thousand topics rebuild only the rows whose figures changed
    return table


GROUP_COLUMNS = [
    Column("GROUP", key="group"), Column("MEMBERS", True, key="members"), Column("LAG", True, key="lag"),
    Column("CONSUME TPS", True, key="consumeTps"), Column("TREND", True, key="lagTrend"), Column("TYPE", key="type"),
    Column("MODEL", key="model"), Column("VERSION", key="version"), Column("VERDICT", key="verdict"),
]


def groups(state: LiveState, mono: float) -> Table:
    slot = state.slot("groups")
    summaries: list[GroupSummary] | None = slot.value
    table = Table("groups", "consumer groups", GROUP_COLUMNS, [], notes=_stale_note("groups", slot, mono))
    if summaries is None:
        if not slot.stale:
            table.notes.append("reading every group ...")
        return table
    for s in summaries:
        trend = state.series_of(f"lag:{s.group}").rate()
        table.rows.append(Row(s.group, [
            Cell(s.group, s.group), _cell(s.online), _cell(s.diff_total), _cell(s.consume_tps, num),
            Cell(trend, signed_rate(trend), WARN if trend is not None and trend > 0 else OK),
            _cell(s.pull_or_push), _cell(s.message_model), _cell(s.version_desc),
            verdict_cell(group_verdict(state, s.group)),
        ], stale=slot.stale, drill=s.group))
    return table


# -- name servers ----------------------------------------------------------------------------------

NAMESRV_COLUMNS = [
    Column("ADDR", key="addr"), Column("REACHABLE", key="reachable"), Column("RTT", True, key="rttMs"),
    Column("BROKERS", True, key="brokers"), Column("LIVE TABLE", key="liveTable"), Column("MISSING", key="missing"),
    Column("ERROR", key="error"),
]


def namesrv(state: LiveState, mono: float) -> Table:
    slot = state.slot("probe")
    probe: list[NamesrvStatus] | None = slot.value
    table = Table("namesrv", "name servers", NAMESRV_COLUMNS, [], notes=_stale_note("probe", slot, mono))
    if probe is None:
        return table
    everyone = set().union(*(s.broker_addrs or frozenset() for s in probe))
    for s in probe:
        missing = sorted(everyone - s.broker_addrs) if s.broker_addrs is not None else None
        table.rows.append(Row(s.addr, [
            Cell(s.addr, s.addr), Cell(s.reachable, "yes" if s.reachable else "no", OK if s.reachable else CRIT),
            _cell(s.rtt_ms, lambda v: f"{v:.1f}ms"), _cell(s.brokers),
            _cell(s.live_table, lambda v: "yes" if v else "no"),
            Cell(missing, NA if missing is None else ",".join(missing) or "-", CRIT if missing else OK),
            Cell(s.error, s.error or ""),
        ], stale=slot.stale))
    return table


# -- drill-downs -----------------------------------------------------------------------------------

QUEUE_COLUMNS = [
    Column("BROKER", key="brokerName"), Column("QUEUE", True, key="queueId"), Column("MIN", True, key="minOffset"),
    Column("MAX", True, key="maxOffset"), Column("MESSAGES", True, key="messages"), Column("LAST UPDATE", key="lastUpdateMs"),
]


def _drill(state: LiveState, view: str, name: str, columns: list[Column], mono: float) -> tuple[Slot, Table]:
    """A drill-down's slot (job `view:name`) and its table, with a note when its figures are stale."""
    slot = state.slot(f"{view}:{name}")
    return slot, Table(view, f"{view} {name}", columns, [], notes=_stale_note(name, slot, mono))


def topic_detail(state: LiveState, topic: str, mono: float, now_ms: float) -> Table:
    slot, table = _drill(state, "topic", topic, QUEUE_COLUMNS, mono)
    detail: TopicDetail | None = slot.value
    if detail is None:
        return table
    perms = {q.broker_name: q for q in detail.route.queue_datas}
    for data in sorted(detail.route.broker_datas, key=lambda d: d.broker_name):
        q = perms.get(data.broker_name)
        addrs = ", ".join(f"{i}={a}" for i, a in sorted(data.broker_addrs.items()))
        queues = f"{q.read_queue_nums}r/{q.write_queue_nums}w {perm_to_string(q.perm)}" if q else "no queues"
        table.info.append(f"route {data.broker_name} ({data.cluster}): {queues}  brokers {addrs}")
    table.info.append(f"put TPS {num(detail.status.put_tps)}, {detail.status.messages} messages")
    for q in detail.status.queues:
        when = q.last_update_ms
        table.rows.append(Row(f"{q.queue.broker_name}:{q.queue.queue_id}", [
            Cell(q.queue.broker_name, q.queue.broker_name), Cell(q.queue.queue_id, str(q.queue.queue_id)),
            Cell(q.min_offset, str(q.min_offset)), Cell(q.max_offset, str(q.max_offset)),
            Cell(q.messages, str(q.messages)), Cell(when, NA if when is None else f"{age(now_ms - when)} ago"),
        ], stale=slot.stale))
    return table


PROGRESS_COLUMNS = [
    Column("BROKER", key="brokerName"), Column("QUEUE", True, key="queueId"), Column("TOPIC", key="topic"),
    Column("BROKER OFFSET", True, key="brokerOffset"), Column("CONSUMER OFFSET", True, key="consumerOffset"),
    Column("DIFF", True, key="diff"), Column("CLIENT", key="client"), Column("LAST CONSUME", key="lastConsumeMs"),
]


def group_detail(state: LiveState, group: str, mono: float, now_ms: float) -> Table:
    slot, table = _drill(state, "group", group, PROGRESS_COLUMNS, mono)
    table.info += group_evidence(group_verdict(state, group), group in state.group_samples)
    detail: GroupDetail | None = slot.value
    if detail is None:
        return table
    conns = detail.connections
    if conns is None:
        table.info.append("members: none online")
    else:
        table.info.append(f"members ({len(conns.connections)}): "
                          + ", ".join(f"{c.client_id} [{c.language}]" for c in conns.connections))
        table.info.append(f"{conns.consume_type or NA} {conns.message_model or NA}, subscriptions: "
                          + ", ".join(f"{t}={e}" for t, e in conns.subscriptions.items()))
    table.info.append(f"lag {detail.progress.total_diff}, consume TPS {num(detail.progress.consume_tps)}")
    for q in detail.progress.queues:
        mq = q.queue
        client = detail.holders.get((mq.topic, mq.broker_name, mq.queue_id))
        when = q.last_timestamp_ms
        table.rows.append(Row(f"{mq.topic}@{mq.broker_name}:{mq.queue_id}", [
            Cell(mq.broker_name, mq.broker_name), Cell(mq.queue_id, str(mq.queue_id)), Cell(mq.topic, mq.topic),
            Cell(q.broker_offset, str(q.broker_offset)), _cell(q.consumer_offset), Cell(q.diff, str(q.diff)),
            _cell(client), Cell(when, NA if when is None else f"{age(now_ms - when)} ago"),
        ], stale=slot.stale))
    return table
