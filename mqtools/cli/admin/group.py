"""`mq admin group list|create|update|delete|progress|connections|status|consume-mode`: consumer groups.

progress is per queue (broker offset, committed offset, lag, in flight, last consume time) with
totals; status is one line per group. create refuses a group some target already has and update one
that none has; delete asks first (and refuses without --yes when not on a terminal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from mqtools.cli.admin.common import (
    BrokerOpt,
    ClusterOpt,
    ProxiesOpt,
    YesOpt,
    confirm,
    fail,
    one_target,
    usage,
)
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import View

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

app = typer.Typer(help="Consumer groups: list, create, update, delete, progress, connections, status, consume-mode.",
                  no_args_is_help=True)
GroupArg = Annotated[str, typer.Argument(help="Consumer group.")]
ConsumeOpt = Annotated[Optional[bool], typer.Option("--consume/--no-consume", help="Consuming allowed.")]  # noqa: UP045
BroadcastOpt = Annotated[Optional[bool], typer.Option(  # noqa: UP045
    "--broadcast/--no-broadcast", help="Broadcast consumption allowed.")]
OrderlyOpt = Annotated[Optional[bool], typer.Option("--orderly/--no-orderly", help="Orderly consumption.")]  # noqa: UP045
FromMinOpt = Annotated[Optional[bool], typer.Option(  # noqa: UP045
    "--from-min/--no-from-min", help="A new group starts at the first message kept.")]
RetryQueuesOpt = Annotated[Optional[int], typer.Option(  # noqa: UP045
    "--retry-queues", min=0, max=1024, help="Queues of the group's retry topic.")]
RetryMaxOpt = Annotated[Optional[int], typer.Option(  # noqa: UP045
    "--retry-max-times", min=-1, help="Deliveries before a message goes to the DLQ.")]
BrokerIdOpt = Annotated[Optional[int], typer.Option("--broker-id", min=0, help="Broker id to consume from.")]  # noqa: UP045
SlowOpt = Annotated[Optional[int], typer.Option(  # noqa: UP045
    "--slow-broker-id", min=0, help="Broker id to consume from when consumption is slow.")]
NotifyOpt = Annotated[Optional[bool], typer.Option(  # noqa: UP045
    "--notify/--no-notify", help="Tell clients when the group's members change.")]


def _given(**values: Any) -> dict[str, Any]:
    """The SubscriptionGroupConfig fields the user gave, by field name."""
    from mqtools.client.admin.models.groups import GROUP_CONFIG_FIELDS

    return {GROUP_CONFIG_FIELDS[k][0]: v for k, v in values.items() if v is not None}


@admin_command(app, "list", output=True, watch=True)
async def list_(admin: MQAdmin) -> View:
    """Every group configured on any master, one row per group and broker; system groups flagged.

    Example: mq admin group list -o csv
    """
    from mqtools.client.admin.models.groups import group_list_view

    return group_list_view(await admin.groups.group_list())


@admin_command(app, "create", output=True)
def create(
    s: Session,
    group: GroupArg, cluster: ClusterOpt = None, broker_addr: BrokerOpt = None,
    consume: ConsumeOpt = None, broadcast: BroadcastOpt = None, orderly: OrderlyOpt = None, from_min: FromMinOpt = None,
    retry_queues: RetryQueuesOpt = None, retry_max: RetryMaxOpt = None, broker_id: BrokerIdOpt = None,
    slow_broker_id: SlowOpt = None, notify: NotifyOpt = None,
) -> None:
    """Create a group on every master of a cluster or on one broker; refused if any of them has it.
    Unset options take RocketMQ's defaults, with broadcast and from-min off as mqadmin sets them.

    Example: mq admin group create OrderConsumers -c DefaultCluster --retry-max-times 5
    """
    import dataclasses

    from mqtools.client.admin.models.configs import SubscriptionGroupConfig
    from mqtools.client.admin.models.groups import GroupChange, group_change_view
    one_target(cluster, broker_addr)
    config = dataclasses.replace(
        SubscriptionGroupConfig(group, consume_broadcast_enable=False, consume_from_min_enable=False),
        **_given(consume=consume, broadcast=broadcast, orderly=orderly, from_min=from_min, retry_queues=retry_queues,
                 retry_max=retry_max, broker_id=broker_id, slow_broker_id=slow_broker_id, notify=notify))

    async def job(admin: MQAdmin) -> View:
        addrs = await admin.groups.create_subscription_group(config, cluster=cluster, broker_addr=broker_addr, exist_ok=False)
        names = {addr: name for name, addr in (await admin.master_addrs()).items()}
        return group_change_view(group, "create", [GroupChange(names.get(a), a, None, config) for a in addrs])

    s.render(s.run(job))


@admin_command(app, "update", output=True)
def update(
    s: Session,
    group: GroupArg, cluster: ClusterOpt = None, broker_addr: BrokerOpt = None,
    consume: ConsumeOpt = None, broadcast: BroadcastOpt = None, orderly: OrderlyOpt = None, from_min: FromMinOpt = None,
    retry_queues: RetryQueuesOpt = None, retry_max: RetryMaxOpt = None, broker_id: BrokerIdOpt = None,
    slow_broker_id: SlowOpt = None, notify: NotifyOpt = None,
) -> None:
    """Change what is given and keep the rest; on one broker, a cluster's masters, or (default) every
    master holding the group. Refused when none of them has it.

    Example: mq admin group update OrderConsumers --retry-max-times 3 --no-consume
    """
    if cluster is not None and broker_addr is not None:
        raise usage("give -c CLUSTER or -b BROKER_ADDR, not both")
    changes = _given(consume=consume, broadcast=broadcast, orderly=orderly, from_min=from_min,
                     retry_queues=retry_queues, retry_max=retry_max, broker_id=broker_id,
                     slow_broker_id=slow_broker_id, notify=notify)
    if not changes:
        raise usage("nothing to change: give at least one option (see --help)")

    async def job(admin: MQAdmin) -> View:
        from mqtools.client.admin.models.groups import group_change_view

        done = await admin.groups.update_subscription_group(group, changes, cluster=cluster, broker_addr=broker_addr)
        return group_change_view(group, "update", done)

    s.render(s.run(job))


@admin_command(app, "delete")
def delete(
    s: Session,
    group: GroupArg, cluster: ClusterOpt = None, broker_addr: BrokerOpt = None,
    remove_offsets: Annotated[bool, typer.Option("--remove-offsets", help="Drop its committed offsets too.")] = False,
    yes: YesOpt = False,
) -> None:
    """Delete a group's config from one broker or a cluster's masters; with -c also its %RETRY% and
    %DLQ% topics there, as mqadmin does. Refused for a group no master has.

    Example: mq admin group delete OldConsumers -c DefaultCluster --remove-offsets --yes
    """
    from mqtools.client.errors import MQClientError
    from mqtools.common.topics import dlq_topic, retry_topic

    one_target(cluster, broker_addr)

    async def known(admin: MQAdmin) -> None:
        await admin.groups.subscription_group(group)

    s.run(known)
    where = f"cluster {cluster}" if cluster else f"broker {broker_addr}"
    confirm(f"Delete group {group} from {where}{' with its offsets' if remove_offsets else ''}?", yes)

    async def job(admin: MQAdmin) -> tuple[list[str], list[MQClientError]]:
        """Where the group went, and why its topics did not all go: said after the group's line, or a re-run
        finds no group to delete and the topics are left."""
        addrs = await admin.groups.delete_subscription_group(group, cluster=cluster, broker_addr=broker_addr,
                                                      clean_offset=remove_offsets)
        missed: list[MQClientError] = []
        if cluster is not None:
            for topic in (retry_topic(group), dlq_topic(group)):
                try:
                    await admin.topics.delete_topic(topic, cluster)
                except MQClientError as exc:
                    missed.append(exc)
        return addrs, missed

    addrs, missed = s.run(job)
    extra = f" and its topics %RETRY%{group}, %DLQ%{group}" if cluster and not missed else ""
    typer.echo(f"deleted group {group} from {', '.join(addrs)}{extra}")
    if missed:
        raise fail("; ".join(exc.summary() for exc in missed), max(exc.exit_code for exc in missed))


@admin_command(app, "progress", output=True, watch=True)
async def progress(
    admin: MQAdmin,
    group: GroupArg,
    topic: Annotated[Optional[str], typer.Option("-t", "--topic", help="Only this topic.")] = None,  # noqa: UP045
) -> View:
    """Per queue: broker offset, committed offset, lag (diff), in flight and last consume time; totals.

    Example: mq admin group progress OrderConsumers -t Orders --watch 5
    """
    from mqtools.client.admin.models.groups import group_progress_view

    return group_progress_view(await admin.groups.consumer_progress(group, topic), topic)


@admin_command(app, "connections", output=True, watch=True)
def connections(
    s: Session,
    group: GroupArg,
    proxies: ProxiesOpt = None,
) -> None:
    """The group's online clients and what they subscribe to (none online: an empty list); with proxies (-p, or
    the context's) also its RocketMQ 5 gRPC clients, which only the proxies see.

    Example: mq admin group connections OrderConsumers
    """
    asked = s.proxies(proxies)

    async def build(admin: MQAdmin) -> View:
        from mqtools.client.admin.models.connections import group_connections_view

        online = await admin.groups.online_connections(group)
        return group_connections_view(group, online, await admin.proxies.clients_of(asked, groups=[group]) if asked
                                      else None)

    s.show(build)


@admin_command(app, "status", output=True, watch=True)
async def status(
    admin: MQAdmin,
    groups: Annotated[Optional[list[str]], typer.Argument(  # noqa: UP045
        help="Groups (default: every group that ever had a consumer online).")] = None,
) -> View:
    """One line per group: clients online, lowest client version, type, model, consume TPS, total lag.

    Example: mq admin group status OrderConsumers BillingConsumers
    """
    from mqtools.client.admin.models.groups import group_status_view

    return group_status_view(await admin.overview.group_summaries(groups or None))


@admin_command(app, "consume-mode", output=True)
def consume_mode(
    s: Session,
    group: GroupArg,
    topic: Annotated[Optional[str], typer.Option("-t", "--topic", help="The topic (needed with --set).")] = None,  # noqa: UP045
    mode: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--set", help="POP or PULL: how brokers serve the group's 5.x consumers that leave rebalance to them.")] = None,
    share: Annotated[int, typer.Option("--share-queues", min=0, help="POP: each member also reads the queues "
                                       "of the next N members.")] = 0,
    cluster: ClusterOpt = None, broker_addr: BrokerOpt = None,
) -> None:
    """Per broker: PULL (client rebalance, the default) or POP (RocketMQ 5) for the group on a topic, or on
    every topic it has one set for; --set writes it on one broker or a cluster's masters, then reads it back.

    Example: mq admin group consume-mode OrderConsumers -t Orders --set POP -c DefaultCluster
    """
    from mqtools.client.admin.models.consume_modes import MODES, consume_modes_view

    if mode is not None:
        mode = mode.upper()
        if mode not in MODES:
            raise usage(f"bad consume mode {mode!r}: use POP or PULL")
        if topic is None:
            raise usage("--set needs -t TOPIC")
        one_target(cluster, broker_addr)
    elif broker_addr is not None:
        raise usage("-b is for --set; to read, give -c CLUSTER or nothing")

    async def build(admin: MQAdmin) -> View:
        if mode is not None:
            await admin.consume_modes.set_consume_mode(topic, group, mode, share, cluster=cluster,
                                                       broker_addr=broker_addr)
        return consume_modes_view(await admin.consume_modes.consume_modes(group, topic, cluster))

    s.show(build)
