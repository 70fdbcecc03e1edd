"""`mq admin proxy status|clients`: RocketMQ 5 proxies and the gRPC clients they serve.

The brokers never see a proxy's gRPC consumers, so `group connections` lists them only from the proxies it is
given (-p, or the context's); each proxy answers for its own clients on its remoting port (Apache's remotingListenPort,
8080). Every consumer group and topic of the cluster is asked about, plus those given with -g/-t. Apache's
mqadmin 5.5 has no proxy command, so there is no classic spelling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import ProxiesOpt
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import View

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.proxies import ProxyClients

app = typer.Typer(help="RocketMQ 5 proxies: their gRPC clients, per proxy and per client.", no_args_is_help=True)

GroupsOpt = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "-g", "--group", help="Also ask about this consumer group (with the name server down, only these are asked).")]
TopicsOpt = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "-t", "--topic", help="Also ask about this topic's producers.")]


async def _read(admin: MQAdmin, proxies: tuple[str, ...], groups: list[str] | None, topics: list[str] | None
                ) -> ProxyClients:
    return await admin.proxies.proxy_clients(proxies, groups or [], topics or [])


@admin_command(app, "status", output=True, watch=True)
def status(s: Session, proxies: ProxiesOpt = None, groups: GroupsOpt = None, topics: TopicsOpt = None) -> None:
    """One line per proxy: consumer groups and consumers it serves, producers, clients per language.

    A proxy that does not answer makes the output partial; producers are n/a for a proxy that answers only
    about consumers (Apache's).

    Example: mq admin proxy status -p 127.0.0.1:8080 -p 127.0.0.1:8082
    """

    asked = s.proxies(proxies, required=True)

    async def build(admin: MQAdmin) -> View:
        from mqtools.client.admin.models.proxies import proxy_status_view

        return proxy_status_view(await _read(admin, asked, groups, topics))

    s.show(build)


@admin_command(app, "clients", output=True, watch=True)
def clients(s: Session, proxies: ProxiesOpt = None, groups: GroupsOpt = None, topics: TopicsOpt = None) -> None:
    """One line per gRPC client: its proxy, PUSH/SIMPLE consumer or PRODUCER, group (a producer's topic),
    client id, address, language and version.

    Example: mq admin proxy clients -p 127.0.0.1:8080 -o json
    """

    asked = s.proxies(proxies, required=True)

    async def build(admin: MQAdmin) -> View:
        from mqtools.client.admin.models.proxies import proxy_clients_view

        return proxy_clients_view(await _read(admin, asked, groups, topics))

    s.show(build)
