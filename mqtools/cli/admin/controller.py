"""`mq admin controller ...`: RocketMQ 5 controllers (controller mode) and the broker sets they hold.

`-a` names controllers ("host:port;host:port", brokers' controllerAddr): any of them tells who leads, and
the leader answers the rest. broker-epoch asks the brokers themselves, found through the name server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import (
    ClusterOptions,
    OutputOpt,
    TimeoutOpt,
    broker_ids,
    check_output,
    run,
    show,
    with_tls,
)
from mqtools.cli.admin.session import admin_command
from mqtools.cli.output import View, render
from mqtools.common.addresses import parse_namesrv_list

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.controller import Election

app = typer.Typer(help="RocketMQ 5 controllers: leader, masters, epochs, SyncStateSets, elections.",
                  no_args_is_help=True)

ControllerOpt = Annotated[str, typer.Option("-a", "--controller", help="Controller addresses, 'host:port;host:port'.")]
ClusterNameOpt = Annotated[Optional[str], typer.Option("-c", "--cluster", help="The brokers' cluster name.")]  # noqa: UP045


def controllers(addrs: str) -> list[str]:
    return parse_namesrv_list(addrs)


@app.command("metadata")
@with_tls
def metadata(controller: ControllerOpt, output: OutputOpt = "table", timeout: TimeoutOpt = 5.0) -> None:
    """Each controller's view: the Raft group, who leads, and the peers.

    Example: mq admin controller metadata -a 127.0.0.1:9878
    """
    from mqtools.client.admin.models.controller import controller_metadata_view
    check_output(output)
    addrs = controllers(controller)

    async def build(admin: MQAdmin) -> View:
        return controller_metadata_view(*await admin.controllers.metadata_each(addrs))

    show(ClusterOptions.given(controller), output, build, timeout=timeout)


@app.command("sync-state-set")
@with_tls
def sync_state_set(
    brokers: Annotated[list[str], typer.Argument(help="Broker names (brokerName).")],
    controller: ControllerOpt,
    output: OutputOpt = "table",
    timeout: TimeoutOpt = 5.0,
) -> None:
    """Each broker set's master, master epoch, SyncStateSet (and its epoch) and which replicas are alive,
    as the controller leader holds them.

    Example: mq admin controller sync-state-set broker-a broker-b -a 127.0.0.1:9878
    """
    from mqtools.client.admin.models.controller import sync_state_sets_view
    check_output(output)

    async def build(admin: MQAdmin) -> View:
        return sync_state_sets_view(await admin.controllers.broker_sets(controllers(controller), brokers), brokers)

    show(ClusterOptions.given(controller), output, build, timeout=timeout)


@app.command("elect-master")
@with_tls
def elect_master(
    broker: Annotated[str, typer.Argument(help="Broker name (brokerName).")],
    broker_id: Annotated[int, typer.Option("--broker-id", "-i", help="The broker id to make master.")],
    controller: ControllerOpt,
    cluster: ClusterNameOpt = None,
    output: OutputOpt = "table",
    timeout: TimeoutOpt = 5.0,
) -> None:
    """Make one replica the master of its broker set (it must be alive and in the SyncStateSet, unless the
    controllers allow unclean elections). Exit 0 also when it already was.

    Example: mq admin controller elect-master broker-a --broker-id 2 -a 127.0.0.1:9878
    """
    from mqtools.client.admin.models.controller import election_view
    check_output(output)

    async def job(admin: MQAdmin) -> Election:
        return await admin.controllers.elect_master(controllers(controller), cluster or "", broker, broker_id)

    render(election_view(run(ClusterOptions.given(controller), job, timeout=timeout)), output)


@app.command("clean-broker-metadata")
@with_tls
def clean_broker_metadata(
    broker: Annotated[str, typer.Argument(help="Broker name (brokerName).")],
    controller: ControllerOpt,
    ids: Annotated[Optional[str], typer.Option("--ids", help="Broker ids to forget, '1;2'; default the whole set.")] = None,  # noqa: UP045
    cluster: ClusterNameOpt = None,
    clean_living: Annotated[bool, typer.Option("--clean-living", help="Also forget brokers that are alive.")] = False,
    timeout: TimeoutOpt = 5.0,
) -> None:
    """Make the controllers forget a broker set, or some of its broker ids (dead ones, unless --clean-living).

    Example: mq admin controller clean-broker-metadata broker-a --ids 3 -a 127.0.0.1:9878
    """
    id_list = broker_ids(ids, "--ids")

    async def job(admin: MQAdmin) -> None:
        await admin.controllers.clean_broker_metadata(controllers(controller), cluster, broker, id_list, clean_living)

    run(ClusterOptions.given(controller), job, timeout=timeout)
    typer.echo(f"{broker}: {'broker ids ' + ids if ids else 'the broker set'} forgotten by the controllers")


@app.command("elections")
@with_tls
def elections(
    controller: ControllerOpt,
    broker: Annotated[Optional[str], typer.Option("-b", "--broker", help="Only this broker set.")] = None,  # noqa: UP045
    output: OutputOpt = "table",
    timeout: TimeoutOpt = 5.0,
) -> None:
    """The elections the controllers committed, oldest first: when, which broker set, the master before and
    after, the new master epoch, and why (controller: the master died; broker: a broker asked; admin: named
    by an operator). mq's controller only (Apache's does not keep a history).

    Example: mq admin controller elections -a 127.0.0.1:9878 -b broker-a
    """
    from mqtools.client.admin.models.controller import controller_elections_view
    check_output(output)

    async def build(admin: MQAdmin) -> View:
        return controller_elections_view(await admin.controllers.elections(controllers(controller), broker))

    show(ClusterOptions.given(controller), output, build, timeout=timeout)


@app.command("config")
@with_tls
def config(controller: ControllerOpt, output: OutputOpt = "table", timeout: TimeoutOpt = 5.0) -> None:
    """Each controller's settings (GET_CONTROLLER_CONFIG).

    Example: mq admin controller config -a 127.0.0.1:9878
    """
    from mqtools.client.admin.models.controller import controller_config_view
    check_output(output)
    addrs = controllers(controller)

    async def build(admin: MQAdmin) -> View:
        return controller_config_view(*await admin.controllers.config_each(addrs))

    show(ClusterOptions.given(controller), output, build, timeout=timeout)


@admin_command(app, "broker-epoch", output=True, watch=True)
async def broker_epoch(
    admin: MQAdmin,
    cluster: Annotated[str, typer.Option("-c", "--cluster", help="The cluster whose brokers to ask.")],
    broker: Annotated[Optional[str], typer.Option("-b", "--broker", help="Only this broker set.")] = None,  # noqa: UP045
) -> View:
    """Each controller-mode broker's epoch cache: which master epoch wrote which commitlog range, and its
    max offset (GET_BROKER_EPOCH_CACHE; brokers not in controller mode refuse it).

    Example: mq admin controller broker-epoch -c DefaultCluster -b broker-a
    """
    from mqtools.client.admin.models.controller import broker_epochs_view

    return broker_epochs_view(*await admin.controllers.broker_epochs_each(cluster, broker))
