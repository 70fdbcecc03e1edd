"""toolkitTruth: what the toolkit said during the fault, judged against the drill's own ground truth.

While the fault lasts, the drill reads its topic's status, its group's progress and the target group's HA
status as `mq admin topic status`, `group progress` and `ha status` do (the same admin calls) and records
the figures as a `toolkit-read` event. The history knows what was sent, acknowledged, lost and what lay
beyond the slave at the fault, so each broker set's stored count has bounds: at least what was
acknowledged there before the read began (less what the drill lost there or the slave never had), at most
every attempt that may have reached it before the read ended. A figure outside its bounds is wrong; a set
left out without being named unreachable is an undercount in silence. Either fails the criterion.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mqtools.client.admin import MQAdmin
from mqtools.client.errors import MQClientError
from mqtools.drills.checkers import Integrity, beyond_slave
from mqtools.drills.history import OK, Event, History

READ_EVENT = "toolkit-read"
READ_DELAY = 1.0
"""Seconds after the fault the toolkit reads: clients and name servers have begun to see it."""
READ_TIMEOUT = 2.0
"""Per request, as an operator's `--timeout 2` (a hung broker costs one per set)."""


async def read_toolkit(admin: MQAdmin, topic: str, group: str, broker_name: str) -> dict[str, Any]:
    """The three reads an operator runs during an outage, reduced to the figures the judgment needs."""

    async def attempt(read: Callable[[], Any]) -> dict[str, Any]:
        try:
            return await read()
        except MQClientError as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}

    async def status() -> dict[str, Any]:
        st = await admin.overview.topic_status(topic)
        return _sets(st.queues, st.unreachable, lambda q: q.max_offset - q.min_offset)

    async def progress() -> dict[str, Any]:
        p = await admin.groups.consumer_progress(group, topic)
        return _sets(p.queues, p.unreachable, lambda q: q.broker_offset)

    async def ha() -> dict[str, Any]:
        groups = await admin.ha.ha_replication(broker_name=broker_name, window=0.0)
        mine = [g for g in groups if g.broker_name == broker_name]
        return {"groups": [g.broker_name for g in groups],
                "target": {"masterAddr": mine[0].master_addr, "error": mine[0].error,
                           "slaves": len(mine[0].slaves)} if mine else None}

    topic_doc, progress_doc, ha_doc = await asyncio.gather(attempt(status), attempt(progress), attempt(ha))
    return {"topicStatus": topic_doc, "groupProgress": progress_doc, "haStatus": ha_doc}


def _sets(queues: list[Any], unreachable: list[Any], figure: Callable[[Any], int]) -> dict[str, Any]:
    sets: dict[str, dict[str, Any]] = {}
    for q in queues:
        entry = sets.setdefault(q.queue.broker_name, {"messages": 0, "queues": 0, "sources": []})
        entry["messages"] += figure(q)
        entry["queues"] += 1
        if q.source not in entry["sources"]:
            entry["sources"].append(q.source)
    return {"partial": bool(unreachable), "unreachable": sorted({u.broker_name or u.addr or "?" for u in unreachable}),
            "sets": sets}


@dataclass(frozen=True, slots=True)
class Finding:
    ok: bool
    text: str


def judge_truth(history: History, integrity: Integrity) -> list[Finding]:
    """One finding per read (and per wrong figure); no read recorded during the fault is itself a failure."""
    reads = [e for e in history.events if e.name == READ_EVENT]
    if not reads:
        return [Finding(False, "toolkitTruth: no toolkit read was recorded during the fault")]
    masters = sorted({b["brokerName"] for b in (history.meta.get("cluster") or {}).get("brokers", [])
                      if b.get("brokerId") == 0})
    findings = []
    for ev in reads:
        wrong = [*_judge_counts(history, integrity, ev, "topicStatus", "topic status", masters),
                 *_judge_counts(history, integrity, ev, "groupProgress", "group progress", masters),
                 *_judge_ha(ev, history.meta.get("target") or {})]
        at = f"toolkit read at {ev.data.get('started', ev.time):.1f}s"
        findings += [Finding(False, f"{at}: {w}") for w in wrong] or [
            Finding(True, f"{at}: topic status, group progress and ha status right or marked partial")]
    return findings


def bounds(history: History, integrity: Integrity, broker: str, started: float, ended: float) -> tuple[int, int]:
    """(at least, at most) messages stored on `broker`'s queues of the drill topic during a read. A send that
    took more than one attempt may have stored a copy wherever an earlier attempt went (a master killed after
    it stored and replicated, before it answered): its earlier attempts count towards every set's most."""
    sends = history.sends()
    doubtful = set(integrity.lost)
    found = beyond_slave(history, sends, history.receives())
    if found is not None and found[0] == broker:
        doubtful |= found[2]
    low = sum(1 for o in sends if o.result == OK and o.broker == broker and o.complete <= started
              and o.id not in doubtful)
    high = sum((o.attempts or 1) - (o.broker not in (broker, None)) for o in sends if o.invoke <= ended)
    return low, high


def _judge_counts(history: History, integrity: Integrity, ev: Event, key: str, what: str,
                  masters: list[str]) -> list[str]:
    doc = ev.data.get(key) or {}
    if "error" in doc:
        return [f"{what} failed instead of answering in part: {doc['error']}"]
    sets, named = doc.get("sets", {}), set(doc.get("unreachable", []))
    wrong = [f"{what} left out {name} without naming it unreachable" for name in masters
             if name not in sets and name not in named]
    if bool(named) != bool(doc.get("partial")):
        wrong.append(f"{what} named {sorted(named)} unreachable with partial={doc.get('partial')}")
    started, ended = float(ev.data.get("started", ev.time)), float(ev.data.get("ended", ev.time))
    for name, entry in sorted(sets.items()):
        low, high = bounds(history, integrity, name, started, ended)
        if not low <= entry["messages"] <= high:
            wrong.append(f"{what} counted {entry['messages']} on {name} ({'/'.join(entry['sources'])}); "
                         f"the history says {low} to {high}")
    return wrong


def _judge_ha(ev: Event, target: dict[str, Any]) -> list[str]:
    doc = ev.data.get("haStatus") or {}
    if "error" in doc:
        return [f"ha status failed: {doc['error']}"]
    name = target.get("brokerName")
    if name and doc.get("target") is None:
        return [f"ha status has no row for {name}"]
    return []
