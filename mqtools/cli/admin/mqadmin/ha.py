"""mqadmin's haStatus (RocketMQ 5.x HAStatusSubCommand): a master's slaves or a slave's HA client."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import note, usage
from mqtools.cli.admin.mqadmin import command, interval_option, run_until_interrupted
from mqtools.cli.admin.mqadmin.broker import cluster_sets, masterless
from mqtools.client.admin.models.mqadmin_text import ha_status_text
from mqtools.common.brokerrole import MASTER_ID

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

DEFAULT_INTERVAL_S = 3


@command("haStatus", "mq admin ha status", "Fetch ha runtime status data.")
def ha_status(
    broker_addr: Annotated[Optional[str], typer.Option("-b", "--brokerAddr", help="which broker to fetch")] = None,  # noqa: UP045
    cluster: Annotated[Optional[str], typer.Option("-c", "--clusterName", help="which cluster")] = None,  # noqa: UP045
    interval: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-i", "--interval", help="the interval(second) of get info")] = None,
) -> None:
    """Example: mq admin haStatus -c DefaultCluster"""
    if broker_addr is None and cluster is None:
        raise usage("give one of -b/--brokerAddr and -c/--clusterName")
    every = interval_option(interval, DEFAULT_INTERVAL_S)

    async def rounds(admin: MQAdmin) -> None:
        from mqtools.client.admin.base import NO_MASTER
        from mqtools.client.errors import MQClientError, NotAvailable, settled

        while True:
            if broker_addr is not None:
                addrs = [broker_addr.strip()]
            else:  # the masters; a set with none, its slaves' HA clients (mqadmin leaves the set out)
                sets = cluster_sets(await admin.cluster_info(), cluster or "")
                addrs = [a for members in sets.values() for i, a in members.items()
                         if i == MASTER_ID or MASTER_ID not in members]
                for name in masterless(sets):
                    note(f"{name}: {NO_MASTER}; its slaves' HA clients are shown")
            lacking = []
            for addr in addrs:
                status = await settled(admin.brokers.ha_status(addr))
                if isinstance(status, NotAvailable):
                    lacking.append(addr)
                elif isinstance(status, MQClientError):
                    raise status
                else:
                    typer.echo(ha_status_text(addr, status))
            if lacking:
                note(f"{', '.join(lacking)} answer no GET_BROKER_HA_STATUS (Apache RocketMQ 4.x has none): "
                     "`mq admin ha status` derives their slaves' diff from runtime offsets")
            if every is None:
                return
            await asyncio.sleep(every)

    run_until_interrupted(rounds)
