"""The CLI's frame: the one place an expected failure, or Ctrl-C, becomes an exit.

Every `mq` command runs inside the root group's invoke: a ToolkitError raised anywhere below (the admin
API, presets, launches, drills, Spark offsets) prints as one line, `mq: error: ...`, and exits with the code
its class carries (mqtools.common.exitcodes). Commands raise; they do not catch to translate. A command that
runs until interrupted says once what Ctrl-C means for it (`on_interrupt`); for any other, Ctrl-C aborts
(exit 130).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import typer
from typer.core import TyperGroup

from mqtools.common.errors import ToolkitError, UsageError

_interrupt: ContextVar[tuple[int, str | None] | None] = ContextVar("mq_on_interrupt", default=None)


def fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"mq: error: {message}", err=True)
    return typer.Exit(code)


def on_interrupt(code: int, message: str | None = None) -> None:
    """What Ctrl-C means for the running command: exit `code`, after `message` as an error line if given
    (a watch or a server ends with 0; a drill stopped half-way is a failure)."""
    _interrupt.set((code, message))


@contextmanager
def needs_extra(extra: str, what: str) -> Iterator[None]:
    """Imports of an optional extra: one that is missing is a usage error naming `pip install 'mqtools[extra]'`."""
    try:
        yield
    except ImportError as exc:
        raise UsageError(f"{what} needs the {extra} extra ({exc.name or exc} is missing): "
                         f"pip install 'mqtools[{extra}]'") from None


class FramedGroup(TyperGroup):
    """The root command group: runs a command and maps the toolkit's errors and Ctrl-C to their exits."""

    def invoke(self, ctx: Any) -> Any:
        token = _interrupt.set(None)
        try:
            return super().invoke(ctx)
        except ToolkitError as exc:
            raise fail(exc.summary(), exc.exit_code) from None
        except KeyboardInterrupt:
            meant = _interrupt.get()
            if meant is None:
                raise
            code, message = meant
            raise (typer.Exit(code) if message is None else fail(message, code)) from None
        finally:
            _interrupt.reset(token)
