"""`mq admin namesrv config get|set`: the name servers' own configuration, read and changed live."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import View
from mqtools.client.admin.models.configs import namesrv_config_view

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

app = typer.Typer(help="Name servers' configuration.", no_args_is_help=True)
config_app = typer.Typer(help="Read or change the configuration of every name server.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@admin_command(config_app, "get", output=True, watch=True)
async def config_get(admin: MQAdmin) -> View:
    """Every key of every name server's configuration, one row per name server and key.

    Example: mq admin namesrv config get -n '10.0.0.1:9876;10.0.0.2:9876'
    """
    return namesrv_config_view(await admin.namesrv.namesrv_config())


@admin_command(config_app, "set")
def config_set(
    s: Session,
    key: Annotated[str, typer.Argument(help="Configuration key, e.g. orderMessageEnable.")],
    value: Annotated[str, typer.Argument(help="New value.")],
) -> None:
    """Change one key on every name server at runtime (and in its configuration file).

    Example: mq admin namesrv config set orderMessageEnable true
    """

    async def job(admin: MQAdmin) -> list[str]:
        return await admin.namesrv.update_namesrv_config({key: value})

    for ns in s.run(job):
        typer.echo(f"{ns}: {key}={value}")
