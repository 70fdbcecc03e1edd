"""Every broker, group and HA pair of a cluster in one pass, worst first.

A broker set without a master comes first (kind `set`, action): its queues take no sends and no commits,
and the commands that act on it are named. Each configured name server is asked on its own (kind `namesrv`):
one that does not answer, or that lists fewer brokers than the others, needs action, since clients that
chose it wait a timeout or do not see those brokers; so does a TLS certificate it serves that expires within a
week (within a month: info), read from the verified handshake. Brokers and groups are judged as `diagnose broker` and
`diagnose group` judge them, all over the same window and concurrently; each broker group with a slave gets
`ha ready`'s verdict (safe: ok, not safe: action). Groups that hold no offsets anywhere and have no member
online (configured, never used) are counted, not judged; a group of which that could not be read is judged,
so its verdict says what was not known.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mqtools.client.errors import ConsumerNotOnlineError, MQClientError, settled
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.presentation import Column, Unreachable, View, renders
from mqtools.diagnose.collect import diagnose_broker, diagnose_group
from mqtools.diagnose.findings import (
    CERT_RENEWAL,
    Severity,
    certificate_days_left,
    certificate_severity,
    certificate_when,
    exit_code,
    rank,
)
from mqtools.diagnose.group import DEFAULTS, Thresholds

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.ha_readiness import HAReadiness
    from mqtools.client.admin.models.live import NamesrvStatus

HA_SEVERITY = {"safe": Severity.OK, "not safe": Severity.ACTION, "unknown": Severity.UNKNOWN}
#: `ha ready`'s own window inside the pass (its trend needs two samples, not the whole window).
HA_WINDOW_S = 2.0


@dataclass(frozen=True, slots=True)
class Item:
    kind: str
    """broker, group or ha."""
    name: str
    verdict: str
    severity: Severity
    summary: str
    detail: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "verdict": self.verdict, "severity": self.severity.value,
                "summary": self.summary, "detail": self.detail}


@dataclass(slots=True)
class ClusterDiagnosis:
    window_s: float
    items: list[Item] = field(default_factory=list)
    unused_groups: list[str] = field(default_factory=list)
    unreachable: list[Unreachable] = field(default_factory=list)
    """The sets whose groups could not be listed: those groups have no verdict."""

    @property
    def exit_code(self) -> int:
        return exit_code([i.severity for i in self.items])

    @property
    def worst(self) -> Severity:
        return min((i.severity for i in self.items), key=rank, default=Severity.OK)

    def to_json(self) -> dict[str, Any]:
        return {"windowSeconds": self.window_s, "worst": self.worst.value,
                "items": [i.to_json() for i in self.items], "unusedGroups": self.unused_groups}


def _ha_item(ready: HAReadiness) -> Item:
    failed = next((c for c in ready.checks if c.ok is False), None)
    summary = f"{failed.name}: {failed.detail}" if failed else "safe to stop the master now"
    return Item("ha", ready.broker_name, ready.verdict, HA_SEVERITY.get(ready.verdict, Severity.UNKNOWN), summary,
                {"verdict": ready.verdict, "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail}
                                                      for c in ready.checks]})


def _set_item(name: str, slaves: dict[int, str]) -> Item:
    """A broker set with no master registered: read-only until one returns or is elected."""
    where = ", ".join(f"{i}={a}" for i, a in sorted(slaves.items())) or "none"
    elect = f"mq admin controller elect-master {name} -i {min(slaves, default=1)}"
    commands = [f"mq admin ha status -b {name}", elect]
    summary = (f"no master registered (slaves {where}): sends and commits there fail; restart the master, or in "
               f"controller mode `{elect}`; `{commands[0]}`")
    return Item("set", name, "no master", Severity.ACTION, summary,
                {"slaves": {str(i): a for i, a in sorted(slaves.items())}, "commands": commands})


def namesrv_items(probes: list[NamesrvStatus], *, now_s: float | None = None) -> list[Item]:
    """One verdict per name server: not answering, missing brokers the others list, a TLS certificate that
    expires soon (as a broker's: `now_s`, the wall clock, time.time() when not given), or healthy."""
    known = frozenset().union(*(p.broker_addrs for p in probes if p.broker_addrs is not None))
    items = []
    for p in probes:
        missing = sorted(known - p.broker_addrs) if p.broker_addrs is not None else []
        days_left = certificate_days_left(p.certificate_not_after, now_s)
        cert = None if days_left is None else certificate_severity(days_left)
        detail = {"addr": p.addr, "reachable": p.reachable, "rttMs": p.rtt_ms, "brokers": p.brokers,
                  "missing": missing, "error": p.error, "certificateDaysLeft": days_left}
        if not p.reachable:
            items.append(Item("namesrv", p.addr, "not answering", Severity.ACTION,
                              f"{p.error}: a client that chose it waits one timeout before asking another name "
                              f"server, and brokers cannot register with it; restart it or take it out of the "
                              f"namesrvAddr lists", detail))
        elif missing:  # its certificate, when it is due too, said as well: one verdict per name server
            also = "" if cert is None else f"; and the TLS certificate it serves {certificate_when(days_left)} " \
                f"({CERT_RENEWAL})"
            items.append(Item("namesrv", p.addr, "missing brokers", Severity.ACTION,
                              f"does not list {', '.join(missing)} (another name server does): clients routed by it "
                              f"do not see them; check those brokers' namesrvAddr (a broker registers every 30 s: "
                              f"look again if it has just started){also}", detail))
        elif cert is not None:
            items.append(Item("namesrv", p.addr, "TLS certificate", cert,
                              f"the TLS certificate it serves {certificate_when(days_left)}: clients and brokers "
                              f"that verify it are refused after that, and none can read a route or register there "
                              f"({CERT_RENEWAL})", detail))
        else:
            lasts = "" if days_left is None else f"; its TLS certificate has {days_left:g} days left"
            items.append(Item("namesrv", p.addr, "healthy", Severity.OK,
                              f"answers in {p.rtt_ms:.0f} ms and lists every broker ({len(known)}){lasts}", detail))
    return items


async def _used(admin: MQAdmin, group: str) -> bool | None:
    """Whether the group holds offsets somewhere or has a member online; None when that is not known (a set
    whose offsets of it could not be read, connections that did not answer): judged, so said, not counted
    as never used."""
    progress, conns = await asyncio.gather(settled(admin.groups.consumer_progress(group)),
                                           settled(admin.groups.consumer_connections(group)))
    if not isinstance(progress, MQClientError) and progress.queues:
        return True
    if not isinstance(conns, MQClientError) and conns.connections:
        return True
    offline = not isinstance(conns, MQClientError) or isinstance(conns, ConsumerNotOnlineError)
    return False if offline and not isinstance(progress, MQClientError) and not progress.unreachable else None


async def diagnose_cluster(admin: MQAdmin, window: float, thresholds: Thresholds = DEFAULTS) -> ClusterDiagnosis:
    info = await admin.cluster_info()
    names = sorted(info.broker_addr_table)
    paired = [n for n in names if any(bid > 0 for bid in info.broker_addr_table[n].broker_addrs)]
    listed = await admin.groups.group_list()
    groups = sorted(e.group for e in listed.entries if not e.system)
    used = await asyncio.gather(*(_used(admin, g) for g in groups))
    judged = [g for g, u in zip(groups, used, strict=True) if u is not False]
    brokers, group_results, ha, probes = await asyncio.gather(
        asyncio.gather(*(diagnose_broker(admin, n, window) for n in names)),
        asyncio.gather(*(diagnose_group(admin, g, window, thresholds) for g in judged)),
        asyncio.gather(*(admin.ha.ha_ready(n, window=HA_WINDOW_S) for n in paired)),
        admin.namesrv_probes.namesrv_probe())
    items = [Item("broker", f"{d.broker} {d.addr}", d.verdict, d.severity, d.summary, d.to_json())
             for nodes in brokers for d in nodes]
    items += [Item("group", d.group, d.verdict, d.severity, d.summary, d.to_json()) for d in group_results]
    items += [_ha_item(r) for r in ha]
    items += namesrv_items(probes)
    items += [_set_item(n, dict(info.broker_addr_table[n].broker_addrs)) for n in names
              if MASTER_ID not in info.broker_addr_table[n].broker_addrs]
    items.sort(key=lambda i: (rank(i.severity), i.kind != "set", i.kind, i.name))
    missed = [Unreachable(u.broker_name, u.addr, f"its groups: {u.reason}") for u in listed.unreachable]
    return ClusterDiagnosis(window, items, [g for g, u in zip(groups, used, strict=True) if u is False], missed)


CLUSTER_COLUMNS = [Column("KIND"), Column("NAME"), Column("VERDICT"), Column("SEVERITY"), Column("SUMMARY")]


@renders("ClusterDiagnosis")
def cluster_diagnosis_view(d: ClusterDiagnosis) -> View:
    """One row per verdict, worst first; the groups configured but never used are only counted."""
    rows = [[i.kind, i.name, i.verdict, i.severity.value, i.summary] for i in d.items]
    footer = [f"{len(d.unused_groups)} group(s) configured but never used: {', '.join(d.unused_groups)}"] \
        if d.unused_groups else []
    return View("ClusterDiagnosis", CLUSTER_COLUMNS, rows, d.to_json(),
                title=f"cluster: {d.worst.value.upper()} ({len(d.items)} verdicts, worst first)", footer=footer,
                unreachable=d.unreachable)
