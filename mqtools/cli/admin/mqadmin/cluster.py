"""mqadmin's cluster commands: clusterList (5.x layout, and `-m` totals)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.mqadmin import NamesrvOpt, command, java_format, run_until_interrupted

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.brokers import BrokerRow, ClusterSnapshot

HEADER = "%-22s  %-22s  %-4s  %-22s %-16s  %16s  %30s  %-22s  %-11s  %-12s  %-8s  %-10s"
ROW = "%-22s  %-22s  %-4s  %-22s %-16s  %16s  %30s  %-22s  %11s  %-12s  %-8s  %10s"
MORE = "%-16s  %-32s %14s %14s %14s %14s"
NA = "n/a"


def _num(value: float | None, fmt: str) -> str:
    return NA if value is None else fmt % value


def _row(b: BrokerRow, now_ms: int) -> str:
    r = b.runtime
    if r is None:
        return java_format(ROW, b.cluster, b.broker_name, b.broker_id, b.addr, NA, NA, NA, NA, NA, NA, NA, NA)
    raw = r.raw
    in_tps = f"{_num(r.put_tps, '%9.2f')}({raw.get('sendThreadPoolQueueSize', NA)},{raw.get('sendThreadPoolQueueHeadWaitTimeMills', NA)}ms)"
    out_tps = (f"{_num(r.get_transferred_tps, '%9.2f')}({raw.get('pullThreadPoolQueueSize', NA)},"
               f"{raw.get('pullThreadPoolQueueHeadWaitTimeMills', NA)}ms|{raw.get('ackThreadPoolQueueSize', 'N')},"
               f"{raw.get('ackThreadPoolQueueHeadWaitTimeMills', 'N')}ms)")
    timer = NA
    if "timerReadBehind" in raw:
        congest = float(raw.get("timerCongestNum", 0)) / 10000
        timer = (f"{raw['timerReadBehind']}-{raw.get('timerOffsetBehind', NA)}({congest:.1f}w, "
                 f"{raw.get('timerEnqueueTps', NA)}, {raw.get('timerDequeueTps', NA)})")
    hours = None if r.earliest_message_ms is None else (now_ms - r.earliest_message_ms) / 3_600_000
    activated = NA if r.broker_active is None else str(r.broker_active).lower()
    return java_format(ROW, b.cluster, b.broker_name, b.broker_id, b.addr, r.version_desc or NA, in_tps, out_tps,
                       timer, raw.get("pageCacheLockTimeMills", NA), _num(hours, "%2.2f"),
                       _num(r.commitlog_disk_ratio, "%.4f"), activated)


def _more_row(b: BrokerRow) -> str:
    r = b.runtime

    def diff(a: int | None, c: int | None) -> str:
        return NA if a is None or c is None else str(a - c)

    if r is None:
        return MORE % (b.cluster, b.broker_name, NA, NA, NA, NA)
    return MORE % (b.cluster, b.broker_name,
                   diff(r.put_total_today_morning, r.put_total_yesterday_morning),
                   diff(r.get_total_today_morning, r.get_total_yesterday_morning),
                   diff(r.put_total_today_now, r.put_total_today_morning),
                   diff(r.get_total_today_now, r.get_total_today_morning))


def cluster_list_text(snap: ClusterSnapshot, cluster: str | None, more: bool, now_ms: int) -> str:
    rows = [b for b in snap.brokers if cluster is None or b.cluster == cluster]
    if more:
        lines = [MORE % ("#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest", "#InTotalToday",
                         "#OutTotalToday")]
        lines += [_more_row(b) for b in rows]
    else:
        lines = [HEADER % ("#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)",
                           "#OutTPS(LOAD)", "#Timer(Progress)", "#PCWait(ms)", "#Hour", "#SPACE", "#ACTIVATED")]
        lines += [_row(b, now_ms) for b in rows]
    return "\n".join(lines)


@command("clusterList", "mq admin cluster list", "List cluster infos")
def cluster_list(
    more: Annotated[bool, typer.Option("-m", "--moreStats", help="Print more stats")] = False,
    interval: Annotated[Optional[int], typer.Option("-i", "--interval", help="specify intervals numbers, it is in seconds")] = None,  # noqa: UP045
    cluster: Annotated[Optional[str], typer.Option("-c", "--clusterName", help="which cluster")] = None,  # noqa: UP045
    namesrv: NamesrvOpt = None,
) -> None:
    """Example: mq admin clusterList -n 127.0.0.1:9876"""

    async def once(admin: MQAdmin) -> None:
        while True:
            snap = await admin.cluster.cluster_snapshot()
            typer.echo(cluster_list_text(snap, cluster, more, int(time.time() * 1000)))
            if not interval:
                return
            import asyncio

            await asyncio.sleep(interval)

    run_until_interrupted(namesrv, once)
