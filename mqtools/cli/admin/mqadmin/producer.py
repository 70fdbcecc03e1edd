"""mqadmin's producerConnection: a group's online producers, in mqadmin's format (no header). mqadmin's `producer -b
ADDR` is `mq admin producer list -b ADDR`: `producer` is the mq dialect's noun."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mqtools.cli.admin.common import fail
from mqtools.cli.admin.mqadmin import TopicOpt, command, run
from mqtools.common.exitcodes import EXIT_REFUSED
from mqtools.common.javatext import java_format
from mqtools.common.mqversion import version_desc

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.groups import ClientConnection

ROW = "%04d  %-32s %-22s %-8s %s"


@command("producerConnection", "mq admin producer connections",
         "Query producer's socket connection and client version.")
def producer_connection(
    group: Annotated[str, typer.Option("-g", "--producerGroup", help="producer group name")],
    topic: TopicOpt,
) -> None:
    """Example: mq admin producerConnection -g OrderProducers -t Orders"""
    name, where = group.strip(), topic.strip()

    async def job(admin: MQAdmin) -> list[ClientConnection]:
        return (await admin.groups.producer_connections(name, where)).clients

    conns = run(job)
    if not conns:
        raise fail(f"the producer group [{name}] has no producer connected to the brokers of topic {where}",
                   EXIT_REFUSED)
    for index, c in enumerate(conns, start=1):
        typer.echo(java_format(ROW, index, c.client_id, c.client_addr, c.language, version_desc(c.version)))
