"""The `mq` command: one typer app, one module per command group."""

from __future__ import annotations

import typer

from mqtools import __version__
from mqtools.cli import namesrv_cmd

app = typer.Typer(
    name="mq",
    help="RocketMQ-compatible message queue and ops toolkit.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(namesrv_cmd.app, name="namesrv")


@app.command()
def version() -> None:
    """Print the mq version."""
    typer.echo(__version__)


if __name__ == "__main__":
    app()
