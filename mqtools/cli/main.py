"""The `mq` command: one typer app, one module per command group.

`main()` is the console entry point: usage errors and other CLI failures print one line
on stderr (`mq: error: ...`) and exit non-zero, instead of a multi-line panel.
"""

from __future__ import annotations

import sys

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError

from mqtools import __version__
from mqtools.cli import broker_cmd, cluster_cmd, namesrv_cmd

EXIT_USAGE = 2

app = typer.Typer(
    name="mq",
    help="RocketMQ-compatible message queue and ops toolkit.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(namesrv_cmd.app, name="namesrv")
app.add_typer(broker_cmd.app, name="broker")
app.add_typer(cluster_cmd.app, name="cluster")


@app.command()
def version() -> None:
    """Print the mq version."""
    typer.echo(__version__)


def main(argv: list[str] | None = None) -> int:
    try:
        result = app(args=argv, prog_name="mq", standalone_mode=False)
    except NoArgsIsHelpError as exc:
        typer.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        return 0
    except ClickException as exc:
        typer.echo(f"mq: error: {exc.format_message()}", err=True)
        return exc.exit_code or EXIT_USAGE
    except typer.Abort:
        typer.echo("mq: aborted", err=True)
        return 130
    except typer.Exit as exc:
        return exc.exit_code
    return result if isinstance(result, int) else 0


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    run()
