"""`mq admin diagnose`: one verdict with its evidence (mqtools.diagnose), rendered as a table or JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import View
from mqtools.diagnose.findings import exit_code
from mqtools.diagnose.group import DEFAULTS, GroupDiagnosis, Thresholds, group_diagnosis_view

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.diagnose.broker import BrokerDiagnosis
    from mqtools.diagnose.cluster import ClusterDiagnosis

app = typer.Typer(help="Verdicts with evidence: why a group lags, why a broker is busy.", no_args_is_help=True)


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
    proxies: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--proxy", help="A RocketMQ 5 proxy's remoting address (host:8080; repeat for more; default: the context's): "
                        "the group's gRPC clients there count as members (the brokers never see them).")] = None,
) -> None:
    """Why does this group lag? One verdict, the queues, members and rates that show it, and what to run next.
    Exit 0 healthy or rebalancing, 1 needs action, 3 unknown. A group consumed only through RocketMQ 5 proxies
    reads as offline unless its proxies are given with --proxy.

    Example: mq admin diagnose group OrderConsumers --window 15 -o json
    """
    from mqtools.diagnose.collect import diagnose_group

    thresholds = Thresholds(lag_ok=lag_ok, retry_share=retry_share)
    asked = s.proxies(proxies)

    async def job(admin: MQAdmin) -> GroupDiagnosis:
        return await diagnose_group(admin, name, window, thresholds, proxies=asked)

    result = s.run(job)
    s.print(group_diagnosis_view(result))
    raise typer.Exit(exit_code([result.severity]))


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
    from mqtools.diagnose.broker import broker_diagnosis_view
    from mqtools.diagnose.collect import diagnose_broker

    async def job(admin: MQAdmin) -> list[BrokerDiagnosis]:
        return await diagnose_broker(admin, name, window)

    found = s.run(job)
    s.print(broker_diagnosis_view(found))
    raise typer.Exit(exit_code([d.severity for d in found]))


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
    from mqtools.diagnose.cluster import cluster_diagnosis_view, diagnose_cluster

    thresholds = Thresholds(lag_ok=lag_ok)

    async def build(admin: MQAdmin) -> View:
        return cluster_diagnosis_view(await diagnose_cluster(admin, window, thresholds))

    if s.watch is not None:
        s.show(build)
        return

    async def job(admin: MQAdmin) -> ClusterDiagnosis:
        return await diagnose_cluster(admin, window, thresholds)

    found = s.run(job)
    s.print(cluster_diagnosis_view(found))
    raise typer.Exit(found.exit_code)
