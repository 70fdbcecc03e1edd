"""mqadmin's topic commands: updateTopic, deleteTopic, topicList, topicRoute, topicStatus and
topicClusterList, with mqadmin's options and output (RocketMQ 5 layouts)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from mqtools.cli.admin.common import run, usage
from mqtools.cli.admin.mqadmin import NamesrvOpt, TopicOpt, command, front, java_format
from mqtools.cli.admin.mqadmin.message import java_time
from mqtools.common.perm import perm_to_string

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.configs import TopicConfig, TopicRouteData

STATUS_HEADER = "%-32s  %-4s  %-20s  %-20s    %s"
STATUS_ROW = "%-32s  %-4d  %-20d  %-20d    %s"
ROUTE_LIST = "%-45s %-32s %-50s %-10s %-11s %-5s"
USAGE_HEADER = "%-20s  %-48s  %-48s"
USAGE_ROW = "%-20s  %-64s  %-64s"
FLAG_UNIT = 0x1
FLAG_UNIT_SUB = 0x2
PERMS = (2, 4, 6)


def java_bool(text: str | None) -> bool:
    """Boolean.parseBoolean: "true" in any case is true, anything else false."""
    return text is not None and text.strip().lower() == "true"


def java_map(values: dict[Any, Any]) -> str:
    """AbstractMap.toString: {k=v, k=v}."""
    return "{" + ", ".join(f"{k}={v}" for k, v in values.items()) + "}"


def attributes_of(text: str | None) -> dict[str, str]:
    """AttributeParser.parseToMap: `+a=b,+c=d,-e`; a malformed entry is a usage error."""
    found: dict[str, str] = {}
    for item in (text or "").strip().split(",") if text and text.strip() else []:
        key, sep, value = item.partition("=")
        if (sep and not key.startswith("+")) or (not sep and not key.startswith("-")) or key in found:
            raise usage(f"bad attribute {item!r}: use +key=value to add or alter, -key to delete, each key once")
        found[key] = value
    return found


def topic_config_text(config: TopicConfig) -> str:
    """TopicConfig.toString of RocketMQ 5."""
    return (f"TopicConfig [topicName={config.topic_name}, readQueueNums={config.read_queue_nums}, "
            f"writeQueueNums={config.write_queue_nums}, perm={perm_to_string(config.perm)}, "
            f"topicFilterType={config.topic_filter_type}, topicSysFlag={config.topic_sys_flag}, "
            f"order={str(config.order).lower()}, attributes={java_map(config.attributes)}]")


def fastjson_pretty(value: Any, level: int = 0) -> str:
    """RemotingSerializable.toJson(true) as mqadmin 5.x prints it: tab indents, one entry a line, number keys
    unquoted, empty containers as {} and []. (4.9's older fastjson kept a map with number keys on one line,
    `{0:"addr",1:"addr"` then the closing brace on its own line.)"""
    pad, inner = "\t" * level, "\t" * (level + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        parts = [f"\n{inner}{json.dumps(k, ensure_ascii=False) if isinstance(k, str) else k}:"
                 f"{fastjson_pretty(v, level + 1)}" for k, v in value.items()]
        return "{" + ",".join(parts) + f"\n{pad}}}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[" + ",".join(f"\n{inner}{fastjson_pretty(v, level + 1)}" for v in value) + f"\n{pad}]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def route_json(route: TopicRouteData) -> str:
    """TopicRouteData as mqadmin's topicRoute prints it: fields sorted, null fields left out."""
    doc: dict[str, Any] = {
        "brokerDatas": [{"brokerAddrs": dict(sorted(b.broker_addrs.items())), "brokerName": b.broker_name,
                         "cluster": b.cluster, "enableActingMaster": False} for b in route.broker_datas],
        "filterServerTable": route.filter_server_table,
    }
    if route.order_topic_conf:
        doc["orderTopicConf"] = route.order_topic_conf
    doc["queueDatas"] = [{"brokerName": q.broker_name, "perm": q.perm, "readQueueNums": q.read_queue_nums,
                          "topicSysFlag": q.topic_sys_flag, "writeQueueNums": q.write_queue_nums}
                         for q in route.queue_datas]
    return fastjson_pretty(doc)


def route_list(route: TopicRouteData) -> str:
    """topicRoute -l: one row per broker by name, a rule of 158 dashes, the totals."""
    queues = {q.broker_name: q for q in route.queue_datas}
    lines = [ROUTE_LIST % ("#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")]
    for b in sorted(route.broker_datas, key=lambda b: b.broker_name):
        q = queues.get(b.broker_name)
        if q is None:
            continue  # a broker without queue data serves none of the topic's queues
        lines.append(java_format(ROUTE_LIST, b.cluster, b.broker_name, java_map(dict(sorted(b.broker_addrs.items()))),
                                 q.read_queue_nums, q.write_queue_nums, q.perm))
    lines.append("-" * 158)
    lines.append(java_format(ROUTE_LIST, "Total:", len(queues), "", sum(q.read_queue_nums for q in queues.values()),
                             sum(q.write_queue_nums for q in queues.values()), ""))
    return "\n".join(lines)


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
    namesrv: NamesrvOpt = None,
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

    async def job(admin: MQAdmin) -> None:
        addrs = await admin.topics.create_topic(config, cluster=cluster, broker_addr=broker_addr)
        if broker_addr is not None:
            if config.order:
                name = next((n for n, a in (await admin.master_addrs()).items() if a == broker_addr), broker_addr)
                typer.echo(f"set broker orderConf. isOrder=true, orderConf=[{name}:{config.write_queue_nums}]")
            typer.echo(f"create topic to {broker_addr} success.")
        else:
            for addr in addrs:
                typer.echo(f"create topic to {addr} success.")
            if config.order:
                layout = ";".join(f"{n}:{config.write_queue_nums}" for n in await admin.master_addrs(cluster))
                typer.echo(f"set cluster orderConf. isOrder=true, orderConf=[{layout}]")
        typer.echo(topic_config_text(config))

    run(namesrv, job)


@command("deleteTopic", "mq admin topic delete", "Delete topic from broker and NameServer.")
def delete_topic(
    topic: TopicOpt,
    cluster: Annotated[str, typer.Option("-c", "--clusterName", help="delete topic from which cluster")],
    namesrv: NamesrvOpt = None,
) -> None:
    """Example: mq admin deleteTopic -c DefaultCluster -t Orders"""
    name, where = topic.strip(), cluster.strip()

    async def job(admin: MQAdmin) -> None:
        await admin.topics.delete_topic(name, where)

    run(namesrv, job)
    typer.echo(f"delete topic [{name}] from cluster [{where}] success.")
    typer.echo(f"delete topic [{name}] from NameServer success.")


@command("topicList", "mq admin topic list", "Fetch all topic list from name server.")
def topic_list(
    cluster_model: Annotated[bool, typer.Option("-c", "--clusterModel", help="clusterModel")] = False,
    namesrv: NamesrvOpt = None,
) -> None:
    """Example: mq admin topicList -c"""

    async def job(admin: MQAdmin) -> list[str]:
        if not cluster_model:
            return await admin.topics.topic_list()
        lines = [USAGE_HEADER % ("#Cluster Name", "#Topic", "#Consumer Group")]
        for u in await admin.overview.topic_usage():
            for group in u.groups or [""]:
                lines.append(USAGE_ROW % (front(",".join(u.clusters), 20), front(u.topic, 64), front(group, 64)))
        return lines

    for line in run(namesrv, job):
        typer.echo(line)


@command("topicRoute", "mq admin topic route", "Examine topic route info.")
def topic_route(
    topic: TopicOpt,
    as_list: Annotated[bool, typer.Option("-l", "--list", help="Use list format to print data")] = False,
    namesrv: NamesrvOpt = None,
) -> None:
    """Example: mq admin topicRoute -t Orders -l"""

    async def job(admin: MQAdmin) -> TopicRouteData:
        return await admin.topics.topic_route(topic.strip())

    route = run(namesrv, job)
    typer.echo(route_list(route) if as_list else route_json(route))


@command("topicStatus", "mq admin topic status", "Examine topic Status info.")
def topic_status(
    topic: TopicOpt,
    cluster: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-c", "--cluster", help="cluster name or lmq parent topic, lmq is used to find the route.")] = None,
    namesrv: NamesrvOpt = None,
) -> None:
    """Example: mq admin topicStatus -t Orders"""

    async def job(admin: MQAdmin) -> list[str]:
        status = await admin.overview.topic_status(topic.strip(), cluster.strip() if cluster else None)
        lines = [STATUS_HEADER % ("#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated")]
        lines += [STATUS_ROW % (front(q.queue.broker_name, 32), q.queue.queue_id, q.min_offset, q.max_offset,
                                java_time(q.last_update_ms) if q.last_update_ms else "") for q in status.queues]
        tps = "n/a" if status.put_tps is None else repr(float(status.put_tps))
        return [*lines, "", f"Topic Put TPS: {tps}"]

    for line in run(namesrv, job):
        typer.echo(line)


@command("topicClusterList", "mq admin topic clusters", "Get cluster info for topic.")
def topic_cluster_list(topic: TopicOpt, namesrv: NamesrvOpt = None) -> None:
    """Example: mq admin topicClusterList -t Orders"""

    async def job(admin: MQAdmin) -> list[str]:
        return await admin.topics.topic_clusters(topic.strip())

    for name in run(namesrv, job):
        typer.echo(name)
