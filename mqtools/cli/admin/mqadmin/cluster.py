"""mqadmin's cluster commands: clusterList (5.x layout, and `-m` totals)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.mqadmin import command, run_until_interrupted
from mqtools.client.admin.models.mqadmin_text import cluster_list_text

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin


@command("clusterList", "mq admin cluster list", "List cluster infos")
def cluster_list(
    more: Annotated[bool, typer.Option("-m", "--moreStats", help="Print more stats")] = False,
    interval: Annotated[Optional[int], typer.Option("-i", "--interval", help="specify intervals numbers, it is in seconds")] = None,  # noqa: UP045
    cluster: Annotated[Optional[str], typer.Option("-c", "--clusterName", help="which cluster")] = None,  # noqa: UP045
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

    run_until_interrupted(once)
