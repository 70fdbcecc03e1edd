"""`mq admin kv get|set|delete|list`: the name servers' KV config (namespaces such as ORDER_TOPIC_CONFIG)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mqtools.cli.admin.common import fail
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import View
from mqtools.client.admin.models.configs import kv_list_view, kv_view
from mqtools.common.exitcodes import EXIT_REFUSED

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

app = typer.Typer(help="Name-server KV config: per namespace, key -> value, on every name server.",
                  no_args_is_help=True)
NamespaceArg = Annotated[str, typer.Argument(help="Namespace, e.g. ORDER_TOPIC_CONFIG.")]
KeyArg = Annotated[str, typer.Argument(help="Key.")]


@admin_command(app, "get", output=True, watch=True)
async def get(admin: MQAdmin, namespace: NamespaceArg, key: KeyArg) -> View:
    """One value; exit 1 when the key is not set.

    Example: mq admin kv get ORDER_TOPIC_CONFIG Orders
    """
    value = await admin.namesrv.get_kv(namespace, key)
    if value is None:
        raise fail(f"no key {key} in namespace {namespace}", EXIT_REFUSED)
    return kv_view(namespace, key, value)


@admin_command(app, "list", output=True, watch=True)
async def list_(admin: MQAdmin, namespace: NamespaceArg) -> View:
    """Every key of a namespace, sorted (empty when the namespace has none).

    Example: mq admin kv list ORDER_TOPIC_CONFIG -o json
    """
    return kv_list_view(namespace, await admin.namesrv.kv_list(namespace))


@admin_command(app, "set")
def set_(
    s: Session,
    namespace: NamespaceArg, key: KeyArg, value: Annotated[str, typer.Argument(help="Value.")],
) -> None:
    """Create or update a key on every name server.

    Example: mq admin kv set ORDER_TOPIC_CONFIG Orders 'broker-a:4;broker-b:4'
    """

    async def job(admin: MQAdmin) -> None:
        await admin.namesrv.put_kv(namespace, key, value)

    s.run(job)
    typer.echo(f"{namespace} {key}={value}")


@admin_command(app, "delete")
def delete(
    s: Session,
    namespace: NamespaceArg, key: KeyArg,
) -> None:
    """Delete a key on every name server (deleting a key that is not set is not an error).

    Example: mq admin kv delete ORDER_TOPIC_CONFIG Orders
    """

    async def job(admin: MQAdmin) -> None:
        await admin.namesrv.delete_kv(namespace, key)

    s.run(job)
    typer.echo(f"{namespace} {key} deleted")
