"""mqadmin's controller-mode commands (getControllerMetaData, getSyncStateSet, electMaster, getBrokerEpoch,
cleanBrokerMetadata, getControllerConfig), printed as mqadmin 5 prints them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin import common
from mqtools.cli.admin.common import broker_ids, usage
from mqtools.cli.admin.mqadmin import command, run
from mqtools.client.admin.models.mqadmin_controller_text import (
    broker_epochs_text,
    controller_metadata_text,
    election_text,
    sync_state_set_lines,
)
from mqtools.client.admin.models.mqadmin_text import config_lines
from mqtools.common.addresses import parse_namesrv_list

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.controller import (
        BrokerEpochs,
        BrokerSetState,
        ControllerMetadata,
        Election,
    )

ControllerAddrOpt = Annotated[str, typer.Option("-a", "--controllerAddress", help="Controller address(es)")]


@command("getControllerMetaData", "mq admin controller metadata", "Get controller cluster's metadata", namesrv=False)
def get_controller_meta_data(controller: ControllerAddrOpt) -> None:
    """Example: mq admin getControllerMetaData -a 127.0.0.1:9878"""
    addr = parse_namesrv_list(controller)[0]

    async def job(admin: MQAdmin) -> ControllerMetadata:
        return await admin.controllers.metadata(addr)

    typer.echo(controller_metadata_text(common.run(common.ClusterOptions.given(controller), job)))


@command("getSyncStateSet", "mq admin controller sync-state-set", "Fetch syncStateSet for target brokers")
def get_sync_state_set(
    controller: ControllerAddrOpt,
    broker: Annotated[Optional[str], typer.Option("-b", "--brokerName", help="Broker name")] = None,  # noqa: UP045
    cluster: Annotated[Optional[str], typer.Option("-c", "--clusterName", help="Cluster name")] = None,  # noqa: UP045
) -> None:
    """Example: mq admin getSyncStateSet -a 127.0.0.1:9878 -b broker-a"""
    if broker is None and cluster is None:
        raise usage("give -b brokerName or -c clusterName")
    addrs = parse_namesrv_list(controller)[:1]

    async def names_of_cluster(admin: MQAdmin) -> list[str]:
        info = await admin.cluster_info()
        return sorted(info.cluster_addr_table.get(cluster or "", ()))

    names = [broker] if broker else run(names_of_cluster)

    async def job(admin: MQAdmin) -> list[BrokerSetState]:
        return await admin.controllers.broker_sets(addrs, names)

    for b in common.run(common.ClusterOptions.given(controller), job):
        for line in sync_state_set_lines(b):
            typer.echo(line)


@command("electMaster", "mq admin controller elect-master", "Re-elect the specified broker as master.",
         namesrv=False)
def elect_master(
    controller: ControllerAddrOpt,
    broker_id: Annotated[int, typer.Option("-b", "--brokerId", help="The broker id to make master")],
    broker_name: Annotated[str, typer.Option("-bn", "--brokerName", help="The broker set (brokerName)")],
    cluster: Annotated[str, typer.Option("-c", "--clusterName", help="Cluster name")],
) -> None:
    """Example: mq admin electMaster -a 127.0.0.1:9878 -b 2 -bn broker-a -c DefaultCluster"""
    addrs = parse_namesrv_list(controller)

    async def job(admin: MQAdmin) -> Election:
        return await admin.controllers.elect_master(addrs, cluster, broker_name, broker_id)

    typer.echo(election_text(cluster, broker_name, common.run(common.ClusterOptions.given(controller), job)))


@command("getBrokerEpoch", "mq admin controller broker-epoch", "Fetch broker epoch entries")
def get_broker_epoch(
    cluster: Annotated[str, typer.Option("-c", "--clusterName", help="Cluster name")],
    broker: Annotated[Optional[str], typer.Option("-b", "--brokerName", help="Broker name")] = None,  # noqa: UP045
) -> None:
    """Example: mq admin getBrokerEpoch -c DefaultCluster -b broker-a"""

    async def job(admin: MQAdmin) -> list[BrokerEpochs]:
        return await admin.controllers.broker_epochs(cluster, broker)

    for b in run(job):
        typer.echo(broker_epochs_text(b))


@command("cleanBrokerMetadata", "mq admin controller clean-broker-metadata", "Clean metadata of broker on controller",
         namesrv=False)
def clean_broker_metadata(
    controller: ControllerAddrOpt,
    broker_name: Annotated[str, typer.Option("-bn", "--brokerName", help="Broker name")],
    ids: Annotated[Optional[str], typer.Option("-b", "--brokerControllerIdsToClean", help="Broker ids to forget, e.g. 1;2;3")] = None,  # noqa: UP045
    cluster: Annotated[Optional[str], typer.Option("-c", "--clusterName", help="Cluster name")] = None,  # noqa: UP045
    clean_living: Annotated[bool, typer.Option("-l", "--cleanLivingBroker", help="Also forget live brokers")] = False,
) -> None:
    """Example: mq admin cleanBrokerMetadata -a 127.0.0.1:9878 -bn broker-a -b 3 -c DefaultCluster"""
    if cluster is None and not clean_living:
        raise usage("give -c clusterName (or -l)")
    id_list = broker_ids(ids, "-b")

    async def job(admin: MQAdmin) -> None:
        await admin.controllers.clean_broker_metadata(parse_namesrv_list(controller), cluster, broker_name, id_list,
                                                      clean_living)

    common.run(common.ClusterOptions.given(controller), job)
    typer.echo(f"clear broker {broker_name} metadata from controller success! ")


@command("getControllerConfig", "mq admin controller config", "Get controller config.", namesrv=False)
def get_controller_config(controller: ControllerAddrOpt) -> None:
    """Example: mq admin getControllerConfig -a 127.0.0.1:9878"""
    addrs = parse_namesrv_list(controller)

    async def job(admin: MQAdmin) -> dict[str, dict[str, str]]:
        return {a: await admin.controllers.config(a) for a in addrs}

    for addr, conf in common.run(common.ClusterOptions.given(controller), job).items():
        typer.echo("\n".join(config_lines(addr, conf)))
