"""`mq admin diagnose`: one verdict with its evidence (mqtools.diagnose), rendered as a table or JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mqtools.cli.admin.common import usage
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import Column, View
from mqtools.diagnose.findings import exit_code
from mqtools.diagnose.group import DEFAULTS, GroupDiagnosis, Thresholds

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.diagnose.broker import BrokerDiagnosis
    from mqtools.diagnose.cluster import ClusterDiagnosis

app = typer.Typer(help="Verdicts with evidence: why a group lags, why a broker is busy.", no_args_is_help=True)
FINDING_COLUMNS = [Column("BROKER"), Column("ADDR"), Column("FINDING"), Column("FIGURE", True), Column("LIMIT", True),
                   Column("CONFIG KEY"), Column("CLIENTS GET")]
QUEUE_COLUMNS = [Column("TOPIC"), Column("BROKER"), Column("QID", True), Column("BROKER OFFSET", True),
                 Column("CONSUMER OFFSET", True), Column("LAG", True), Column("IN/S", True), Column("OUT/S", True),
                 Column("OWNER"), Column("LOCKED")]


def group_view(d: GroupDiagnosis) -> View:
    rows = [[q.queue.topic, q.queue.broker_name, q.queue.queue_id, q.broker_offset, q.consumer_offset, q.lag,
             q.produced_per_s, q.consumed_per_s, q.owner, q.locked] for q in d.queues]
    footer = [f"{d.summary}",
              (f"window {d.window_s:.1f} s: lag {_n(d.lag)} (was {_n(d.lag_at_start)}), in {_rate(d.produce_tps)}, "
              f"out {_rate(d.consume_tps)}, drains in {_n(d.drain_s, 's')}, retries {_n(d.retry_growth)}, "
              f"to DLQ {_n(d.dlq_growth)}")]
    footer += [f"member {m.client_id} {m.version or 'n/a'}{' orderly' if m.orderly else ''}, holds "
               f"{'n/a' if m.held is None else len(m.held)} queue(s)" for m in d.members]
    footer += [f"also: {', '.join(d.also)}"] if d.also else []
    footer += [f"next: {a}" for a in d.actions]
    return View("GroupDiagnosis", QUEUE_COLUMNS, rows, d.to_json(), title=f"{d.group}: {d.verdict.upper()}",
                footer=footer)


def _n(value: float | None, unit: str = "") -> str:
    if value is None:
        return "n/a"
    return f"{value:,.0f}{' ' + unit if unit else ''}"


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f} msgs/s"


@admin_command(app, "group", output=True, timeout=5.0)
def group(
    s: Session,
    name: Annotated[str, typer.Argument(help="The consumer group.")],
    window: Annotated[float, typer.Option(
        "--window", help="Seconds of samples the verdict is taken over (10 at least: clients commit offsets every "
                         "5 s, so a shorter window could take a working queue for a stalled one).",
        min=DEFAULTS.min_window)] = DEFAULTS.min_window,
    lag_ok: Annotated[int, typer.Option("--lag-ok", help="A backlog up to this many messages is healthy.",
                                        min=0)] = DEFAULTS.lag_ok,
    retry_share: Annotated[float, typer.Option(
        "--retry-share", help="Retries at this share of what is consumed block the group.", min=0.0)] = DEFAULTS.retry_share,
) -> None:
    """Why does this group lag? One verdict, the queues, members and rates that show it, and what to run next.
    Exit 0 healthy or rebalancing, 1 needs action, 3 unknown.

    Example: mq admin diagnose group OrderConsumers --window 15 -o json
    """
    from mqtools.diagnose.collect import diagnose_group

    thresholds = Thresholds(lag_ok=lag_ok, retry_share=retry_share)

    async def job(admin: MQAdmin) -> GroupDiagnosis:
        return await diagnose_group(admin, name, window, thresholds)

    result = s.run(job)
    s.render(group_view(result))
    raise typer.Exit(exit_code([result.severity]))


def broker_view(found: list[BrokerDiagnosis]) -> View:
    rows = [[d.broker, d.addr, f.name, f.figure, f.limit, f.config_key, f.answers] for d in found for f in d.findings]
    footer = [f"{d.broker} {d.addr} ({d.role or 'n/a'}): {d.verdict.upper()}: {d.summary}" for d in found]
    for d in found:
        fig = d.figures
        footer.append(f"{d.addr}: put TPS {_n(fig.get('putTps10s'))} (10 s) {_n(fig.get('putTps10m'))} (10 min), "
                      f"send queue {_n(fig.get('sendQueueSize'))} waiting {_n(fig.get('sendQueueHeadWaitMs'), 'ms')}, "
                      f"page cache lock {_n(fig.get('pageCacheLockMs'), 'ms')}, dispatch behind "
                      f"{_n(fig.get('dispatchBehindBytes'), 'B')}, disk {_pct(fig.get('diskRatio'))}")
    return View("BrokerDiagnosis", FINDING_COLUMNS, rows, {"brokers": [d.to_json() for d in found]},
                title=" ".join(f"{d.addr}: {d.verdict.upper()}" for d in found), footer=footer)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


@admin_command(app, "broker", output=True, timeout=5.0)
def broker(
    s: Session,
    name: Annotated[str, typer.Argument(help="A broker name (its master and slaves) or one broker's address.")],
    window: Annotated[float, typer.Option("--window", help="Seconds of samples the findings are taken over.",
                                          min=0.0)] = 5.0,
) -> None:
    """Why is this broker busy or slow? Findings from its runtime figures against its config: the send queue,
    page cache lock, disk, replication, dispatch and flush, traffic against its own 10-minute figure; what
    RocketMQ answers clients meanwhile and which config key moves the limit. Exit 0 healthy, 1 a finding needs
    action, 3 unknown.

    Example: mq admin diagnose broker broker-a -o json
    """
    from mqtools.diagnose.collect import diagnose_broker

    async def job(admin: MQAdmin) -> list[BrokerDiagnosis]:
        from mqtools.client.errors import UnknownTargetError

        try:
            return await diagnose_broker(admin, name, window)
        except UnknownTargetError as exc:
            raise usage(str(exc)) from None

    found = s.run(job)
    s.render(broker_view(found))
    raise typer.Exit(exit_code([d.severity for d in found]))


CLUSTER_COLUMNS = [Column("KIND"), Column("NAME"), Column("VERDICT"), Column("SEVERITY"), Column("SUMMARY")]


def cluster_view(d: ClusterDiagnosis) -> View:
    rows = [[i.kind, i.name, i.verdict, i.severity.value, i.summary] for i in d.items]
    footer = [f"{len(d.unused_groups)} group(s) configured but never used: {', '.join(d.unused_groups)}"] \
        if d.unused_groups else []
    return View("ClusterDiagnosis", CLUSTER_COLUMNS, rows, d.to_json(),
                title=f"cluster: {d.worst.value.upper()} ({len(d.items)} verdicts, worst first)", footer=footer)


@admin_command(app, "cluster", output=True, watch=True, timeout=5.0)
def cluster(
    s: Session,
    window: Annotated[float, typer.Option("--window", help="Seconds of samples every verdict is taken over.",
                                          min=DEFAULTS.min_window)] = DEFAULTS.min_window,
    lag_ok: Annotated[int, typer.Option("--lag-ok", help="A group's backlog up to this many messages is healthy.",
                                        min=0)] = DEFAULTS.lag_ok,
) -> None:
    """Every broker, group and HA pair in one pass, worst first (as `diagnose broker`, `diagnose group` and
    `ha ready` judge them). Exit by the worst: 0 healthy, 1 something needs action, 3 unknown.

    Example: mq admin diagnose cluster -o json; mq admin diagnose cluster --watch 30
    """
    from mqtools.diagnose.cluster import diagnose_cluster

    thresholds = Thresholds(lag_ok=lag_ok)

    async def build(admin: MQAdmin) -> View:
        return cluster_view(await diagnose_cluster(admin, window, thresholds))

    if s.watch is not None:
        s.show(build)
        return

    async def job(admin: MQAdmin) -> ClusterDiagnosis:
        return await diagnose_cluster(admin, window, thresholds)

    found = s.run(job)
    s.render(cluster_view(found))
    raise typer.Exit(found.exit_code)
