"""`mq admin producer connections GROUP TOPIC`: the online producers of a group; `mq admin producer list`: every
producer the masters know."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mqtools.cli.admin.common import BrokerOpt, ProxiesOpt
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import View

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

app = typer.Typer(help="Producers: who is online.", no_args_is_help=True)


@admin_command(app, "connections", output=True, watch=True)
def connections(
    s: Session,
    group: Annotated[str, typer.Argument(help="Producer group.")],
    topic: Annotated[str, typer.Argument(help="A topic the group sends to (its brokers are asked).")],
    proxies: ProxiesOpt = None,
) -> None:
    """The group's producers connected to the brokers serving TOPIC (none online: an empty list); with proxies (-p,
    or the context's) also TOPIC's RocketMQ 5 gRPC producers, which only the proxies see.

    Example: mq admin producer connections OrderProducers Orders
    """
    asked = s.proxies(proxies)

    async def build(admin: MQAdmin) -> View:
        from mqtools.client.admin.models.connections import producer_connections_view

        conns = await admin.groups.producer_connections(group, topic)
        return producer_connections_view(group, topic, conns, await admin.proxies.clients_of(asked, topics=[topic])
                                         if asked else None)

    s.show(build)


@admin_command(app, "list", output=True, watch=True)
async def list_(admin: MQAdmin, broker_addr: BrokerOpt = None) -> View:
    """Every producer of every group connected to the masters, with its address, language, version and broker; a
    set without a master, or whose master does not answer, is named (its producers unknown). With -b, one broker's,
    as mqadmin's `producer -b ADDR` (a name the mq dialect's `producer` noun takes here).

    Example: mq admin producer list
    """
    from mqtools.client.admin.models.connections import producer_table_view

    return producer_table_view(await admin.brokers.producer_table(broker_addr))
