"""`mq admin producer connections GROUP TOPIC`: the online producers of a group."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

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
) -> None:
    """The group's producers connected to the brokers serving TOPIC (none online: an empty list).

    Example: mq admin producer connections OrderProducers Orders
    """

    async def build(admin: MQAdmin) -> View:
        from mqtools.client.admin.models.groups import producer_connections_view

        return producer_connections_view(group, topic, await admin.groups.producer_connections(group, topic))

    s.show(build)
