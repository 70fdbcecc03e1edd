"""`mq admin kv get|set|delete|list`: the name servers' KV config (namespaces such as ORDER_TOPIC_CONFIG)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mqtools.cli.admin.common import ContextOpt, NamesrvOpt, OutputOpt, TimeoutOpt, WatchOpt, fail, run, show
from mqtools.cli.output import Column, View
from mqtools.common.exitcodes import EXIT_REFUSED

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

app = typer.Typer(help="Name-server KV config: per namespace, key -> value, on every name server.",
                  no_args_is_help=True)
NamespaceArg = Annotated[str, typer.Argument(help="Namespace, e.g. ORDER_TOPIC_CONFIG.")]
KeyArg = Annotated[str, typer.Argument(help="Key.")]


@app.command("get")
def get(
    namespace: NamespaceArg, key: KeyArg,
    namesrv: NamesrvOpt = None, context: ContextOpt = None, output: OutputOpt = "table", watch: WatchOpt = None,
    timeout: TimeoutOpt = 5.0,
) -> None:
    """One value; exit 1 when the key is not set.

    Example: mq admin kv get ORDER_TOPIC_CONFIG Orders
    """

    async def build(admin: MQAdmin) -> View:
        value = await admin.get_kv(namespace, key)
        if value is None:
            raise fail(f"no key {key} in namespace {namespace}", EXIT_REFUSED)
        return View("KV", [Column("NAMESPACE"), Column("KEY"), Column("VALUE")], [[namespace, key, value]],
                    {"namespace": namespace, "key": key, "value": value})

    show(namesrv, output, build, watch=watch, context=context, timeout=timeout)


@app.command("list")
def list_(
    namespace: NamespaceArg,
    namesrv: NamesrvOpt = None, context: ContextOpt = None, output: OutputOpt = "table", watch: WatchOpt = None,
    timeout: TimeoutOpt = 5.0,
) -> None:
    """Every key of a namespace, sorted (empty when the namespace has none).

    Example: mq admin kv list ORDER_TOPIC_CONFIG -o json
    """

    async def build(admin: MQAdmin) -> View:
        entries = dict(sorted((await admin.kv_list(namespace)).items()))
        return View("KVList", [Column("KEY"), Column("VALUE")], [[k, v] for k, v in entries.items()],
                    {"namespace": namespace, "entries": entries})

    show(namesrv, output, build, watch=watch, context=context, timeout=timeout)


@app.command("set")
def set_(
    namespace: NamespaceArg, key: KeyArg, value: Annotated[str, typer.Argument(help="Value.")],
    namesrv: NamesrvOpt = None, context: ContextOpt = None, timeout: TimeoutOpt = 5.0,
) -> None:
    """Create or update a key on every name server.

    Example: mq admin kv set ORDER_TOPIC_CONFIG Orders 'broker-a:4;broker-b:4'
    """

    async def job(admin: MQAdmin) -> None:
        await admin.put_kv(namespace, key, value)

    run(namesrv, job, context=context, timeout=timeout)
    typer.echo(f"{namespace} {key}={value}")


@app.command("delete")
def delete(
    namespace: NamespaceArg, key: KeyArg,
    namesrv: NamesrvOpt = None, context: ContextOpt = None, timeout: TimeoutOpt = 5.0,
) -> None:
    """Delete a key on every name server (deleting a key that is not set is not an error).

    Example: mq admin kv delete ORDER_TOPIC_CONFIG Orders
    """

    async def job(admin: MQAdmin) -> None:
        await admin.delete_kv(namespace, key)

    run(namesrv, job, context=context, timeout=timeout)
    typer.echo(f"{namespace} {key} deleted")
