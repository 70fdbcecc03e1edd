"""`mq admin topic list|route|status|clusters|cq|create|update|delete|perm`: topics, where they live, what they hold.

create refuses a topic that already exists on a target broker and update refuses one that exists on
none, so a typo never makes a new topic; queue numbers are 1..1024 and the permission is rw, r or w
(or mqadmin's 6, 4, 2). delete asks first (and refuses without --yes when not on a terminal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import (
    BrokerOpt,
    ClusterOpt,
    YesOpt,
    confirm,
    fail,
    one_target,
    usage,
)
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import View
from mqtools.client.admin.models.topics import (
    topic_change_view,
    topic_clusters_view,
    topic_list_view,
    topic_route_view,
    topic_status_view,
)
from mqtools.common.exitcodes import EXIT_REFUSED
from mqtools.common.perm import PERM_BY_NAME
from mqtools.common.topic_attributes import MESSAGE_TYPE

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

app = typer.Typer(help="Topics: list, route, status, clusters, cq, create, update, delete, perm.", no_args_is_help=True)
TopicArg = Annotated[str, typer.Argument(help="Topic name.")]
ReadOpt = Annotated[Optional[int], typer.Option(  # noqa: UP045
    "--read-queues", "-r", min=1, max=1024, help="Read queue count, 1..1024.")]
WriteOpt = Annotated[Optional[int], typer.Option(  # noqa: UP045
    "--write-queues", "-w", min=1, max=1024, help="Write queue count, 1..1024.")]
PermOpt = Annotated[Optional[str], typer.Option("--perm", "-p", help="rw, r or w (or 6, 4, 2).")]  # noqa: UP045
TypeOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--message-type", help="RocketMQ 5's message.type attribute: NORMAL, FIFO, DELAY or TRANSACTION (a 5.x proxy "
    "takes only that type's sends; a topic without it is NORMAL there).")]
MESSAGE_TYPES = ("NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED")


def parse_type(text: str | None) -> str | None:
    """A message type, upper-cased; anything else is a usage error (MIXED: brokers refuse it by default)."""
    if text is None:
        return None
    if text.upper() not in MESSAGE_TYPES:
        raise usage(f"bad message type {text!r}: use {', '.join(MESSAGE_TYPES[:-1])} (or MIXED)")
    return text.upper()


def parse_perm(text: str) -> int:
    """rw/r/w or mqadmin's 6/4/2; anything else is a usage error."""
    perm = PERM_BY_NAME.get(text.strip().lower())
    if perm is None:
        raise usage(f"bad perm {text!r}: use rw, r or w (or 6, 4, 2)")
    return perm


@admin_command(app, "list", output=True, watch=True)
async def list_(
    admin: MQAdmin,
    cluster: Annotated[Optional[str], typer.Option("-c", "--cluster", help="Only this cluster's topics.")] = None,  # noqa: UP045
) -> View:
    """Every topic the name servers know, with its kind (normal, retry, dlq, system) and clusters.

    Example: mq admin topic list -c DefaultCluster
    """
    return topic_list_view(await admin.topics.topic_catalogue(cluster), cluster)


@admin_command(app, "route", output=True, watch=True)
async def route(admin: MQAdmin, topic: TopicArg) -> View:
    """Which brokers serve the topic, with their addresses, queue counts and permission.

    Example: mq admin topic route Orders
    """
    return topic_route_view(topic, await admin.topics.topic_route(topic))


@admin_command(app, "status", output=True, watch=True)
async def status(
    admin: MQAdmin,
    topic: TopicArg,
    cluster: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-c", "--cluster", help="Ask this cluster's masters instead of the route's.")] = None,
) -> View:
    """Per queue: min and max offset, messages held, last message stored; the topic's put TPS.

    Example: mq admin topic status Orders --watch 2
    """
    return topic_status_view(await admin.overview.topic_status(topic, cluster))


@admin_command(app, "clusters", output=True, watch=True)
async def clusters(admin: MQAdmin, topic: TopicArg) -> View:
    """The clusters with at least one broker serving the topic.

    Example: mq admin topic clusters Orders
    """
    return topic_clusters_view(topic, await admin.topics.topic_clusters(topic))


@admin_command(app, "cq", output=True, watch=True)
async def cq(
    admin: MQAdmin,
    topic: TopicArg,
    queue_id: Annotated[int, typer.Argument(help="Queue id.", min=0)],
    index: Annotated[int, typer.Option("--index", "-i", min=0, help="The first queue index (offset) shown.")] = 0,
    count: Annotated[int, typer.Option("--count", min=1, max=1024, help="Units shown at most, 1..1024.")] = 10,
    group: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-g", "--group", help="Also show this consumer group's subscription to the topic on each broker.")] = None,
    broker_addr: BrokerOpt = None,
) -> View:
    """The queue's consume-queue units from INDEX on (mqadmin queryCq): where each message lies in the commitlog,
    its size and tag code, on each broker set serving the topic (its master, else a slave), within the file that
    holds INDEX; each broker's first and last index below.

    Example: mq admin topic cq Orders 0 --index 1200 --count 5
    """
    from mqtools.client.admin.models.consume_queue import consume_queue_units_view

    found = await admin.brokers.consume_queue_units(topic, queue_id, index, count, group=group,
                                                    broker_addr=broker_addr)
    return consume_queue_units_view(found)


@admin_command(app, "create", output=True)
def create(
    s: Session,
    topic: TopicArg, cluster: ClusterOpt = None, broker_addr: BrokerOpt = None,
    read_queues: Annotated[int, typer.Option("--read-queues", "-r", min=1, max=1024, help="1..1024.")] = 8,
    write_queues: Annotated[int, typer.Option("--write-queues", "-w", min=1, max=1024, help="1..1024.")] = 8,
    perm: Annotated[str, typer.Option("--perm", "-p", help="rw, r or w (or 6, 4, 2).")] = "rw",
    order: Annotated[bool, typer.Option("--order", help="Ordered: record the layout on the name servers.")] = False,
    message_type: TypeOpt = None,
) -> None:
    """Create a topic on every master of a cluster or on one broker; refused if it exists on any of them.

    Example: mq admin topic create Orders -c DefaultCluster -r 8 -w 8
    """
    from mqtools.client.admin.models.configs import TopicConfig
    from mqtools.client.admin.models.topics import TopicChange
    one_target(cluster, broker_addr)
    kind = parse_type(message_type)
    config = TopicConfig(topic, read_queues, write_queues, parse_perm(perm), order=order,
                         attributes={MESSAGE_TYPE: kind} if kind else {})

    async def job(admin: MQAdmin) -> View:
        addrs = await admin.topics.create_topic(config, cluster=cluster, broker_addr=broker_addr, exist_ok=False)
        names = {addr: name for name, addr in (await admin.master_addrs()).items()}
        return topic_change_view(topic, "create", [TopicChange(names.get(a), a, None, config) for a in addrs])

    s.render(s.run(job))


@admin_command(app, "update", output=True)
def update(
    s: Session,
    topic: TopicArg, cluster: ClusterOpt = None, broker_addr: BrokerOpt = None,
    read_queues: ReadOpt = None, write_queues: WriteOpt = None, perm: PermOpt = None,
    order: Annotated[Optional[bool], typer.Option("--order/--no-order", help="Ordered or not.")] = None,  # noqa: UP045
    message_type: TypeOpt = None,
) -> None:
    """Change what is given and keep the rest; on one broker, a cluster's masters, or (default) every
    master serving the topic. Refused when the topic exists on none of them.

    Example: mq admin topic update Orders -w 16 -r 16
    """
    if cluster is not None and broker_addr is not None:
        raise usage("give -c CLUSTER or -b BROKER_ADDR, not both")
    if read_queues is None and write_queues is None and perm is None and order is None and message_type is None:
        raise usage("nothing to change: give --read-queues, --write-queues, --perm, --order/--no-order or "
                    "--message-type")
    new_perm = None if perm is None else parse_perm(perm)
    kind = parse_type(message_type)

    async def job(admin: MQAdmin) -> View:
        changes = await admin.topics.update_topic(topic, cluster=cluster, broker_addr=broker_addr,
                                           read_queue_nums=read_queues, write_queue_nums=write_queues,
                                           perm=new_perm, order=order, message_type=kind)
        return topic_change_view(topic, "update", changes)

    s.render(s.run(job))


@admin_command(app, "perm", output=True)
def perm_(
    s: Session,
    topic: TopicArg,
    perm: Annotated[str, typer.Option("--perm", "-p", help="rw, r or w (or 6, 4, 2).")],
    cluster: ClusterOpt = None, broker_addr: BrokerOpt = None,
) -> None:
    """Change the topic's permission (queue counts kept); default: every master serving the topic.

    Example: mq admin topic perm Orders -p r
    """
    if cluster is not None and broker_addr is not None:
        raise usage("give -c CLUSTER or -b BROKER_ADDR, not both")
    new_perm = parse_perm(perm)

    async def job(admin: MQAdmin) -> View:
        return topic_change_view(topic, "perm", await admin.topics.update_topic(topic, cluster=cluster, broker_addr=broker_addr,
                                                                   perm=new_perm))

    s.render(s.run(job))


@admin_command(app, "delete")
def delete(
    s: Session,
    topic: TopicArg,
    cluster: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-c", "--cluster", help="Only from this cluster (default: every cluster serving the topic).")] = None,
    yes: YesOpt = False,
) -> None:
    """Delete the topic from the masters of a cluster (default: of every cluster serving it) and from
    the name servers. Its messages become unreachable.

    Example: mq admin topic delete Orders -c DefaultCluster --yes
    """

    async def where(admin: MQAdmin) -> list[str]:
        return await admin.topics.topic_clusters(topic)

    hosting = s.run(where)
    if cluster is not None and cluster not in hosting:
        raise fail(f"topic {topic} is not on cluster {cluster} (it is on: {', '.join(hosting)}); nothing deleted",
                   EXIT_REFUSED)
    targets = [cluster] if cluster is not None else hosting
    confirm(f"Delete topic {topic} from cluster {', '.join(targets)} and the name servers?", yes)

    async def job(admin: MQAdmin) -> list[str]:
        return [a for c in targets for a in await admin.topics.delete_topic(topic, c)]

    addrs = s.run(job)
    typer.echo(f"deleted topic {topic} from {', '.join(addrs)} (cluster {', '.join(targets)}) and the name servers")
