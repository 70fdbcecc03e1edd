"""`mq admin broker status|config|consume-stats|stats|perm`: one broker's runtime, configuration and
every group's lag; per topic and group traffic; draining a broker for maintenance and back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import (
    YesOpt,
    confirm,
)
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import Column, View
from mqtools.common.presentation import when

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

app = typer.Typer(help="Brokers: runtime status, configuration, consume lag, traffic, write permission.",
                  no_args_is_help=True)
config_app = typer.Typer(help="A broker's configuration.", no_args_is_help=True)
perm_app = typer.Typer(help="Write permission of a broker name in the name servers' routes.", no_args_is_help=True)
app.add_typer(config_app, name="config")
app.add_typer(perm_app, name="perm")
AddrArg = Annotated[str, typer.Argument(help="Broker address host:port.")]
NameArg = Annotated[str, typer.Argument(help="Broker name, e.g. broker-a.")]


def table_of(kind: str, addr: str, values: dict[str, str], field: str) -> View:
    rows = [[k, v] for k, v in sorted(values.items())]
    return View(kind, [Column("KEY"), Column("VALUE")], rows, {"brokerAddr": addr, field: dict(sorted(values.items()))})


@admin_command(app, "status", output=True, watch=True)
def status(
    s: Session,
    broker_addr: AddrArg,
) -> None:
    """The broker's runtime table (mqadmin brokerStatus): TPS, offsets, queues, disk, sorted by key.

    Example: mq admin broker status 127.0.0.1:10911 --watch 2
    """

    async def build(admin: MQAdmin) -> View:
        return table_of("BrokerStatus", broker_addr, (await admin.brokers.broker_runtime_info(broker_addr)).raw, "runtime")

    s.show(build)


@admin_command(config_app, "get", output=True, watch=True)
def config_get(
    s: Session,
    broker_addr: AddrArg,
) -> None:
    """Every configuration key of a broker, sorted.

    Example: mq admin broker config get 127.0.0.1:10911 -o json
    """

    async def build(admin: MQAdmin) -> View:
        return table_of("BrokerConfig", broker_addr, await admin.brokers.broker_config(broker_addr), "config")

    s.show(build)


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
    typer.echo(f"{broker_addr}: {key} {before if before is not None else 'n/a'} -> {value}")


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

    async def build(admin: MQAdmin) -> View:
        stats = await admin.brokers.broker_consume_stats(broker_addr, order_only=order, timeout=max(s.timeout, 50.0))
        shown = [q for q in stats.queues if q.diff >= level]
        rows = [[q.queue.topic, q.group, q.queue.broker_name, q.queue.queue_id, q.broker_offset, q.consumer_offset,
                 q.diff, when(q.last_timestamp_ms)] for q in shown]
        data = {"brokerAddr": broker_addr, "totalDiff": stats.total_diff, "queues": [
            {"topic": q.queue.topic, "group": q.group, "brokerName": q.queue.broker_name, "queueId": q.queue.queue_id,
             "brokerOffset": q.broker_offset, "consumerOffset": q.consumer_offset, "diff": q.diff,
             "lastTimestamp": q.last_timestamp_ms} for q in shown]}
        return View("BrokerConsumeStats", [Column("TOPIC"), Column("GROUP"), Column("BROKER"), Column("QID", True),
                                           Column("BROKER OFFSET", True), Column("CONSUMER OFFSET", True),
                                           Column("DIFF", True), Column("LAST CONSUMED")], rows, data,
                    footer=[f"total diff: {stats.total_diff}"])

    s.show(build)


@admin_command(app, "stats", output=True, watch=True)
def stats(
    s: Session,
    topic: Annotated[Optional[str], typer.Option("--topic", "-t", help="Only this topic.")] = None,  # noqa: UP045
    active: Annotated[bool, typer.Option("--active", "-a", help="Only rows with traffic in 24 hours.")] = False,
) -> None:
    """Per topic and consuming group: backlog, TPS in and out, messages in and out over 24 hours (statsAll).

    Example: mq admin broker stats --active
    """

    async def build(admin: MQAdmin) -> View:
        rows = await admin.tracking.stats_all(topic, active_only=active)
        table = [[r.topic, r.group, r.accumulation, r.in_tps, r.out_tps, r.in_24h, r.out_24h] for r in rows]
        data = {"rows": [{"topic": r.topic, "group": r.group, "accumulation": r.accumulation, "inTps": r.in_tps,
                          "outTps": r.out_tps, "inMsg24Hour": r.in_24h, "outMsg24Hour": r.out_24h} for r in rows]}
        return View("StatsAll", [Column("TOPIC"), Column("GROUP"), Column("BACKLOG", True), Column("IN TPS", True),
                                 Column("OUT TPS", True), Column("IN 24H", True), Column("OUT 24H", True)], table, data)

    s.show(build)


def _perm_lines(broker_name: str, counts: dict[str, int], verb: str) -> None:
    for ns, count in counts.items():
        typer.echo(f"{ns}: {verb} write permission of {broker_name} on {count} topics")


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

    async def job(admin: MQAdmin) -> dict[str, int]:
        return await admin.namesrv.wipe_write_perm(broker_name)

    _perm_lines(broker_name, s.run(job), "wiped")


@admin_command(perm_app, "add")
def perm_add(
    s: Session,
    broker_name: NameArg,
) -> None:
    """Give a drained broker its write permission back on every name server (inverse of wipe).

    Example: mq admin broker perm add broker-a
    """

    async def job(admin: MQAdmin) -> dict[str, int]:
        return await admin.namesrv.add_write_perm(broker_name)

    _perm_lines(broker_name, s.run(job), "restored")


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
