"""`mq admin`: mqadmin's operations in two dialects over one admin API.

The mq dialect is noun then verb (`mq admin topic route Orders`), with tables, JSON and CSV. The
mqadmin dialect accepts every classic mqadmin command under its own name, case-insensitively, with
mqadmin's option letters and output format (`mq admin updateTopic -c DefaultCluster -t T`), so a
runbook written for mqadmin works with `mq admin` in its place. Both call `mqtools.client.admin`.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import typer

from mqtools.cli.admin import schema
from mqtools.cli.admin.common import (
    EXIT_CODES_HELP,
    ClusterOptions,
    ContextOpt,
    NamesrvOpt,
    TlsCaOpt,
    TlsCertOpt,
    TlsKeyOpt,
    TlsOpt,
    remember_group,
    tls_flags,
    usage,
)
from mqtools.cli.frame import LazyGroup

NOUNS = ("cluster", "msg", "dlq", "broker", "namesrv", "kv", "topic", "group", "offset", "producer", "drill", "ha",
         "timer", "proxy", "acl", "acl2", "user", "controller", "txn", "diagnose")
"""The mq dialect's nouns, a module each, in the order `mq admin --help` lists them."""


class AdminGroup(LazyGroup):
    """Looks a command up by its mq name first, then by its mqadmin name in any letter case."""

    lazy: ClassVar[dict[str, str]] = {noun: f"mqtools.cli.admin.{noun}:app" for noun in NOUNS}

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = super().get_command(ctx, cmd_name)
        if found is not None:
            return found
        from mqtools.cli.admin.mqadmin import find

        return find(cmd_name)


app = typer.Typer(
    cls=AdminGroup,
    help=f"mqadmin-style operations on a RocketMQ cluster (ours or Apache's). {EXIT_CODES_HELP}",
    invoke_without_command=True,
)
app.command("schema")(schema.schema)


@app.callback()
def catalogue(ctx: typer.Context, namesrv: NamesrvOpt = None, context: ContextOpt = None, tls: TlsOpt = False,
              tls_ca: TlsCaOpt = None, tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None) -> None:
    """With no command: the mqadmin command list, each with its mq-dialect twin.

    The name servers, the context and the TLS options may go before the command (mq admin -n 127.0.0.1:9876
    --tls-ca ca.pem topic list) or after it, in either dialect; the command's own win.
    """
    remember_group(ClusterOptions(namesrv, context, tls_flags(tls, tls_ca, tls_cert, tls_key)))
    if ctx.invoked_subcommand is None:
        from mqtools.cli.admin.mqadmin import listing

        typer.echo(listing())


@app.command("help")
def help_(ctx: typer.Context, name: Annotated[str, typer.Argument(help="An mqadmin or mq-dialect command.")]) -> None:
    """Usage of one command, as `mqadmin help CMD` prints it.

    Example: mq admin help updateTopic
    """
    parent = ctx.parent
    assert parent is not None
    found = parent.command.get_command(parent, name)  # type: ignore[attr-defined]
    if found is None:
        raise usage(f"The sub command {name} not exist.")
    with typer.Context(found, info_name=name, parent=parent) as sub:
        typer.echo(found.get_help(sub))
