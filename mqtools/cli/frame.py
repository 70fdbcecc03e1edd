"""The CLI's frame: the one place an expected failure, or Ctrl-C, becomes an exit.

Every `mq` command runs inside the root group's invoke: a ToolkitError raised anywhere below (the admin
API, presets, launches, drills, Spark offsets) prints as one line, `mq: error: ...`, and exits with the code
its class carries (mqtools.common.exitcodes). Commands raise; they do not catch to translate. A command that
runs until interrupted says once what Ctrl-C means for it (`on_interrupt`); for any other, Ctrl-C aborts
(exit 130).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar

import typer
from typer.core import TyperGroup
from typer.models import TyperInfo

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


class LazyGroup(TyperGroup):
    """A group whose sub-apps are imported, and turned into click commands, when first asked for.

    `mq admin topic list` then imports the topic commands and what they need, not the other thirty command
    modules and their models (each a dozen dataclasses to build), and a shell's TAB completion does the
    same. A listing (`--help`, completions, the reference) asks for every name and so loads them all.
    """

    #: Command name -> "module:attribute" of its typer app, in the order `--help` lists them.
    lazy: ClassVar[dict[str, str]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._registered = tuple(self.commands)  # typer's listing order: its commands, then the groups (lazy)

    def list_commands(self, ctx: Any) -> list[str]:
        return [*self._registered, *self.lazy]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = self.commands.get(cmd_name)
        if found is None and cmd_name in self.lazy:
            module, _, attribute = self.lazy[cmd_name].partition(":")
            sub = getattr(importlib.import_module(module), attribute)
            found = self.commands[cmd_name] = typer.main.get_group_from_info(
                TyperInfo(sub, name=cmd_name), pretty_exceptions_short=sub.pretty_exceptions_short,
                suggest_commands=self.suggest_commands, rich_markup_mode=self.rich_markup_mode)
        return found

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and self.get_command(ctx, args[0]) is None:
            for name in self.lazy:  # a name no command has: "did you mean" looks among them all
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)


class FramedGroup(LazyGroup):
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
