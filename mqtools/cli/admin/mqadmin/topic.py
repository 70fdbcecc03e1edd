"""mqadmin's topic commands: updateTopic, deleteTopic, topicList, topicRoute, topicStatus, topicClusterList and
queryCq (a queue's consume-queue units), with mqadmin's options and output (RocketMQ 5 layouts)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from mqtools.cli.admin.common import fail, usage
from mqtools.cli.admin.mqadmin import TopicOpt, command, run
from mqtools.client.admin.models.mqadmin_text import (
    query_cq_text,
    route_json,
    route_list,
    topic_config_text,
    topic_status_lines,
    topic_usage_lines,
)
from mqtools.client.errors import PartialWriteError, write_outcome
from mqtools.common.exitcodes import EXIT_REFUSED, EXIT_UNREACHABLE
from mqtools.common.javatext import java_bool

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.configs import TopicRouteData

FLAG_UNIT = 0x1
FLAG_UNIT_SUB = 0x2
PERMS = (2, 4, 6)


def attributes_of(text: str | None) -> dict[str, str]:
    """AttributeParser.parseToMap: `+a=b,+c=d,-e`; a malformed entry is a usage error."""
    found: dict[str, str] = {}
    for item in (text or "").strip().split(",") if text and text.strip() else []:
        key, sep, value = item.partition("=")
        if (sep and not key.startswith("+")) or (not sep and not key.startswith("-")) or key in found:
            raise usage(f"bad attribute {item!r}: use +key=value to add or alter, -key to delete, each key once")
        found[key] = value
    return found


@contextmanager
def said_per_master(line: Callable[[str, str], str]) -> Iterator[None]:
    """A cluster-wide write some masters did not apply, said as mqadmin says each master: `line(addr, "success")`
    for each that applied, then on stderr `line(addr, "failed: <outcome>")` for each that did not and a line per
    name server not updated, and the write's exit code (3 when a target did not answer). mqadmin stops at the
    first master that fails; mq asks every one, so one hung master never hides where the write went."""
    try:
        yield
    except PartialWriteError as exc:
        for addr in exc.applied:
            typer.echo(line(addr, "success"))
        for addr, failure in exc.failed.items():
            typer.echo(line(addr, f"failed: {write_outcome(failure)}"), err=True)
        for namesrv in exc.namesrv_notes():
            typer.echo(namesrv, err=True)
        raise typer.Exit(exc.exit_code) from None


@command("updateTopic", "mq admin topic create|update", "Update or create topic.")
def update_topic(
    topic: TopicOpt,
    broker_addr: Annotated[Optional[str], typer.Option("-b", "--brokerAddr", help="create topic to which broker")] = None,  # noqa: UP045
    cluster: Annotated[Optional[str], typer.Option("-c", "--clusterName", help="create topic to which cluster")] = None,  # noqa: UP045
    read_queues: Annotated[int, typer.Option("-r", "--readQueueNums", help="set read queue nums")] = 8,
    write_queues: Annotated[int, typer.Option("-w", "--writeQueueNums", help="set write queue nums")] = 8,
    perm: Annotated[int, typer.Option("-p", "--perm", help="set topic's permission(2|4|6), intro\\[2:W 4:R; 6:RW]")] = 6,
    order: Annotated[Optional[str], typer.Option("-o", "--order", help="set topic's order(true|false)")] = None,  # noqa: UP045
    unit: Annotated[Optional[str], typer.Option("-u", "--unit", help="is unit topic (true|false)")] = None,  # noqa: UP045
    has_unit_sub: Annotated[Optional[str], typer.Option("-s", "--hasUnitSub", help="has unit sub (true|false)")] = None,  # noqa: UP045
    attributes: Annotated[Optional[str], typer.Option("-a", "--attributes", help="attribute(+a=b,+c=d,-e)")] = None,  # noqa: UP045
) -> None:
    """Example: mq admin updateTopic -c DefaultCluster -t Orders -r 8 -w 8 -p 6 -o false"""
    from mqtools.client.admin.models.configs import TopicConfig

    if (broker_addr is None) == (cluster is None):
        raise usage("give one of -b/--brokerAddr and -c/--clusterName")
    for name, n in (("-r/--readQueueNums", read_queues), ("-w/--writeQueueNums", write_queues)):
        if not 1 <= n <= 1024:
            raise usage(f"{name} must be 1..1024, not {n}")
    if perm not in PERMS:
        raise usage(f"-p/--perm must be 2 (W), 4 (R) or 6 (RW), not {perm}")
    flag = (FLAG_UNIT if java_bool(unit) else 0) | (FLAG_UNIT_SUB if java_bool(has_unit_sub) else 0)
    config = TopicConfig(topic.strip(), read_queues, write_queues, perm, topic_sys_flag=flag, order=java_bool(order),
                         attributes=attributes_of(attributes))

    async def job(admin: MQAdmin) -> list[str]:
        """mqadmin's lines: a broker's order layout before its line, a cluster's after its masters' lines."""
        addrs = await admin.topics.create_topic(config, cluster=cluster, broker_addr=broker_addr)
        lines = [f"create topic to {addr} success." for addr in addrs]
        if not config.order:
            return lines
        if broker_addr is not None:
            name = next((n for n, a in (await admin.master_addrs()).items() if a == broker_addr), broker_addr)
            return [f"set broker orderConf. isOrder=true, orderConf=[{name}:{config.write_queue_nums}]", *lines]
        layout = ";".join(f"{n}:{config.write_queue_nums}" for n in await admin.master_addrs(cluster))
        return [*lines, f"set cluster orderConf. isOrder=true, orderConf=[{layout}]"]

    with said_per_master(lambda addr, result: f"create topic to {addr} {result}."):
        lines = run(job)
    for line in lines:
        typer.echo(line)
    typer.echo(topic_config_text(config))


@command("deleteTopic", "mq admin topic delete", "Delete topic from broker and NameServer.")
def delete_topic(
    topic: TopicOpt,
    cluster: Annotated[str, typer.Option("-c", "--clusterName", help="delete topic from which cluster")],
) -> None:
    """Example: mq admin deleteTopic -c DefaultCluster -t Orders"""
    name, where = topic.strip(), cluster.strip()

    async def job(admin: MQAdmin) -> None:
        await admin.topics.delete_topic(name, where)

    try:
        run(job)
    except PartialWriteError as exc:
        if exc.failed:  # not every master applied it: the name servers were not asked, one line says it all
            raise
        typer.echo(f"delete topic [{name}] from cluster [{where}] success.")
        for namesrv in exc.namesrv_notes():
            typer.echo(namesrv, err=True)
        raise typer.Exit(exc.exit_code) from None
    typer.echo(f"delete topic [{name}] from cluster [{where}] success.")
    typer.echo(f"delete topic [{name}] from NameServer success.")


@command("topicList", "mq admin topic list", "Fetch all topic list from name server.")
def topic_list(
    cluster_model: Annotated[bool, typer.Option("-c", "--clusterModel", help="clusterModel")] = False,
) -> None:
    """Example: mq admin topicList -c"""

    async def job(admin: MQAdmin) -> list[str]:
        if not cluster_model:
            return await admin.topics.topic_list()
        return topic_usage_lines(await admin.overview.topic_usage())

    for line in run(job):
        typer.echo(line)


@command("topicRoute", "mq admin topic route", "Examine topic route info.")
def topic_route(
    topic: TopicOpt,
    as_list: Annotated[bool, typer.Option("-l", "--list", help="Use list format to print data")] = False,
) -> None:
    """Example: mq admin topicRoute -t Orders -l"""

    async def job(admin: MQAdmin) -> TopicRouteData:
        return await admin.topics.topic_route(topic.strip())

    route = run(job)
    typer.echo(route_list(route) if as_list else route_json(route))


@command("topicStatus", "mq admin topic status", "Examine topic Status info.")
def topic_status(
    topic: TopicOpt,
    cluster: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-c", "--cluster", help="cluster name or lmq parent topic, lmq is used to find the route.")] = None,
) -> None:
    """Example: mq admin topicStatus -t Orders"""

    async def job(admin: MQAdmin) -> list[str]:
        return topic_status_lines(await admin.overview.topic_status(topic.strip(), cluster.strip() if cluster else None))

    for line in run(job):
        typer.echo(line)


@command("topicClusterList", "mq admin topic clusters", "Get cluster info for topic.")
def topic_cluster_list(topic: TopicOpt) -> None:
    """Example: mq admin topicClusterList -t Orders"""

    async def job(admin: MQAdmin) -> list[str]:
        return await admin.topics.topic_clusters(topic.strip())

    for name in run(job):
        typer.echo(name)


@command("queryCq", "mq admin topic cq", "Query cq command.")
def query_cq(
    topic: TopicOpt,
    queue: Annotated[int, typer.Option("-q", "--queue", help="queue num, ie. 1")],
    index: Annotated[int, typer.Option("-i", "--index", help="start queue index.")],
    count: Annotated[int, typer.Option("-c", "--count", help="how many.")] = 10,
    broker: Annotated[Optional[str], typer.Option("-b", "--broker", help="broker addr.")] = None,  # noqa: UP045
    group: Annotated[Optional[str], typer.Option("-g", "--consumer", help="consumer group.")] = None,  # noqa: UP045
) -> None:
    """Example: mq admin queryCq -t Orders -q 0 -i 1200 -c 5"""
    name = topic.strip()

    async def job(admin: MQAdmin) -> Any:
        return await admin.brokers.consume_queue_units(name, queue, index, count, group=group and group.strip(),
                                                       broker_addr=broker and broker.strip())

    found = run(job)
    # mqadmin asks one broker: -b, else the route's first set; one that cannot be read is said, never replaced
    first = min([*(b.broker_name or "" for b in found.brokers), *(u.broker_name or "" for u in found.unreachable)],
                default=None)
    if first is None:
        raise fail(f"no broker serves {name}", EXIT_REFUSED)
    missed = next((u for u in found.unreachable if (u.broker_name or "") == first), None)
    if missed is not None:
        raise fail(str(missed), EXIT_UNREACHABLE)
    one = next(b for b in found.brokers if (b.broker_name or "") == first)
    if one.units is None:
        where = one.addr if one.broker_name is None else f"{one.broker_name} ({one.addr})"
        raise fail(f"{where}: {one.remark}", EXIT_REFUSED)
    typer.echo(query_cq_text(one), nl=False)
