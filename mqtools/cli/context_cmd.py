"""`mq context add|use|list|show|remove`: named clusters for `mq admin`, `mq top` and `mq spark-load`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from mqtools.cli.admin.common import NamesrvOpt, TlsCaOpt, TlsCertOpt, TlsKeyOpt, TlsOpt, fail, tls_flags
from mqtools.client.credentials import ACCESS_KEY_ENV
from mqtools.common.exitcodes import EXIT_USAGE
from mqtools.common.security import MASK

app = typer.Typer(help="Named contexts: which cluster the tools talk to (kept in the user's config dir).",
                  no_args_is_help=True)

NameArg = Annotated[str, typer.Argument(help="Context name.")]


def _store():
    """The contexts file; a bad one is a ContextError, which the frame turns into exit 2."""
    from mqtools.client.contexts import ContextStore

    return ContextStore.load()


def _saved(action):
    store = _store()
    result = action(store)
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
    credentials: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--credentials", help="ACL credentials file (YAML accessKey/secretKey, mode 600)."),
    ] = None,
    proxies: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--proxy", help="A RocketMQ 5 proxy's remoting address (host:8080; repeat for more), asked "
                                     "about gRPC clients when a command gets no --proxy."),
    ] = None,
) -> None:
    """Add (or replace) a context; the first one added becomes current.

    Example: mq context add local -n 127.0.0.1:9876
    Example: mq context add secure -n 127.0.0.1:9876 --tls-ca ca.pem
    Example: mq context add acl -n 127.0.0.1:9876 --credentials ~/.config/mq/acl.yml
    """
    options = tls_flags(tls, tls_ca, tls_cert, tls_key)
    creds_path = str(Path(credentials).expanduser().resolve()) if credentials else None
    context = _saved(lambda s: s.add(name, namesrv, state_dir, options, creds_path, tuple(proxies or ())))
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
        tls = f"  tls={context.tls.ca_file or 'system CAs'}" if context.tls else ""
        typer.echo(f"{mark} {context.name:<20} {context.namesrv}" + (f"  dir={context.state_dir}" if context.state_dir else "")
                   + tls)


@app.command()
def show(namesrv: NamesrvOpt = None,
         context: Annotated[Optional[str], typer.Option("--context", help="Show this context.")] = None,  # noqa: UP045
         ) -> None:
    """What the tools would connect to now, and why (-n, --context, NAMESRV_ADDR or the current context).

    Example: mq context show
    """
    from mqtools.client.contexts import resolve

    target = resolve(namesrv, context)
    typer.echo(f"namesrv: {target.namesrv}")
    typer.echo(f"from:    {target.source}")
    if target.context and target.context.state_dir:
        typer.echo(f"dir:     {target.context.state_dir}")
    if target.context and target.context.proxies:
        typer.echo(f"proxies: {' '.join(target.context.proxies)}")
    tls = target.security.tls if target.security else None
    if tls is not None:
        client = f", client certificate {tls.cert_file}" if tls.cert_file else ""
        typer.echo(f"tls:     CA {tls.ca_file or 'system'}{client}")
    creds = target.security.credentials if target.security else None
    if creds is not None:
        from_context = target.context.credentials if target.context else None
        origin = "environment" if os.environ.get(ACCESS_KEY_ENV) or not from_context else from_context
        typer.echo(f"acl:     accessKey {creds.access_key}, secretKey {MASK} (from {origin})")


@app.command("credentials")
def set_credentials(
    name: NameArg,
    access_key: Annotated[str, typer.Option("--access-key", help="The ACL access key.")],
) -> None:
    """Store ACL credentials for a context: the secret is read from stdin (or a prompt), never argv,
    and kept in a 0600 file in the config dir that the context names.

    Example: printf '%s' "$SECRET" | mq context credentials prod --access-key RocketMQ
    """
    from mqtools.client.contexts import config_dir
    from mqtools.client.credentials import write_file
    from mqtools.common.security import SessionCredentials

    secret = (typer.prompt("secret key", hide_input=True) if sys.stdin.isatty() else sys.stdin.readline()).strip()
    if not secret:
        raise fail("no secret key given on stdin", EXIT_USAGE)

    def record(store):
        context = store.get(name)
        path = config_dir() / "credentials" / f"{context.name}.yml"
        write_file(path, SessionCredentials(access_key, secret))
        return store.add(context.name, context.namesrv, context.state_dir, context.tls, str(path))

    context = _saved(record)
    typer.echo(f"context {context.name}: credentials for {access_key} in {context.credentials}")


@app.command()
def remove(name: NameArg) -> None:
    """Forget a context.

    Example: mq context remove old
    """
    _saved(lambda s: s.remove(name))
    typer.echo(f"removed context {name}")
