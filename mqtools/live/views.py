"""The views of a live cluster, built from a LiveState at one instant: brokers, HA (ha_view.py), topics,
groups, name servers, and the drill-downs of a topic, a group and a broker (its verdict's findings).

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
from mqtools.client.admin.models.live import NamesrvStatus, TopicOverview
from mqtools.client.admin.models.proxies import ProxyClients
from mqtools.common.perm import perm_to_string
from mqtools.common.presentation import (
    ReadSource,
    Unreachable,
    from_slaves_note,
    partial_note,
    sets_missed,
    slave_marked,
)
from mqtools.diagnose.findings import Severity, certificate_days_left, certificate_severity
from mqtools.live.cells import blank, cell, since, stale_note
from mqtools.live.collect import GroupDetail, TopicDetail
from mqtools.live.ha_view import ha
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
    num,
    percent,
    signed_rate,
    size,
)
from mqtools.live.verdicts import (
    LEVELS,
    broker_detail,
    broker_verdict,
    group_evidence,
    group_verdict,
    verdict_cell,
)

HEARTBEAT_WARN_MS = 30_000
HEARTBEAT_CRIT_MS = 90_000
VIEWS = ("brokers", "ha", "topics", "groups", "namesrv", "proxies")


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
    if view == "namesrv":
        return namesrv(state, mono, wall_ms / 1000)
    return {"brokers": brokers, "ha": ha, "topics": topics, "groups": groups, "proxies": proxies}[view](state, mono)


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
    table.notes += stale_note("name servers", snap_slot, mono)
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
    listed = [(b, since(snap_slot, mono), False) for b in snap.brokers]
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
        elif state.silent(f"runtime:{b.addr}"):
            heard = slot.last_heard
            status = Cell("not answering", "not answering", CRIT)
            table.notes.append(f"{b.broker_name}/{b.broker_id} {b.addr}: registered, but has not answered for "
                               f"{age((mono - heard) * 1000) if heard is not None else NA}")
        elif rt is None:
            status = Cell(None, "waiting")
        doc = broker_json(b, rt)
        cells = [
            Cell(doc["cluster"], b.cluster), Cell(doc["brokerName"], b.broker_name), Cell(doc["brokerId"], str(b.broker_id)),
            Cell(doc["role"], doc["role"].lower()), Cell(doc["addr"], b.addr),
            cell(doc["version"]), beat, expires,
            cell(doc["inTps"], num), cell(doc["outTps"], num),
            cell(doc["commitLogMaxOffset"]), cell(doc["diskRatio"], percent),
            cell(proc and proc.cpu_percent, lambda v: f"{v:.1f}%"), cell(proc and proc.rss_bytes, size),
            cell(proc and proc.open_files), status,
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


# -- topics and groups -----------------------------------------------------------------------------

TOPIC_COLUMNS = [
    Column("TOPIC", key="topic"), Column("KIND", key="kind"), Column("QUEUES", True, key="queues"), Column("PERM", key="perm"),
    Column("IN TPS", True, key="inTps"), Column("MESSAGES", True, key="messages"), Column("BROKERS", key="brokers"),
]


def topics(state: LiveState, mono: float) -> Table:
    slot = state.slot("topics")
    overview: TopicOverview | None = slot.value
    table = Table("topics", "topics", TOPIC_COLUMNS, [], notes=stale_note("topics", slot, mono))
    if overview is None:
        if not slot.stale:
            table.notes.append("reading every topic ...")
        return table
    table.notes += partial_note(overview.unreachable,
                                "its topics are missing, and the figures of topics it also holds leave it out")
    table.notes += from_slaves_note(overview.from_slaves)
    slaves = set(overview.from_slaves)
    before, after = state.memo.get("topics", {}), {}
    for line in overview.lines:
        key = (line.topic, line.kind, tuple(line.brokers), line.read_queues, line.write_queues, line.perm,
               line.messages, line.put_tps, slot.stale, tuple(b in slaves for b in line.brokers))
        row = before.get(key) or Row(line.topic, [
            Cell(line.topic, line.topic), Cell(line.kind, line.kind),
            Cell({"read": line.read_queues, "write": line.write_queues}, f"{line.read_queues}/{line.write_queues}"),
            cell(line.perm, perm_to_string), cell(line.put_tps, num), cell(line.messages),
            Cell(line.brokers, ",".join(slave_marked(b, ReadSource.SLAVE if b in slaves else ReadSource.MASTER) for b in line.brokers)),
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
    table = Table("groups", "consumer groups", GROUP_COLUMNS, [], notes=stale_note("groups", slot, mono))
    if summaries is None:
        if not slot.stale:
            table.notes.append("reading every group ...")
        return table
    for s in summaries:
        # a lag that leaves a set out is not comparable with the whole ones before it: no trend while partial
        trend = None if s.unreachable else state.series_of(f"lag:{s.group}").rate()
        table.rows.append(Row(s.group, [
            Cell(s.group, s.group), cell(s.online), cell(s.diff_total), cell(s.consume_tps, num),
            Cell(trend, signed_rate(trend), WARN if trend is not None and trend > 0 else OK),
            cell(s.kind), cell(s.message_model), cell(s.version_desc),
            verdict_cell(group_verdict(state, s.group)),
        ], stale=slot.stale, drill=s.group))
    missed = sets_missed(s.unreachable for s in summaries)
    if missed:
        table.notes.append("partial: lag and TPS leave out " + "; ".join(str(u) for u in missed))
    return table


# -- name servers ----------------------------------------------------------------------------------

NAMESRV_COLUMNS = [
    Column("ADDR", key="addr"), Column("REACHABLE", key="reachable"), Column("RTT", True, key="rttMs"),
    Column("BROKERS", True, key="brokers"), Column("LIVE TABLE", key="liveTable"), Column("MISSING", key="missing"),
    Column("CERT DAYS", True, key="certificateDaysLeft"), Column("ERROR", key="error"),
]


def _certificate(not_after_s: float | None, now_s: float) -> Cell:
    """Days until the certificate a name server served (to this view's verified handshake) expires, judged as
    `diagnose cluster` judges it; n/a without TLS or verification (a name server reports nothing of its own)."""
    days = certificate_days_left(not_after_s, now_s)
    if days is None:
        return Cell(None, NA)
    return Cell(days, f"{days:g}", LEVELS[certificate_severity(days) or Severity.OK])


def namesrv(state: LiveState, mono: float, now_s: float) -> Table:
    slot = state.slot("probe")
    probe: list[NamesrvStatus] | None = slot.value
    table = Table("namesrv", "name servers", NAMESRV_COLUMNS, [], notes=stale_note("probe", slot, mono))
    if probe is None:
        return table
    everyone = set().union(*(s.broker_addrs or frozenset() for s in probe))
    for s in probe:
        missing = sorted(everyone - s.broker_addrs) if s.broker_addrs is not None else None
        table.rows.append(Row(s.addr, [
            Cell(s.addr, s.addr), Cell(s.reachable, "yes" if s.reachable else "no", OK if s.reachable else CRIT),
            cell(s.rtt_ms, lambda v: f"{v:.1f}ms"), cell(s.brokers),
            cell(s.live_table, lambda v: "yes" if v else "no"),
            Cell(missing, NA if missing is None else ",".join(missing) or "-", CRIT if missing else OK),
            _certificate(s.certificate_not_after, now_s), Cell(s.error, s.error or ""),
        ], stale=slot.stale))
    return table


PROXY_COLUMNS = [
    Column("PROXY", key="proxy"), Column("ANSWERING", key="answering"), Column("GROUPS", True, key="consumerGroups"),
    Column("CONSUMERS", True, key="consumers"), Column("PRODUCERS", True, key="producers"),
    Column("LANGUAGES", key="languages"), Column("ERROR", key="error"),
]


def proxies(state: LiveState, mono: float) -> Table:
    """The proxies given with --proxy and the gRPC clients each serves (the brokers never see them); a proxy
    that does not answer is critical, producers are n/a for a proxy that lists none (Apache's)."""
    slot = state.slot("proxies")
    read: ProxyClients | None = slot.value
    table = Table("proxies", "proxies", PROXY_COLUMNS, [], notes=stale_note("proxies", slot, mono))
    if read is None:
        if not slot.stale:
            table.notes.append("no proxy given: mq top --proxy HOST:8080 (a proxy's remoting port)")
        return table
    table.notes += read.footer()
    for p in read.proxies:
        table.rows.append(Row(p.addr, [
            Cell(p.addr, p.addr), Cell(True, "yes", OK), cell(p.consumer_groups), cell(p.consumers),
            cell(p.producers), Cell(p.languages, p.languages_text), Cell(None, ""),
        ], stale=slot.stale))
    for u in read.unreachable:
        addr = u.addr or "?"
        table.rows.append(Row(addr, [Cell(addr, addr), Cell(False, "no", CRIT), *blank(4), Cell(u.reason, u.reason)],
                              stale=slot.stale))
    return table


# -- drill-downs -----------------------------------------------------------------------------------

QUEUE_COLUMNS = [
    Column("BROKER", key="brokerName"), Column("QUEUE", True, key="queueId"), Column("MIN", True, key="minOffset"),
    Column("MAX", True, key="maxOffset"), Column("MESSAGES", True, key="messages"), Column("LAST UPDATE", key="lastUpdateMs"),
]


def _at_least(missed: list[Unreachable]) -> str:
    """A sum over the sets that answered is a floor when some did not."""
    return "at least " if missed else ""


def _drill(state: LiveState, view: str, name: str, columns: list[Column], mono: float) -> tuple[Slot, Table]:
    """A drill-down's slot (job `view:name`) and its table, with a note when its figures are stale."""
    slot = state.slot(f"{view}:{name}")
    return slot, Table(view, f"{view} {name}", columns, [], notes=stale_note(name, slot, mono))


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
    status = detail.status
    table.info.append(f"put TPS {num(status.put_tps)}, {_at_least(status.unreachable)}{status.messages} messages")
    table.notes += partial_note(status.unreachable, "its queues are missing")
    table.notes += from_slaves_note(sorted({q.queue.broker_name for q in status.queues if q.source == ReadSource.SLAVE}))
    for q in status.queues:
        when = q.last_update_ms
        table.rows.append(Row(f"{q.queue.broker_name}:{q.queue.queue_id}", [
            Cell(q.queue.broker_name, slave_marked(q.queue.broker_name, q.source)),
            Cell(q.queue.queue_id, str(q.queue.queue_id)),
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
    progress = detail.progress
    table.info.append(f"lag {_at_least(progress.unreachable)}{progress.total_diff}, consume TPS "
                      f"{num(progress.consume_tps)}")
    table.notes += partial_note(progress.unreachable, "its queues and lag are missing")
    table.notes += from_slaves_note(sorted({q.queue.broker_name for q in progress.queues if q.source == ReadSource.SLAVE}))
    for q in progress.queues:
        mq = q.queue
        client = detail.holders.get((mq.topic, mq.broker_name, mq.queue_id))
        when = q.last_timestamp_ms
        table.rows.append(Row(f"{mq.topic}@{mq.broker_name}:{mq.queue_id}", [
            Cell(mq.broker_name, slave_marked(mq.broker_name, q.source)), Cell(mq.queue_id, str(mq.queue_id)),
            Cell(mq.topic, mq.topic),
            Cell(q.broker_offset, str(q.broker_offset)), cell(q.consumer_offset), Cell(q.diff, str(q.diff)),
            cell(client), Cell(when, NA if when is None else f"{age(now_ms - when)} ago"),
        ], stale=slot.stale))
    return table
