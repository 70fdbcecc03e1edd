"""The `mq` command: one typer app, one module per command group.

`main()` is the console entry point: usage errors and other CLI failures print one line
on stderr (`mq: error: ...`) and exit non-zero, instead of a multi-line panel.
"""

from __future__ import annotations

import sys

import typer

from mqtools import __version__
from mqtools.cli import (
    admin,
    broker_cmd,
    cluster_cmd,
    context_cmd,
    controller_cmd,
    exporter_cmd,
    mcp_cmd,
    namesrv_cmd,
    proxy_cmd,
    spark_cmd,
    top_cmd,
)
from mqtools.cli.frame import FramedGroup
from mqtools.common.exitcodes import EXIT_USAGE

app = typer.Typer(
    cls=FramedGroup,
    name="mq",
    help="RocketMQ-compatible message queue and ops toolkit.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(namesrv_cmd.app, name="namesrv")
app.add_typer(broker_cmd.app, name="broker")
app.add_typer(controller_cmd.app, name="controller")
app.add_typer(proxy_cmd.app, name="proxy")
app.add_typer(cluster_cmd.app, name="cluster")
app.add_typer(admin.app, name="admin")
app.add_typer(context_cmd.app, name="context")
app.add_typer(spark_cmd.app, name="spark-load")
app.command("top")(top_cmd.top)
app.command("exporter")(exporter_cmd.exporter)
app.command("mcp")(mcp_cmd.mcp)


@app.command()
def version() -> None:
    """Print the mq version."""
    typer.echo(__version__)


def _is_click_error(exc: Exception) -> bool:
    """Click's error protocol (format_message, exit_code): typer raises these, vendored or not."""
    return callable(getattr(exc, "format_message", None)) and isinstance(getattr(exc, "exit_code", None), int)


def _is_help_request(exc: Exception) -> bool:
    """A group called with no arguments (click >= 8.2 raises it; older click prints help and exits 0)."""
    return type(exc).__name__ == "NoArgsIsHelpError"


def main(argv: list[str] | None = None) -> int:
    try:
        result = app(args=argv, prog_name="mq", standalone_mode=False)
    except typer.Abort:
        typer.echo("mq: aborted", err=True)
        return 130
    except typer.Exit as exc:
        return exc.exit_code
    except Exception as exc:
        if not _is_click_error(exc):
            raise
        if _is_help_request(exc):
            text = exc.format_message()  # type: ignore[attr-defined]
            if text:  # rich help was printed when the error was made; plain help is its message
                typer.echo(text)
            return 0
        typer.echo(f"mq: error: {exc.format_message()}", err=True)  # type: ignore[attr-defined]
        return exc.exit_code or EXIT_USAGE  # type: ignore[attr-defined]
    return result if isinstance(result, int) else 0


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    run()
