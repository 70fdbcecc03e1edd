"""`mq admin namesrv config get|set`: the name servers' own configuration, read and changed live."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mqtools.cli.admin.common import ContextOpt, NamesrvOpt, OutputOpt, TimeoutOpt, WatchOpt, run, show
from mqtools.cli.output import Column, View

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

app = typer.Typer(help="Name servers' configuration.", no_args_is_help=True)
config_app = typer.Typer(help="Read or change the configuration of every name server.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("get")
def config_get(
    namesrv: NamesrvOpt = None, context: ContextOpt = None, output: OutputOpt = "table", watch: WatchOpt = None,
    timeout: TimeoutOpt = 5.0,
) -> None:
    """Every key of every name server's configuration, one row per name server and key.

    Example: mq admin namesrv config get -n '10.0.0.1:9876;10.0.0.2:9876'
    """

    async def build(admin: MQAdmin) -> View:
        configs = await admin.namesrv_config()
        rows = [[ns, k, v] for ns, config in configs.items() for k, v in sorted(config.items())]
        return View("NamesrvConfig", [Column("NAMESRV"), Column("KEY"), Column("VALUE")], rows,
                    {"namesrv": {ns: dict(sorted(c.items())) for ns, c in configs.items()}})

    show(namesrv, output, build, watch=watch, context=context, timeout=timeout)


@config_app.command("set")
def config_set(
    key: Annotated[str, typer.Argument(help="Configuration key, e.g. orderMessageEnable.")],
    value: Annotated[str, typer.Argument(help="New value.")],
    namesrv: NamesrvOpt = None, context: ContextOpt = None, timeout: TimeoutOpt = 5.0,
) -> None:
    """Change one key on every name server at runtime (and in its configuration file).

    Example: mq admin namesrv config set orderMessageEnable true
    """

    async def job(admin: MQAdmin) -> list[str]:
        return await admin.update_namesrv_config({key: value})

    for ns in run(namesrv, job, context=context, timeout=timeout):
        typer.echo(f"{ns}: {key}={value}")
