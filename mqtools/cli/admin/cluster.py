"""`mq admin cluster list|rt`: every broker with its load, heartbeats and disk; send RT per broker."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import (
    usage,
)
from mqtools.cli.admin.session import admin_command
from mqtools.cli.output import View

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

app = typer.Typer(help="Clusters and their brokers.", no_args_is_help=True)
RT_GROUP = "mq_admin_cluster_rt"
"""Producer group of `cluster rt`'s probe sends."""
ClusterOpt = Annotated[Optional[str], typer.Option("-c", "--cluster", help="Only this cluster.")]  # noqa: UP045


@admin_command(app, "list", output=True, watch=True)
async def list_(
    admin: MQAdmin,
    cluster: ClusterOpt = None,
    more: Annotated[bool, typer.Option("--more", "-m", help="Message totals of yesterday and today.")] = False,
) -> View:
    """Every broker (masters and slaves) with load, heartbeat age, disk.

    Example: mq admin cluster list -n 127.0.0.1:9876
    """
    from mqtools.client.admin.models.brokers import cluster_list_view

    snap = await admin.cluster.cluster_snapshot()
    if cluster is not None and cluster not in snap.clusters:
        raise usage(f"cluster {cluster} not found (known: {', '.join(sorted(snap.clusters)) or 'none'})")
    return cluster_list_view(snap, cluster, more)


@admin_command(app, "rt", output=True)
async def rt(
    admin: MQAdmin,
    cluster: ClusterOpt = None,
    amount: Annotated[int, typer.Option("--amount", "-a", min=1, help="Messages per broker.")] = 100,
    size: Annotated[int, typer.Option("--size", "-s", min=1, help="Message body bytes.")] = 128,
) -> View:
    """Send RT to each master: sync sends to the topic named after the broker, as mqadmin's clusterRT.

    Example: mq admin cluster rt -a 50
    """
    from mqtools.cli.admin.progress import Progress
    from mqtools.client.admin.models.brokers import cluster_rt_view

    masters = await admin.master_addrs(cluster)
    with Progress("measuring send RT", total=amount * len(masters)) as progress:
        probes = await admin.messages.send_rt(list(masters), amount, size, group=RT_GROUP, on_send=progress.advance)
    return cluster_rt_view(probes, masters, amount, size)
