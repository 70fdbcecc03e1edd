"""`mq admin controller ...`: RocketMQ 5 controllers (controller mode) and the broker sets they hold.

`-a` names controllers ("host:port;host:port", brokers' controllerAddr): any of them tells who leads, and
the leader answers the rest. broker-epoch asks the brokers themselves, found through the name server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import OutputOpt, TimeoutOpt, check_output, run, show
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import Column, View, render
from mqtools.common.addresses import parse_namesrv_list
from mqtools.common.presentation import when

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.controller import BrokerSetState, Election

app = typer.Typer(help="RocketMQ 5 controllers: leader, masters, epochs, SyncStateSets, elections.",
                  no_args_is_help=True)

ControllerOpt = Annotated[str, typer.Option("-a", "--controller", help="Controller addresses, 'host:port;host:port'.")]
ClusterNameOpt = Annotated[Optional[str], typer.Option("-c", "--cluster", help="The brokers' cluster name.")]  # noqa: UP045


def controllers(addrs: str) -> list[str]:
    return parse_namesrv_list(addrs)


@app.command("metadata")
def metadata(controller: ControllerOpt, output: OutputOpt = "table", timeout: TimeoutOpt = 5.0) -> None:
    """Each controller's view: the Raft group, who leads, and the peers.

    Example: mq admin controller metadata -a 127.0.0.1:9878
    """
    check_output(output)
    addrs = controllers(controller)

    async def build(admin: MQAdmin) -> View:
        metas = [await admin.controllers.metadata(a) for a in addrs]
        rows = [[m.address, m.group, m.leader_id, m.leader_address, m.is_leader, len(m.peers)] for m in metas]
        data = {"controllers": [{"address": m.address, "group": m.group, "leaderId": m.leader_id,
                                 "leaderAddress": m.leader_address, "isLeader": m.is_leader, "peers": m.peers}
                                for m in metas]}
        return View("ControllerMetadata", [Column("CONTROLLER"), Column("GROUP"), Column("LEADER ID"),
                                           Column("LEADER ADDRESS"), Column("IS LEADER"), Column("PEERS", True)],
                    rows, data)

    show(controller, output, build, timeout=timeout)


def sync_state_view(sets: list[BrokerSetState], asked: list[str]) -> View:
    rows = [[b.broker_name, b.master_broker_id, b.master_address, b.master_epoch, b.sync_state_set_epoch,
             ",".join(str(r.broker_id) for r in b.replicas if r.in_sync) or None,
             ",".join(str(r.broker_id) for r in b.replicas if not r.in_sync) or None,
             ",".join(str(r.broker_id) for r in b.replicas if not r.alive) or None] for b in sets]
    found = {b.broker_name for b in sets}
    footer = [f"{name}: the controller does not know this broker set" for name in asked if name not in found]
    data = {"brokerSets": [{"brokerName": b.broker_name, "masterBrokerId": b.master_broker_id,
                            "masterAddress": b.master_address, "masterEpoch": b.master_epoch,
                            "syncStateSetEpoch": b.sync_state_set_epoch,
                            "replicas": [{"brokerId": r.broker_id, "address": r.address, "alive": r.alive,
                                          "inSync": r.in_sync} for r in b.replicas]} for b in sets]}
    return View("SyncStateSets", [Column("BROKER"), Column("MASTER ID", True), Column("MASTER ADDRESS"),
                                  Column("MASTER EPOCH", True), Column("SSS EPOCH", True), Column("IN SYNC"),
                                  Column("NOT IN SYNC"), Column("DEAD")], rows, data, footer=footer)


@app.command("sync-state-set")
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
    check_output(output)

    async def build(admin: MQAdmin) -> View:
        return sync_state_view(await admin.controllers.broker_sets(controllers(controller), brokers), brokers)

    show(controller, output, build, timeout=timeout)


def election_view(e: Election) -> View:
    footer = [] if e.changed else [f"{e.broker_name}: the master did not change"]
    return View("Election", [Column("BROKER"), Column("MASTER ID", True), Column("MASTER ADDRESS"),
                             Column("MASTER EPOCH", True), Column("SSS EPOCH", True), Column("CHANGED")],
                [[e.broker_name, e.master_broker_id, e.master_address, e.master_epoch, e.sync_state_set_epoch,
                  e.changed]],
                {"brokerName": e.broker_name, "masterBrokerId": e.master_broker_id, "masterAddress": e.master_address,
                 "masterEpoch": e.master_epoch, "syncStateSetEpoch": e.sync_state_set_epoch, "changed": e.changed},
                footer=footer)


@app.command("elect-master")
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
    check_output(output)

    async def job(admin: MQAdmin) -> Election:
        return await admin.controllers.elect_master(controllers(controller), cluster or "", broker, broker_id)

    render(election_view(run(controller, job, timeout=timeout)), output)


@app.command("clean-broker-metadata")
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
    try:
        id_list = [int(i) for i in ids.split(";") if i.strip()] if ids else None
    except ValueError:
        from mqtools.cli.admin.common import usage

        raise usage(f"--ids {ids!r}: expected broker ids separated by ';'") from None

    async def job(admin: MQAdmin) -> None:
        await admin.controllers.clean_broker_metadata(controllers(controller), cluster, broker, id_list, clean_living)

    run(controller, job, timeout=timeout)
    typer.echo(f"{broker}: {'broker ids ' + ids if ids else 'the broker set'} forgotten by the controllers")


@app.command("elections")
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
    check_output(output)

    async def build(admin: MQAdmin) -> View:
        events = await admin.controllers.elections(controllers(controller), broker)
        rows = [[when(e.at_ms), e.broker_name, e.old_master, e.new_master, e.master_epoch, e.cause,
                 None if e.unwritable_ms is None else f"{e.unwritable_ms / 1000:.3f}s"] for e in events]
        data = {"elections": [{"atMs": e.at_ms, "brokerName": e.broker_name, "oldMaster": e.old_master,
                               "newMaster": e.new_master, "masterEpoch": e.master_epoch, "cause": e.cause,
                               "unwritableMs": e.unwritable_ms} for e in events]}
        return View("ControllerElections", [Column("WHEN"), Column("BROKER"), Column("OLD MASTER", True),
                                            Column("NEW MASTER", True), Column("MASTER EPOCH", True),
                                            Column("CAUSE"), Column("UNWRITABLE", True)], rows, data)

    show(controller, output, build, timeout=timeout)


@app.command("config")
def config(controller: ControllerOpt, output: OutputOpt = "table", timeout: TimeoutOpt = 5.0) -> None:
    """Each controller's settings (GET_CONTROLLER_CONFIG).

    Example: mq admin controller config -a 127.0.0.1:9878
    """
    check_output(output)
    addrs = controllers(controller)

    async def build(admin: MQAdmin) -> View:
        configs = {a: await admin.controllers.config(a) for a in addrs}
        rows = [[a, k, v] for a, conf in configs.items() for k, v in sorted(conf.items())]
        return View("ControllerConfig", [Column("CONTROLLER"), Column("KEY"), Column("VALUE")], rows,
                    {"controllers": [{"address": a, "config": dict(sorted(c.items()))} for a, c in configs.items()]})

    show(controller, output, build, timeout=timeout)


@admin_command(app, "broker-epoch", output=True, watch=True)
def broker_epoch(
    s: Session,
    cluster: Annotated[str, typer.Option("-c", "--cluster", help="The cluster whose brokers to ask.")],
    broker: Annotated[Optional[str], typer.Option("-b", "--broker", help="Only this broker set.")] = None,  # noqa: UP045
) -> None:
    """Each controller-mode broker's epoch cache: which master epoch wrote which commitlog range, and its
    max offset (GET_BROKER_EPOCH_CACHE; brokers not in controller mode refuse it).

    Example: mq admin controller broker-epoch -c DefaultCluster -b broker-a
    """

    async def build(admin: MQAdmin) -> View:
        found = await admin.controllers.broker_epochs(cluster, broker)
        rows = [[b.broker_name, b.broker_id, b.broker_addr, e.epoch, e.start_offset,
                 b.max_offset if i == len(b.epochs) - 1 else e.end_offset, b.max_offset]
                for b in found for i, e in enumerate(b.epochs)]
        data = {"brokers": [{"clusterName": b.cluster_name, "brokerName": b.broker_name, "brokerAddr": b.broker_addr,
                             "brokerId": b.broker_id, "maxOffset": b.max_offset,
                             "epochs": [{"epoch": e.epoch, "startOffset": e.start_offset, "endOffset": e.end_offset}
                                        for e in b.epochs]} for b in found]}
        return View("BrokerEpochs", [Column("BROKER"), Column("ID", True), Column("ADDRESS"), Column("EPOCH", True),
                                     Column("START OFFSET", True), Column("END OFFSET", True),
                                     Column("MAX OFFSET", True)], rows, data)

    s.show(build)
