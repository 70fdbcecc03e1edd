"""`mq admin broker status|config|consume-stats|stats|perm`: one broker's runtime, configuration and
every group's lag; per topic and group traffic; draining a broker for maintenance and back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import (
    YesOpt,
    confirm,
    exit_for,
)
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import View
from mqtools.common.presentation import NA

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.configs import WritePermChange

app = typer.Typer(help="Brokers: runtime status, configuration, consume lag, traffic, write permission.",
                  no_args_is_help=True)
config_app = typer.Typer(help="A broker's configuration.", no_args_is_help=True)
perm_app = typer.Typer(help="Write permission of a broker name in the name servers' routes.", no_args_is_help=True)
app.add_typer(config_app, name="config")
app.add_typer(perm_app, name="perm")
AddrArg = Annotated[str, typer.Argument(help="Broker address host:port.")]
NameArg = Annotated[str, typer.Argument(help="Broker name, e.g. broker-a.")]


@admin_command(app, "status", output=True, watch=True)
async def status(admin: MQAdmin, broker_addr: AddrArg) -> View:
    """The broker's runtime table (mqadmin brokerStatus): TPS, offsets, queues, disk, sorted by key.

    Example: mq admin broker status 127.0.0.1:10911 --watch 2
    """
    from mqtools.client.admin.models.brokers import broker_status_view

    return broker_status_view(broker_addr, await admin.brokers.broker_runtime_info(broker_addr))


@admin_command(config_app, "get", output=True, watch=True)
async def config_get(admin: MQAdmin, broker_addr: AddrArg) -> View:
    """Every configuration key of a broker, sorted.

    Example: mq admin broker config get 127.0.0.1:10911 -o json
    """
    from mqtools.client.admin.models.brokers import broker_config_view

    return broker_config_view(broker_addr, await admin.brokers.broker_config(broker_addr))


@admin_command(config_app, "set")
def config_set(
    s: Session,
    broker_addr: AddrArg,
    key: Annotated[str, typer.Argument(help="Configuration key, e.g. brokerPermission.")],
    value: Annotated[str, typer.Argument(help="New value.")],
) -> None:
    """Change one key at runtime; the broker also writes it to its configuration file.

    Example: mq admin broker config set 127.0.0.1:10911 brokerPermission 4
    """

    async def job(admin: MQAdmin) -> str | None:
        before = (await admin.brokers.broker_config(broker_addr)).get(key)
        await admin.brokers.update_broker_config(broker_addr, {key: value})
        return before

    before = s.run(job)
    typer.echo(f"{broker_addr}: {key} {before if before is not None else NA} -> {value}")


@admin_command(app, "consume-stats", output=True, watch=True)
def consume_stats(
    s: Session,
    broker_addr: AddrArg,
    level: Annotated[int, typer.Option("--level", "-l", help="Only queues with at least this lag.")] = 0,
    order: Annotated[bool, typer.Option("--order", help="Only order topics.")] = False,
) -> None:
    """Every group's lag on one broker, per queue (mqadmin brokerConsumeStats).

    Example: mq admin broker consume-stats 127.0.0.1:10911 --level 100
    """
    from mqtools.client.admin.models.brokers import broker_consume_stats_view

    async def build(admin: MQAdmin) -> View:
        stats = await admin.brokers.broker_consume_stats(broker_addr, order_only=order, timeout=max(s.timeout, 50.0))
        return broker_consume_stats_view(broker_addr, stats, level)

    s.show(build)


@admin_command(app, "stats", output=True, watch=True)
async def stats(
    admin: MQAdmin,
    topic: Annotated[Optional[str], typer.Option("--topic", "-t", help="Only this topic.")] = None,  # noqa: UP045
    active: Annotated[bool, typer.Option("--active", "-a", help="Only rows with traffic in 24 hours.")] = False,
) -> View:
    """Per topic and consuming group: backlog, TPS in and out, messages in and out over 24 hours (statsAll).

    Example: mq admin broker stats --active
    """
    from mqtools.client.admin.models.brokers import stats_all_view

    return stats_all_view(await admin.tracking.stats_all(topic, active_only=active))


def _perm_lines(change: WritePermChange, verb: str) -> None:
    """A line per name server that applied the change; then, if some did not, the error naming them (exit 3 when
    they did not answer: name servers do not talk to each other, so run the command again once they are back)."""
    for line in change.applied_lines(verb):
        typer.echo(line)
    error = change.error()
    if error is not None:
        raise exit_for(error)


@admin_command(perm_app, "wipe")
def perm_wipe(
    s: Session,
    broker_name: NameArg, yes: YesOpt = False,
) -> None:
    """Graceful drain: producers stop sending to this broker, consumers keep reading what it holds.

    Every name server clears the write bit of the broker's queues in its routes; the broker's own
    brokerPermission is untouched, and its next registration with changed topics gives the bit back.
    Undo with `mq admin broker perm add`.

    Example: mq admin broker perm wipe broker-a --yes
    """
    confirm(f"Stop new sends to {broker_name} on every name server?", yes)

    async def job(admin: MQAdmin) -> WritePermChange:
        return await admin.namesrv.wipe_write_perm(broker_name)

    _perm_lines(s.run(job), "wiped")


@admin_command(perm_app, "add")
def perm_add(
    s: Session,
    broker_name: NameArg,
) -> None:
    """Give a drained broker its write permission back on every name server (inverse of wipe).

    Example: mq admin broker perm add broker-a
    """

    async def job(admin: MQAdmin) -> WritePermChange:
        return await admin.namesrv.add_write_perm(broker_name)

    _perm_lines(s.run(job), "restored")


@admin_command(app, "clean-expired-cq")
def clean_expired_cq(
    s: Session,
    broker_addr: AddrArg,
) -> None:
    """Drop consume-queue data pointing before the commitlog's first message (CLEAN_EXPIRED_CONSUMEQUEUE).

    Example: mq admin broker clean-expired-cq 127.0.0.1:10911
    """

    async def job(admin: MQAdmin) -> None:
        await admin.brokers.clean_expired_consume_queue(broker_addr)

    s.run(job)
    typer.echo(f"{broker_addr}: expired consume queues cleaned")
