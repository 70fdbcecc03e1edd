"""The `mq` command: one typer app, one module per command group (imported when used: frame.LazyGroup).

`main()` is the console entry point: usage errors and other CLI failures print one line
on stderr (`mq: error: ...`) and exit non-zero, instead of a multi-line panel.
"""

from __future__ import annotations

import sys
from typing import ClassVar

import typer

from mqtools import __version__
from mqtools.cli import exporter_cmd, mcp_cmd, top_cmd
from mqtools.cli.admin.common import NO_OPTIONS, remember_group
from mqtools.cli.frame import FramedGroup
from mqtools.common.exitcodes import EXIT_USAGE


class Mq(FramedGroup):
    """`mq`: its command groups are imported when a command line names one (LazyGroup)."""

    lazy: ClassVar[dict[str, str]] = {
        "namesrv": "mqtools.cli.namesrv_cmd:app", "broker": "mqtools.cli.broker_cmd:app",
        "controller": "mqtools.cli.controller_cmd:app", "proxy": "mqtools.cli.proxy_cmd:app",
        "cluster": "mqtools.cli.cluster_cmd:app", "admin": "mqtools.cli.admin:app",
        "context": "mqtools.cli.context_cmd:app", "spark-load": "mqtools.cli.spark_cmd:app"}


app = typer.Typer(
    cls=Mq,
    name="mq",
    help="RocketMQ-compatible message queue and ops toolkit.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
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
    remember_group(NO_OPTIONS)  # what an earlier `mq admin` of this process was given is not this command's
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
