"""`mq admin producer connections GROUP TOPIC`: the online producers of a group."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mqtools.cli.admin.group import CLIENT_COLUMNS, client_json, client_row
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
        conns = await admin.producer_connections(group, topic)
        data = {"group": group, "topic": topic, "clients": [client_json(c) for c in conns]}
        footer = [] if conns else [f"no producer of {group} is connected to the brokers of {topic}"]
        return View("ProducerConnections", CLIENT_COLUMNS, [client_row(c) for c in conns], data, footer=footer)

    s.show(build)
