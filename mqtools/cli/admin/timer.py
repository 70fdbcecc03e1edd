"""`mq admin timer status`: timer messages (RIP-43) per broker set, from the brokers' own figures.

Per set: whether the broker runs a timer wheel, how many timer messages wait (per topic in the JSON),
the second delivery got up to, the dequeue lag (seconds behind now), the enqueue lag (messages not yet in
the wheel), congestion and TPS. Apache's mqadmin 5.5 has no timer command, so there is no classic spelling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import ClusterOpt, usage
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import View

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

app = typer.Typer(help="Timer messages: pending per broker, delivery progress and lag.", no_args_is_help=True)


@admin_command(app, "status", output=True, watch=True)
def status(
    s: Session,
    broker_addr: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-b", "--broker-addr", help="Only this broker (host:port), read at that address.")] = None,
    cluster: ClusterOpt = None,
) -> None:
    """Pending timer messages, delivery position, dequeue and enqueue lag, congestion, TPS per broker set.

    Each set is read from its master, else a slave (marked *); a set nobody answers for makes the
    output partial. Neither -b nor -c: every broker set the name servers know.

    Example: mq admin timer status -c DefaultCluster -o json
    """
    if broker_addr is not None and cluster is not None:
        raise usage("give -b or -c, not both")
    from mqtools.client.admin.models.timer import timer_status_view

    async def build(admin: MQAdmin) -> View:
        return timer_status_view(await admin.timer.timer_status(cluster, broker_addr))

    s.show(build)
