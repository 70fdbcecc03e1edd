"""`mq context add|use|list|show|remove`: named clusters for `mq admin`, `mq top` and `mq spark-load`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from mqtools.cli.admin.common import (
    EXIT_USAGE,
    NamesrvOpt,
    TlsCaOpt,
    TlsCertOpt,
    TlsKeyOpt,
    TlsOpt,
    fail,
    tls_flags,
)

app = typer.Typer(help="Named contexts: which cluster the tools talk to (kept in the user's config dir).",
                  no_args_is_help=True)

NameArg = Annotated[str, typer.Argument(help="Context name.")]


def _store():
    from mqtools.client.contexts import ContextError, ContextStore

    try:
        return ContextStore.load()
    except ContextError as exc:
        raise fail(str(exc), EXIT_USAGE) from None


def _saved(action):
    from mqtools.client.contexts import ContextError

    store = _store()
    try:
        result = action(store)
    except ContextError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    store.save()
    return result


@app.command()
def add(
    name: NameArg,
    namesrv: Annotated[str, typer.Option("-n", "--namesrv", help="Name servers 'h1:9876;h2:9876'.")],
    state_dir: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--dir", help="State dir of a local cluster (mq cluster up --dir), for process figures."),
    ] = None,
    tls: TlsOpt = False, tls_ca: TlsCaOpt = None, tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None,
) -> None:
    """Add (or replace) a context; the first one added becomes current.

    Example: mq context add local -n 127.0.0.1:9876
    Example: mq context add secure -n 127.0.0.1:9876 --tls-ca ca.pem
    """
    options = tls_flags(tls, tls_ca, tls_cert, tls_key)
    context = _saved(lambda s: s.add(name, namesrv, state_dir, options))
    typer.echo(f"context {context.name}: {context.namesrv}")


@app.command()
def use(name: NameArg) -> None:
    """Make a context the current one.

    Example: mq context use prod
    """
    _saved(lambda s: s.use(name))
    typer.echo(f"current context: {name}")


@app.command("list")
def list_() -> None:
    """Every context; the current one is marked with *.

    Example: mq context list
    """
    store = _store()
    for context in sorted(store.contexts.values(), key=lambda c: c.name):
        mark = "*" if context.name == store.current else " "
        typer.echo(f"{mark} {context.name:<20} {context.namesrv}" + (f"  dir={context.state_dir}" if context.state_dir else ""))


@app.command()
def show(namesrv: NamesrvOpt = None,
         context: Annotated[Optional[str], typer.Option("--context", help="Show this context.")] = None,  # noqa: UP045
         ) -> None:
    """What the tools would connect to now, and why (-n, --context, NAMESRV_ADDR or the current context).

    Example: mq context show
    """
    from mqtools.client.contexts import ContextError, NoNamesrvError, resolve

    try:
        target = resolve(namesrv, context)
    except (NoNamesrvError, ContextError) as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    typer.echo(f"namesrv: {target.namesrv}")
    typer.echo(f"from:    {target.source}")
    if target.context and target.context.state_dir:
        typer.echo(f"dir:     {target.context.state_dir}")
    tls = target.security.tls if target.security else None
    if tls is not None:
        client = f", client certificate {tls.cert_file}" if tls.cert_file else ""
        typer.echo(f"tls:     CA {tls.ca_file or 'system'}{client}")


@app.command()
def remove(name: NameArg) -> None:
    """Forget a context.

    Example: mq context remove old
    """
    _saved(lambda s: s.remove(name))
    typer.echo(f"removed context {name}")
