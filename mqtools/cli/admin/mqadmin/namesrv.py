"""mqadmin's name-server commands: getNamesrvConfig, updateNamesrvConfig, updateKvConfig,
deleteKvConfig, wipeWritePerm, addWritePerm, in mqadmin's output format."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated

import typer

from mqtools.cli.admin.mqadmin import command, given_namesrv, run
from mqtools.client.admin.models.mqadmin_text import config_lines

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.configs import WritePermChange

NamespaceOpt = Annotated[str, typer.Option("-s", "--namespace", help="set the namespace")]
KeyOpt = Annotated[str, typer.Option("-k", "--key", help="set the key name")]
BrokerNameOpt = Annotated[str, typer.Option("-b", "--brokerName", help="broker name")]


@command("getNamesrvConfig", "mq admin namesrv config get", "Get configs of name server.")
def get_namesrv_config() -> None:
    """Example: mq admin getNamesrvConfig -n 127.0.0.1:9876"""

    async def job(admin: MQAdmin) -> dict[str, dict[str, str]]:
        from mqtools.client.errors import UnreachableError

        read = await admin.namesrv.namesrv_config()
        if read.unreachable:  # mqadmin fails the whole command on the first name server that does not answer
            raise UnreachableError("; ".join(str(u) for u in read.unreachable))
        return read.configs

    for addr, config in run(job).items():
        typer.echo("\n".join(config_lines(addr, config)))


@command("updateNamesrvConfig", "mq admin namesrv config set", "Update configs of name server.")
def update_namesrv_config(
    key: Annotated[str, typer.Option("-k", "--key", help="config key")],
    value: Annotated[str, typer.Option("-v", "--value", help="config value")],
) -> None:
    """Example: mq admin updateNamesrvConfig -k orderMessageEnable -v true"""

    async def job(admin: MQAdmin) -> list[str]:
        return await admin.namesrv.update_namesrv_config({key.strip(): value.strip()})

    servers = run(job)
    listed = f"[{', '.join(servers)}]" if given_namesrv() else ""
    typer.echo(f"update name server config success!{listed}\n{key.strip()} : {value.strip()}")


@command("updateKvConfig", "mq admin kv set", "Create or update KV config.")
def update_kv_config(
    namespace: NamespaceOpt, key: KeyOpt,
    value: Annotated[str, typer.Option("-v", "--value", help="set the key value")],
) -> None:
    """Example: mq admin updateKvConfig -s ORDER_TOPIC_CONFIG -k Orders -v 'broker-a:4'"""

    async def job(admin: MQAdmin) -> None:
        await admin.namesrv.put_kv(namespace.strip(), key.strip(), value.strip())

    run(job)
    typer.echo("create or update kv config to namespace success.")


@command("deleteKvConfig", "mq admin kv delete", "Delete KV config.")
def delete_kv_config(namespace: NamespaceOpt, key: KeyOpt) -> None:
    """Example: mq admin deleteKvConfig -s ORDER_TOPIC_CONFIG -k Orders"""

    async def job(admin: MQAdmin) -> None:
        await admin.namesrv.delete_kv(namespace.strip(), key.strip())

    run(job)
    typer.echo("delete kv config from namespace success.")


def _write_perm(broker_name: str, verb: str,
                change: Callable[[MQAdmin, str], Awaitable[WritePermChange]]) -> None:
    """wipeWritePerm and addWritePerm: one change on every name server, a line each with its topic count, or that
    it failed there (and why, where mqadmin prints the stack trace), as mqadmin, which exits 0 either way."""
    name = broker_name.strip()

    async def job(admin: MQAdmin) -> WritePermChange:
        return await change(admin, name)

    done = run(job)
    for addr, count in done.topics.items():
        typer.echo(f"{verb} write perm of broker[{name}] in name server[{addr}] OK, {count}")
    for addr, exc in done.failed.items():
        typer.echo(f"{verb} write perm of broker[{name}] in name server[{addr}] Failed")
        typer.echo(f"{exc}", err=True)


@command("wipeWritePerm", "mq admin broker perm wipe",
         "Wipe write perm of broker in all name server you defined in the -n param.")
def wipe_write_perm(broker_name: BrokerNameOpt) -> None:
    """Example: mq admin wipeWritePerm -b broker-a"""
    _write_perm(broker_name, "wipe", lambda admin, name: admin.namesrv.wipe_write_perm(name))


@command("addWritePerm", "mq admin broker perm add",
         "Add write perm of broker in all name server you defined in the -n param.")
def add_write_perm(broker_name: BrokerNameOpt) -> None:
    """Example: mq admin addWritePerm -b broker-a"""
    _write_perm(broker_name, "add", lambda admin, name: admin.namesrv.add_write_perm(name))
