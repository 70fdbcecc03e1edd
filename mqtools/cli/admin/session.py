"""One CLI frame for `mq admin` commands: the shared options, declared once, and the Session they make.

`@admin_command(app, "list", output=True, watch=True)` registers a command whose own parameters come
first and the shared tail (-n/--namesrv, --context, [-o], [--watch], --timeout, then the TLS flags) after
them, in that order, exactly as each command declared them by hand before (but the TLS flags, which were
`mq admin`'s alone); the command receives them as one `Session` (its parameter `s`). A read is just its
call and its document: `async def f(admin, ...) -> View`, which the frame runs on the session and prints
once, or every --watch seconds. The options given to `mq admin` itself (-n, --context, TLS) are kept by
`common.remember_group`; a command's own win over them.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from mqtools.cli.admin.common import (
    ClusterOptions,
    ContextOpt,
    NamesrvOpt,
    OutputOpt,
    TimeoutOpt,
    WatchOpt,
    check_output,
    evaluated,
    proxies_given,
    render_once,
    run,
    show,
    with_signature,
    with_tls,
)
from mqtools.cli.output import View, render

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Session:
    """Where and how one `mq admin` command talks to the cluster, and how it prints."""

    where: ClusterOptions
    output: str
    watch: float | None
    timeout: float

    def run(self, job: Callable[[MQAdmin], Awaitable[T]]) -> T:
        """Run `job` on an admin session; failures become the documented exits."""
        return run(self.where, job, timeout=self.timeout)

    def show(self, build: Callable[[MQAdmin], Awaitable[View]]) -> None:
        """Print what `build` returns, once or every --watch seconds."""
        show(self.where, self.output, build, watch=self.watch, timeout=self.timeout)

    def render(self, view: View) -> None:
        """Print the view; exit 4 when it is partial."""
        render_once(view, self.output)

    def print(self, view: View) -> None:
        """Print the view and go on: for commands whose exit is a verdict (diagnose, ha ready)."""
        render(view, self.output)

    def proxies(self, given: list[str] | None, *, required: bool = False) -> tuple[str, ...]:
        """--proxy as given, else the resolved context's proxies."""
        return proxies_given(given, self.where, required=required)


def _tail(output: bool, watch: bool, timeout: float) -> list[inspect.Parameter]:
    kw = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter("namesrv", kw, default=None, annotation=NamesrvOpt),
              inspect.Parameter("context", kw, default=None, annotation=ContextOpt)]
    if output:
        params.append(inspect.Parameter("output", kw, default="table", annotation=OutputOpt))
    if watch:
        params.append(inspect.Parameter("watch", kw, default=None, annotation=WatchOpt))
    params.append(inspect.Parameter("timeout", kw, default=timeout, annotation=TimeoutOpt))
    return params


def _call(fn: Callable[..., Awaitable[View]], kwargs: dict[str, Any], admin: MQAdmin) -> Awaitable[View]:
    return fn(admin, **kwargs)


def admin_command(app: typer.Typer, name: str, *, output: bool = False, watch: bool = False,
                  timeout: float = 5.0) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register `fn(s: Session, ...)`, or a read `async fn(admin: MQAdmin, ...) -> View`, as `name` with the
    shared options after its own."""

    def register(fn: Callable[..., Any]) -> Callable[..., None]:
        reads = inspect.iscoroutinefunction(fn)
        own = evaluated(fn, 1)

        def call(kwargs: dict[str, Any]) -> None:
            fmt = check_output(kwargs.pop("output", "table"))
            session = Session(ClusterOptions.given(kwargs.pop("namesrv"), kwargs.pop("context")), fmt,
                              kwargs.pop("watch", None), kwargs.pop("timeout"))
            if reads:
                session.show(functools.partial(_call, fn, kwargs))
            else:
                fn(session, **kwargs)

        command = with_tls(with_signature(fn, [*own, *_tail(output, watch, timeout)], call))
        app.command(name)(command)
        return command

    return register
