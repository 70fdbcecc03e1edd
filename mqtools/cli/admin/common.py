"""What every `mq admin` command shares: options, the admin session, exit codes, --watch, confirmation.

Exit codes (documented in `mq admin --help` and the README): 0 done; 1 the cluster refused or the
thing does not exist (the RocketMQ code and remark are in the message); 2 usage (bad argument, no
name server); 3 the cluster could not be reached or did not answer in time; 4 a read answered in part
(what it could not read is named in the output). Each failure prints one line on stderr: `mq: error: ...`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeVar

import typer

from mqtools.cli.frame import fail, on_interrupt
from mqtools.cli.output import FORMATS, View, is_terminal, render
from mqtools.common.errors import UsageError
from mqtools.common.exitcodes import EXIT_OK, EXIT_PARTIAL, EXIT_REFUSED

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.contexts import Target
    from mqtools.client.errors import MQClientError
    from mqtools.common.security import TlsClientOptions

T = TypeVar("T")

EXIT_CODES_HELP = ("Exit codes: 0 done; 1 refused by the cluster or not found (RocketMQ code and remark "
                   "in the message); 2 usage error or no name server; 3 cluster unreachable or timed out; "
                   "4 a partial answer (what could not be read is named).")
DEFAULT_TIMEOUT = 5.0
TIMEOUT_ENV = "MQ_TIMEOUT"
"""Seconds to wait for each answer where no --timeout is given: every admin command, and the mqadmin
dialect's (mqadmin has no such option), so a script can bound its reads of a cluster with a hung broker."""

NamesrvOpt = Annotated[
    Optional[str],  # noqa: UP045 - typer needs Optional
    typer.Option("-n", "--namesrv", help="Name servers 'h1:9876;h2:9876' (else NAMESRV_ADDR, else the context)."),
]
ContextOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--context", help="Use this named context instead of the current one."),
]
OutputOpt = Annotated[str, typer.Option("-o", "--output", help="table, json or csv.")]
WatchOpt = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option("--watch", "-w", help="Redraw every SECONDS (appends a record per round when piped).",
                 min=0.1),
]
TimeoutOpt = Annotated[float, typer.Option("--timeout", envvar=TIMEOUT_ENV, help="Seconds to wait for each answer.",
                                           min=0.1)]
ClusterOpt = Annotated[Optional[str], typer.Option("-c", "--cluster", help="Every master of this cluster.")]  # noqa: UP045
BrokerOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "-b", "--broker-addr", help="One broker, by address (host:port).")]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show what would change and change nothing.")]
TlsOpt = Annotated[bool, typer.Option("--tls", help="Connect with TLS (the system's CAs unless --tls-ca).")]
TlsCaOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--tls-ca", metavar="FILE", help="CA certificate(s) that sign the servers (implies --tls)."),
]
TlsCertOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--tls-cert", metavar="FILE", help="Client certificate, for servers that ask for one."),
]
TlsKeyOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--tls-key", metavar="FILE", help="The client certificate's private key."),
]


def usage(message: str) -> UsageError:
    """The error to raise for a bad argument: the frame prints it and exits EXIT_USAGE."""
    return UsageError(message)


def with_signature(fn: Callable[..., Any], params: list[inspect.Parameter],
                   call: Callable[[dict[str, Any]], None]) -> Callable[..., None]:
    """A command that typer reads as `fn` (name, help) with `params` as its options; `call` gets their values.
    How both dialects' frames add options a command does not declare itself."""

    @functools.wraps(fn)
    def command(**kwargs: Any) -> None:
        call(kwargs)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {}
    del command.__wrapped__  # typer must read the signature above, not fn's
    return command


def broker_ids(ids: str | None, option: str) -> list[int] | None:
    """Broker ids as both dialects give them, '1;2;3'; None for none given; a usage error naming `option`."""
    try:
        return [int(i) for i in ids.split(";") if i.strip()] if ids else None
    except ValueError:
        raise usage(f"{option} {ids!r}: expected broker ids separated by ';'") from None


def note(message: str) -> None:
    """One line on stderr about something the cluster could not tell (a request it does not offer); the
    command goes on and its output says n/a where the answer would be."""
    typer.echo(f"mq: note: {message}", err=True)


def one_target(cluster: str | None, broker_addr: str | None) -> None:
    """Write commands act on every master of a cluster (-c) or on one broker (-b): exactly one."""
    if (cluster is None) == (broker_addr is None):
        raise usage("give -c CLUSTER or -b BROKER_ADDR (one of them)")


def check_output(fmt: str) -> str:
    if fmt not in FORMATS:
        raise usage(f"-o must be one of {', '.join(FORMATS)}, not {fmt!r}")
    return fmt


def tls_flags(tls: bool, ca: str | None, cert: str | None, key: str | None) -> TlsClientOptions | None:
    """--tls/--tls-ca/--tls-cert/--tls-key as options; a bad combination or file is a usage error."""
    from mqtools.client.tls import TlsOptionError, options_from_flags

    try:
        return options_from_flags(tls, ca, cert, key)
    except TlsOptionError as exc:
        raise usage(str(exc)) from None


@dataclass(frozen=True, slots=True)
class ClusterOptions:
    """-n, --context and the TLS flags as one command was given them (or, for `mq admin`'s commands, as
    `mq admin` itself was when the command was given none): where it talks, resolved when it asks."""

    namesrv: str | None = None
    context: str | None = None
    tls: TlsClientOptions | None = None

    @classmethod
    def given(cls, namesrv: str | None = None, context: str | None = None,
              tls: TlsClientOptions | None = None) -> ClusterOptions:
        """As the command was given them, else (each of -n/--context together, and TLS) as `mq admin` was:
        mq admin -n NS --tls-ca ca.pem topic list."""
        if not (namesrv or context):
            namesrv, context = _group[0].namesrv, _group[0].context
        return cls(namesrv, context, tls or _group[0].tls)

    def resolve(self) -> Target:
        """The name servers and security these options name (contexts.resolve's order); errors by name."""
        from mqtools.client.contexts import resolve

        return resolve(self.namesrv, self.context, self.tls)


NO_OPTIONS = ClusterOptions()
"""No -n, --context or TLS flag given: the default of a `cluster_command`'s options parameter."""

_group: list[ClusterOptions] = [NO_OPTIONS]
"""The options of this `mq admin` invocation: its callback sets them before any subcommand runs (a module
slot: the click context typer bundles is not reachable from a helper without threading the context through
every call, and each `mq` process runs one command)."""


def remember_group(options: ClusterOptions) -> None:
    """Called by `mq admin`'s callback on every invocation, so options never leak into the next one."""
    _group[0] = options


def evaluated(fn: Callable[..., Any], first: int = 0) -> list[inspect.Parameter]:
    """fn's parameters from `first` on, their annotations evaluated as `inspect.signature(eval_str=True)`
    would: the ones before (an admin frame's MQAdmin) may name types imported for type checkers only."""
    return [p.replace(annotation=eval(p.annotation, fn.__globals__)) if isinstance(p.annotation, str) else p
            for p in list(inspect.signature(fn).parameters.values())[first:]]


def _tls_params() -> list[inspect.Parameter]:
    kw = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return [inspect.Parameter("tls", kw, default=False, annotation=TlsOpt),
            inspect.Parameter("tls_ca", kw, default=None, annotation=TlsCaOpt),
            inspect.Parameter("tls_cert", kw, default=None, annotation=TlsCertOpt),
            inspect.Parameter("tls_key", kw, default=None, annotation=TlsKeyOpt)]


def _tls_taken(kwargs: dict[str, Any]) -> TlsClientOptions | None:
    """The TLS flags among a command's values (removed from them), as options."""
    return tls_flags(kwargs.pop("tls"), kwargs.pop("tls_ca"), kwargs.pop("tls_cert"), kwargs.pop("tls_key"))


def cluster_command(fn: Callable[..., None]) -> Callable[..., None]:
    """The frame of a command that talks to a cluster outside `mq admin`'s own frames (top, exporter, mcp,
    spark-load, drill): its one `ClusterOptions` parameter becomes -n/--context in its place and the TLS
    flags last; the command gets them as one resolved-on-demand object."""
    params = evaluated(fn)
    at = next(i for i, p in enumerate(params) if p.annotation is ClusterOptions)
    kw = inspect.Parameter.POSITIONAL_OR_KEYWORD
    where = [inspect.Parameter("namesrv", kw, default=None, annotation=NamesrvOpt),
             inspect.Parameter("context", kw, default=None, annotation=ContextOpt)]

    def call(kwargs: dict[str, Any]) -> None:
        flags = _tls_taken(kwargs)
        kwargs[params[at].name] = ClusterOptions.given(kwargs.pop("namesrv"), kwargs.pop("context"), flags)
        fn(**kwargs)

    return with_signature(fn, [*params[:at], *where, *params[at + 1:], *_tls_params()], call)


def with_tls(fn: Callable[..., None]) -> Callable[..., None]:
    """`fn` (an `mq admin` command, either dialect) with the TLS flags as its last options. Given after the
    noun (mq admin topic list -n NS --tls-ca ca.pem) they are this invocation's TLS, as if given before it
    (mq admin --tls-ca ca.pem topic list): every `ClusterOptions.given` of the command falls back on them."""

    def call(kwargs: dict[str, Any]) -> None:
        flags = _tls_taken(kwargs)
        if flags is not None:
            _group[0] = dataclasses.replace(_group[0], tls=flags)
        fn(**kwargs)

    return with_signature(fn, [*evaluated(fn), *_tls_params()], call)


ProxiesOpt = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "-p", "--proxy", help="A proxy's remoting address (host:port, its remotingListenPort; repeat for more). "
                          "Default: the context's proxies.")]


def proxies_given(proxies: list[str] | None, where: ClusterOptions, *, required: bool) -> tuple[str, ...]:
    """--proxy as given, else the proxies of the context the command resolves to (mq cluster up --proxy --context,
    mq context add --proxy); `required`: a usage error when there are none."""
    if proxies:
        return tuple(proxies)
    from mqtools.client.contexts import ContextError, NoNamesrvError

    try:
        target = where.resolve()
    except (ContextError, NoNamesrvError):
        target = None
    found = target.context.proxies if target is not None and target.context is not None else ()
    if required and not found:
        raise usage("no proxy to ask: give -p HOST:8080 (a proxy's remoting port), or use a context with proxies "
                    "(mq cluster up --proxy --context NAME, mq context add NAME -n NS --proxy HOST:8080)")
    return found


def exit_for(exc: MQClientError) -> typer.Exit:
    """One line and the exit code the failure's class carries (what the frame does for uncaught ones)."""
    return fail(exc.summary(), exc.exit_code)


def default_timeout() -> float:
    """$MQ_TIMEOUT, else DEFAULT_TIMEOUT; a value that is not a number of seconds (0.1 or more) is a usage error."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value >= 0.1:
        raise usage(f"{TIMEOUT_ENV}={text!r}: give the seconds to wait for each answer (0.1 or more)")
    return value


def run(where: ClusterOptions, job: Callable[[MQAdmin], Awaitable[T]], *, timeout: float | None = None) -> T:
    """Open an admin session on the name servers `where` resolves to, run `job`, close (failures reach the
    frame); `timeout` None: default_timeout()."""
    from mqtools.client.admin import MQAdmin
    from mqtools.common.loop import run as run_loop

    timeout = default_timeout() if timeout is None else timeout

    async def session() -> T:
        target = where.resolve()
        async with MQAdmin(target.namesrv, timeout=timeout, security=target.security) as admin:
            return await job(admin)

    return run_loop(session())


def render_once(view: View, fmt: str) -> None:
    """Print a command's one answer; exit 4 when it is partial (a document says partial exactly when the exit
    is 4)."""
    render(view, fmt)
    if view.partial:
        raise typer.Exit(EXIT_PARTIAL)


def show(where: ClusterOptions, fmt: str, build: Callable[[MQAdmin], Awaitable[View]], *,
         watch: float | None = None, timeout: float | None = None) -> None:
    """Print what `build` returns once, or every `watch` seconds until Ctrl-C (which exits 0)."""
    check_output(fmt)
    if watch is None:
        render_once(run(where, build, timeout=timeout), fmt)
        return

    import asyncio
    import json

    async def rounds(admin: MQAdmin) -> None:
        redraw = is_terminal(sys.stdout)
        while True:
            view = await build(admin)
            if redraw:
                sys.stdout.write("\x1b[H\x1b[2J")
            elif fmt == "table":
                sys.stdout.write(f"# {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
            if fmt == "json" and not redraw:
                sys.stdout.write(json.dumps(view.document(), default=str) + "\n")
            else:
                render(view, fmt)
            sys.stdout.flush()
            await asyncio.sleep(watch)

    on_interrupt(EXIT_OK)
    run(where, rounds, timeout=timeout)


def confirm(question: str, yes: bool) -> None:
    """Destructive commands ask on a terminal and refuse without --yes when not on one."""
    if yes:
        return
    if not is_terminal(sys.stdin):
        raise usage(f"{question} Refusing without --yes when not on a terminal.")
    if not typer.confirm(question, default=False):
        raise fail("aborted", EXIT_REFUSED)
