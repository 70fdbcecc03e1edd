"""`mq admin`: mqadmin's operations in two dialects over one admin API.

The mq dialect is noun then verb (`mq admin topic route Orders`), with tables, JSON and CSV. The
mqadmin dialect accepts every classic mqadmin command under its own name, case-insensitively, with
mqadmin's option letters and output format (`mq admin updateTopic -c DefaultCluster -t T`), so a
runbook written for mqadmin works with `mq admin` in its place. Both call `mqtools.client.admin`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from mqtools.cli.admin import (
    acl,
    acl2,
    broker,
    cluster,
    controller,
    diagnose,
    dlq,
    drill,
    group,
    ha,
    kv,
    msg,
    namesrv,
    offset,
    producer,
    proxy,
    schema,
    timer,
    topic,
    txn,
    user,
)
from mqtools.cli.admin.common import (
    EXIT_CODES_HELP,
    ContextOpt,
    GroupOptions,
    NamesrvOpt,
    TlsCaOpt,
    TlsCertOpt,
    TlsKeyOpt,
    TlsOpt,
    remember_group,
    tls_flags,
    usage,
)


class AdminGroup(TyperGroup):
    """Looks a command up by its mq name first, then by its mqadmin name in any letter case."""

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
app.add_typer(cluster.app, name="cluster")
app.add_typer(msg.app, name="msg")
app.add_typer(dlq.app, name="dlq")
app.add_typer(broker.app, name="broker")
app.add_typer(namesrv.app, name="namesrv")
app.add_typer(kv.app, name="kv")
app.add_typer(topic.app, name="topic")
app.add_typer(group.app, name="group")
app.add_typer(offset.app, name="offset")
app.add_typer(producer.app, name="producer")
app.add_typer(drill.app, name="drill")
app.add_typer(ha.app, name="ha")
app.add_typer(timer.app, name="timer")
app.add_typer(proxy.app, name="proxy")
app.add_typer(acl.app, name="acl")
app.add_typer(acl2.app, name="acl2")
app.add_typer(user.app, name="user")
app.add_typer(controller.app, name="controller")
app.add_typer(txn.app, name="txn")
app.add_typer(diagnose.app, name="diagnose")
app.command("schema")(schema.schema)


@app.callback()
def catalogue(ctx: typer.Context, namesrv: NamesrvOpt = None, context: ContextOpt = None, tls: TlsOpt = False,
              tls_ca: TlsCaOpt = None, tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None) -> None:
    """With no command: the mqadmin command list, each with its mq-dialect twin.

    TLS options go before the command: mq admin --tls-ca ca.pem topic list. The name servers and the
    context may go before it too (mq admin -n 127.0.0.1:9876 topic list); the command's own win.
    """
    remember_group(GroupOptions(namesrv, context, tls_flags(tls, tls_ca, tls_cert, tls_key)))
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
