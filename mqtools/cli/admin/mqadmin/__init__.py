"""The mqadmin dialect: classic mqadmin commands by name, case-insensitively, with mqadmin's options.

Each area module (`cluster`, `topic`, ...) registers its commands with `@command(name, twin, purpose)`
on one typer app; `find` looks a name up in any letter case, and `listing` prints the catalogue as
`mqadmin` with no arguments does, with each command's mq-dialect twin. Output follows mqadmin's own
printf patterns (`java_format`); exit codes are mq's (mqadmin exits 0 even when a command fails).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeVar

import typer

from mqtools.cli.admin import common
from mqtools.cli.admin.common import usage
from mqtools.cli.frame import on_interrupt
from mqtools.common.exitcodes import EXIT_OK

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

AREAS = ("cluster", "message", "trace", "broker", "namesrv", "topic", "consumer", "group", "pop", "producer", "ha", "acl",
         "auth", "controller")
"""Modules of this package that register commands; imported on first lookup, not at `mq` start-up."""

app = typer.Typer(add_completion=False)


@app.callback()
def dialect() -> None:
    """mqadmin's commands (a group even while one area is registered)."""

NamesrvOpt = Annotated[
    Optional[str],  # noqa: UP045 - typer needs Optional
    typer.Option("-n", "--namesrvAddr", help="Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'"),
]
TopicOpt = Annotated[str, typer.Option("-t", "--topic", help="topic name")]
MsgIdOpt = Annotated[str, typer.Option("-i", "--msgId", help="Message Id")]
LmqClusterOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "-c", "--cluster", help="Cluster name or lmq parent topic, lmq is used to find the route.")]
"""The -c that mqadmin's message and consumer commands take to find a route (a cluster or an lmq's parent)."""


@dataclass(frozen=True, slots=True)
class Entry:
    name: str
    twin: str
    """The mq-dialect command that does the same, e.g. `mq admin topic create`."""
    purpose: str


CATALOGUE: dict[str, Entry] = {}
"""lower-case mqadmin name -> its entry, in registration order."""


def command(name: str, twin: str, purpose: str, *, namesrv: bool = True) -> Callable[[F], F]:
    """Register an mqadmin-dialect command under its mqadmin name. `namesrv`: it reaches the cluster through
    the name servers, so the frame adds mqadmin's -n/--namesrvAddr and mq's --context after its own options
    and the command's `run` goes there (the controller commands that talk to controllers only have neither);
    the TLS flags come last, as every `mq admin` command takes them."""

    def register(fn: F) -> F:
        CATALOGUE[name.lower()] = Entry(name, twin, purpose)
        app.command(name, help=f"{purpose} (mq dialect: {twin})")(common.with_tls(_with_namesrv(fn) if namesrv else fn))
        return fn

    return register


def _with_namesrv(fn: Callable[..., None]) -> Callable[..., None]:
    """`fn` with -n/--namesrvAddr and then mq's --context as its last options; the values are kept for `run`
    while the command runs."""

    def call(kwargs: dict[str, Any]) -> None:
        _given[0] = (kwargs.pop("namesrv"), kwargs.pop("context"))
        fn(**kwargs)

    kw = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = list(inspect.signature(fn, eval_str=True).parameters.values())
    tail = [inspect.Parameter("namesrv", kw, default=None, annotation=NamesrvOpt),
            inspect.Parameter("context", kw, default=None, annotation=common.ContextOpt)]
    return common.with_signature(fn, [*params, *tail], call)


_given: list[tuple[str | None, str | None]] = [(None, None)]
"""The running command's -n and --context (one command per `mq` process, as `common.remember_group`'s slot)."""


def given_namesrv() -> str | None:
    """-n as the command was given it (None: the one given to `mq admin`, the environment or the context)."""
    return _given[0][0]


def run(job: Callable[[MQAdmin], Awaitable[T]], *, timeout: float | None = None) -> T:
    """The command's job on an admin session at its name servers (common.run with the command's -n)."""
    return common.run(cluster_options(), job, timeout=timeout)


def cluster_options() -> common.ClusterOptions:
    """Where the running command talks: its -n, else what `mq admin` was given, the environment or the context."""
    return common.ClusterOptions.given(*_given[0])


def _registered() -> dict[str, Any]:
    """lower-case name -> the typer CommandInfo each area registered (the areas imported on first call)."""
    for area in AREAS:  # each imported once (sys.modules); importing registers its commands
        importlib.import_module(f"mqtools.cli.admin.mqadmin.{area}")
    return {info.name.lower(): info for info in app.registered_commands}


_commands: dict[str, Any] = {}


def find(name: str) -> Any:
    """The mqadmin-dialect command called `name` in any letter case, or None. Only that command is turned
    into a click command: turning all of them, on every call, was a third of the dialect's start-up."""
    key = name.lower()
    if key not in _commands:
        info = _registered().get(key)
        if info is None:
            return None
        _commands[key] = typer.main.get_command_from_info(
            info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode)
    return _commands[key]


def every() -> list[str]:
    """Every mqadmin-dialect name, lower case, in registration order."""
    return list(_registered())


def listing() -> str:
    """What `mqadmin` prints with no arguments, plus the mq-dialect twin of each command."""
    lines = ["The most commonly used mqadmin commands are:"]
    lines += [f"   {e.name:<35} {e.purpose}  [{e.twin}]" for e in (CATALOGUE[name] for name in every())]
    lines += ["", "See 'mq admin help <command>' for more information on a specific command."]
    return "\n".join(lines)


def one_of(broker_addr: str | None, cluster: str | None) -> None:
    """mqadmin's write commands take -b or -c: neither is a usage error."""
    if broker_addr is None and cluster is None:
        raise usage("give -b/--brokerAddr or -c/--clusterName")


def interval_option(value: str | None, default: int) -> int | None:
    """-i: whole seconds between rounds (at least 1); present but empty means `default`, absent None (once)."""
    if value is None:
        return None
    if not value.strip():
        return default
    try:
        return max(1, int(value))
    except ValueError:
        raise usage(f"-i must be a number of seconds, not {value!r}") from None


def charset_option(name: str | None) -> str | None:
    """A charset option (-f, -c) as Python names the codec; None when not given."""
    import codecs

    if name is None:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        raise usage(f"unknown charset {name}") from None


def run_until_interrupted(rounds: Callable[[MQAdmin], Awaitable[None]]) -> None:
    """Run a command that repeats every -i seconds (or once without it): Ctrl-C ends it with exit 0, as it
    ends mqadmin's loops."""
    on_interrupt(EXIT_OK)
    run(rounds)




