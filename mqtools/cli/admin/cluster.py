"""`mq admin cluster list|rt`: every broker with its load, heartbeats and disk; send RT per broker."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import (
    usage,
)
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import Column, View

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.brokers import BrokerRow, ClusterSnapshot

app = typer.Typer(help="Clusters and their brokers.", no_args_is_help=True)
RT_GROUP = "mq_admin_cluster_rt"
"""Producer group of `cluster rt`'s probe sends."""
ClusterOpt = Annotated[Optional[str], typer.Option("-c", "--cluster", help="Only this cluster.")]  # noqa: UP045


def _age(ms: int | None) -> str | None:
    return None if ms is None else f"{ms / 1000:.1f}s"


def _diff(now: int | None, then: int | None) -> int | None:
    return None if now is None or then is None else now - then


def cluster_view(snap: ClusterSnapshot, cluster: str | None, more: bool) -> View:
    rows = [b for b in snap.brokers if cluster is None or b.cluster == cluster]
    if more:
        columns = [Column("CLUSTER"), Column("BROKER"), Column("BID", True), Column("IN YESTERDAY", True),
                   Column("OUT YESTERDAY", True), Column("IN TODAY", True), Column("OUT TODAY", True)]
        table = [[b.cluster, b.broker_name, b.broker_id, *_totals(b)] for b in rows]
    else:
        columns = [Column("CLUSTER"), Column("BROKER"), Column("BID", True), Column("ROLE"), Column("ADDR"),
                   Column("VERSION"), Column("IN TPS", True), Column("OUT TPS", True), Column("HEARTBEAT", True),
                   Column("EXPIRES IN", True), Column("COMMITLOG MAX", True), Column("DISK", True)]
        table = [[b.cluster, b.broker_name, b.broker_id, "master" if b.is_master else "slave", b.addr,
                  b.runtime.version_desc if b.runtime else None,
                  b.runtime.put_tps if b.runtime else None, b.runtime.get_transferred_tps if b.runtime else None,
                  _age(b.heartbeat_age_ms), _age(_expires(b)),
                  b.runtime.commitlog_max_offset if b.runtime else None,
                  _ratio(b.runtime.commitlog_disk_ratio) if b.runtime else None] for b in rows]
    footer = [] if snap.live_table_available else [
        "heartbeat ages: n/a (the name servers do not answer mq's private GET_BROKER_LIVE_TABLE)"]
    footer += [f"{b.addr}: {b.error}" for b in rows if b.error]
    orphans = snap.without_master(cluster)
    for c, name in orphans:
        marker = [] if more else ["no master"]
        table.append([c, name, 0, *marker, *([None] * (len(columns) - 3 - len(marker)))])
        footer.append(f"broker set {name} has no master registered: its slaves serve reads only "
                      f"(mq admin ha status -b {name})")
    data = {"namesrv": snap.namesrv_addrs, "clusters": {c: n for c, n in snap.clusters.items()
                                                        if cluster is None or c == cluster},
            "brokers": [_broker_json(b) for b in rows],
            "brokerSetsWithoutMaster": [{"cluster": c, "brokerName": name} for c, name in orphans]}
    return View("ClusterList", columns, table, data, footer=footer)


def _totals(b: BrokerRow) -> list[int | None]:
    r = b.runtime
    if r is None:
        return [None] * 4
    return [_diff(r.put_total_today_morning, r.put_total_yesterday_morning),
            _diff(r.get_total_today_morning, r.get_total_yesterday_morning),
            _diff(r.put_total_today_now, r.put_total_today_morning),
            _diff(r.get_total_today_now, r.get_total_today_morning)]


def _expires(b: BrokerRow) -> int | None:
    known = [h.expires_in_ms for h in b.heartbeats.values() if h is not None]
    return max(known) if known else None


def _ratio(value: float | None) -> str | None:
    return None if value is None else f"{value * 100:.1f}%"


def _broker_json(b: BrokerRow) -> dict[str, object]:
    r = b.runtime
    in_y, out_y, in_t, out_t = _totals(b)
    return {
        "cluster": b.cluster, "brokerName": b.broker_name, "brokerId": b.broker_id, "addr": b.addr,
        "role": "MASTER" if b.is_master else "SLAVE", "version": r.version_desc if r else None,
        "inTps": r.put_tps if r else None, "outTps": r.get_transferred_tps if r else None,
        "heartbeatAgeMs": b.heartbeat_age_ms, "expiresInMs": _expires(b),
        "heartbeats": {ns: None if h is None else {"ageMs": h.age_ms, "timeoutMs": h.timeout_ms}
                       for ns, h in b.heartbeats.items()},
        "commitLogMinOffset": r.commitlog_min_offset if r else None,
        "commitLogMaxOffset": r.commitlog_max_offset if r else None,
        "diskRatio": r.commitlog_disk_ratio if r else None,
        "inTotalYesterday": in_y, "outTotalYesterday": out_y, "inTotalToday": in_t, "outTotalToday": out_t,
        "error": b.error,
    }


@admin_command(app, "list", output=True, watch=True)
def list_(
    s: Session,
    cluster: ClusterOpt = None,
    more: Annotated[bool, typer.Option("--more", "-m", help="Message totals of yesterday and today.")] = False,
) -> None:
    """Every broker (masters and slaves) with load, heartbeat age, disk.

    Example: mq admin cluster list -n 127.0.0.1:9876
    """

    async def build(admin: MQAdmin) -> View:
        snap = await admin.cluster.cluster_snapshot()
        if cluster is not None and cluster not in snap.clusters:
            raise usage(f"cluster {cluster} not found (known: {', '.join(sorted(snap.clusters)) or 'none'})")
        return cluster_view(snap, cluster, more)

    s.show(build)


@admin_command(app, "rt", output=True)
def rt(
    s: Session,
    cluster: ClusterOpt = None,
    amount: Annotated[int, typer.Option("--amount", "-a", min=1, help="Messages per broker.")] = 100,
    size: Annotated[int, typer.Option("--size", "-s", min=1, help="Message body bytes.")] = 128,
) -> None:
    """Send RT to each master: sync sends to the topic named after the broker, as mqadmin's clusterRT.

    Example: mq admin cluster rt -a 50
    """
    from mqtools.cli.admin.progress import Progress

    async def measure(admin: MQAdmin) -> View:
        masters = await admin.master_addrs(cluster)
        with Progress("measuring send RT", total=amount * len(masters)) as progress:
            probes = await admin.messages.send_rt(list(masters), amount, size, group=RT_GROUP, on_send=progress.advance)
        rows = [[p.broker_name, masters[p.broker_name], p.ok, p.failed, p.avg_ok_ms] for p in probes]
        data = [{"brokerName": p.broker_name, "addr": masters[p.broker_name], "ok": p.ok, "failed": p.failed,
                 "avgRtMs": p.avg_ok_ms} for p in probes]
        return View("ClusterRT", [Column("BROKER"), Column("ADDR"), Column("OK", True), Column("FAILED", True),
                                  Column("AVG RT MS", True)], rows, {"amount": amount, "size": size, "brokers": data})

    s.render(s.run(measure))
