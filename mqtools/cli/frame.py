"""The CLI's frame: the one place an expected failure becomes an exit.

Every `mq` command runs inside the root group's invoke: a ToolkitError raised anywhere below (the admin
API, presets, launches, drills, Spark offsets) prints as one line, `mq: error: ...`, and exits with the code
its class carries (mqtools.common.exitcodes). Commands raise; they do not catch to translate.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from mqtools.common.errors import ToolkitError


def fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"mq: error: {message}", err=True)
    return typer.Exit(code)


class FramedGroup(TyperGroup):
    """The root command group: runs a command and maps the toolkit's errors to their exits."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except ToolkitError as exc:
            raise fail(exc.summary(), exc.exit_code) from None
