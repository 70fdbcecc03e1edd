"""`mq admin producer connections GROUP TOPIC`: the online producers of a group."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mqtools.cli.admin.common import ProxiesOpt
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import View

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

app = typer.Typer(help="Producer groups: who is online.", no_args_is_help=True)


@admin_command(app, "connections", output=True, watch=True)
def connections(
    s: Session,
    group: Annotated[str, typer.Argument(help="Producer group.")],
    topic: Annotated[str, typer.Argument(help="A topic the group sends to (its brokers are asked).")],
    proxies: ProxiesOpt = None,
) -> None:
    """The group's producers connected to the brokers serving TOPIC (none online: an empty list); with proxies (-p,
    or the context's) also TOPIC's RocketMQ 5 gRPC producers, which only the proxies see.

    Example: mq admin producer connections OrderProducers Orders
    """
    asked = s.proxies(proxies)

    async def build(admin: MQAdmin) -> View:
        from mqtools.client.admin.models.connections import producer_connections_view

        conns = await admin.groups.producer_connections(group, topic)
        return producer_connections_view(group, topic, conns, await admin.proxies.clients_of(asked, topics=[topic])
                                         if asked else None)

    s.show(build)
