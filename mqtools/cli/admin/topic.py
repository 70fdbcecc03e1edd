"""`mq admin topic list|route|status|clusters|create|update|delete|perm`: topics, where they live, what they hold.

create refuses a topic that already exists on a target broker and update refuses one that exists on
none, so a typo never makes a new topic; queue numbers are 1..1024 and the permission is rw, r or w
(or mqadmin's 6, 4, 2). delete asks first (and refuses without --yes when not on a terminal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from mqtools.cli.admin.common import (
    BrokerOpt,
    ClusterOpt,
    YesOpt,
    confirm,
    fail,
    one_target,
    usage,
    when,
)
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import Column, View, cell
from mqtools.common.exitcodes import EXIT_REFUSED
from mqtools.common.perm import perm_to_string

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.configs import TopicConfig
    from mqtools.client.admin.models.topics import TopicChange

app = typer.Typer(help="Topics: list, route, status, clusters, create, update, delete, perm.", no_args_is_help=True)
TopicArg = Annotated[str, typer.Argument(help="Topic name.")]
ReadOpt = Annotated[Optional[int], typer.Option(  # noqa: UP045
    "--read-queues", "-r", min=1, max=1024, help="Read queue count, 1..1024.")]
WriteOpt = Annotated[Optional[int], typer.Option(  # noqa: UP045
    "--write-queues", "-w", min=1, max=1024, help="Write queue count, 1..1024.")]
PermOpt = Annotated[Optional[str], typer.Option("--perm", "-p", help="rw, r or w (or 6, 4, 2).")]  # noqa: UP045
PERMS = {"rw": 6, "r": 4, "w": 2, "6": 6, "4": 4, "2": 2}


def parse_perm(text: str) -> int:
    """rw/r/w or mqadmin's 6/4/2; anything else is a usage error."""
    perm = PERMS.get(text.strip().lower())
    if perm is None:
        raise usage(f"bad perm {text!r}: use rw, r or w (or 6, 4, 2)")
    return perm


@admin_command(app, "list", output=True, watch=True)
def list_(
    s: Session,
    cluster: Annotated[Optional[str], typer.Option("-c", "--cluster", help="Only this cluster's topics.")] = None,  # noqa: UP045
) -> None:
    """Every topic the name servers know, with its kind (normal, retry, dlq, system) and clusters.

    Example: mq admin topic list -c DefaultCluster
    """

    async def build(admin: MQAdmin) -> View:
        entries = await admin.topic_catalogue(cluster)
        rows = [[e.topic, e.kind, ",".join(e.clusters) or None] for e in entries]
        data = {"cluster": cluster, "topics": [{"topic": e.topic, "kind": e.kind, "clusters": e.clusters}
                                               for e in entries]}
        return View("TopicList", [Column("TOPIC"), Column("KIND"), Column("CLUSTERS")], rows, data,
                    footer=[f"{len(entries)} topics"])

    s.show(build)


@admin_command(app, "route", output=True, watch=True)
def route(
    s: Session,
    topic: TopicArg,
) -> None:
    """Which brokers serve the topic, with their addresses, queue counts and permission.

    Example: mq admin topic route Orders
    """

    async def build(admin: MQAdmin) -> View:
        data = await admin.topic_route(topic)
        queues = {q.broker_name: q for q in data.queue_datas}
        brokers = []
        for b in sorted(data.broker_datas, key=lambda b: b.broker_name):
            q = queues.get(b.broker_name)
            brokers.append({
                "brokerName": b.broker_name, "cluster": b.cluster,
                "addrs": {str(i): a for i, a in sorted(b.broker_addrs.items())},
                "readQueues": q.read_queue_nums if q else None, "writeQueues": q.write_queue_nums if q else None,
                "perm": q.perm if q else None, "permText": perm_to_string(q.perm) if q else None,
                "topicSysFlag": q.topic_sys_flag if q else None})
        total_r = sum(q.read_queue_nums for q in data.queue_datas)
        total_w = sum(q.write_queue_nums for q in data.queue_datas)
        rows = [[b["brokerName"], b["cluster"], b["addrs"].get("0"),
                 ",".join(a for i, a in b["addrs"].items() if i != "0") or None,
                 b["readQueues"], b["writeQueues"], b["permText"]] for b in brokers]
        footer = [f"total: {len(brokers)} brokers, {total_r} read queues, {total_w} write queues"]
        if data.order_topic_conf:
            footer.append(f"ordered: {data.order_topic_conf}")
        doc = {"topic": topic, "orderTopicConf": data.order_topic_conf, "brokers": brokers,
               "totalReadQueues": total_r, "totalWriteQueues": total_w}
        return View("TopicRoute", [Column("BROKER"), Column("CLUSTER"), Column("MASTER"), Column("SLAVES"),
                                   Column("READ Q", True), Column("WRITE Q", True), Column("PERM")],
                    rows, doc, footer=footer)

    s.show(build)


@admin_command(app, "status", output=True, watch=True)
def status(
    s: Session,
    topic: TopicArg,
    cluster: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-c", "--cluster", help="Ask this cluster's masters instead of the route's.")] = None,
) -> None:
    """Per queue: min and max offset, messages held, last message stored; the topic's put TPS.

    Example: mq admin topic status Orders --watch 2
    """

    async def build(admin: MQAdmin) -> View:
        st = await admin.topic_status(topic, cluster)
        rows = [[q.queue.broker_name, q.queue.queue_id, q.min_offset, q.max_offset, q.messages,
                 when(q.last_update_ms)] for q in st.queues]
        data = {"topic": topic, "putTps": st.put_tps, "messages": st.messages, "queues": [
            {"brokerName": q.queue.broker_name, "queueId": q.queue.queue_id, "minOffset": q.min_offset,
             "maxOffset": q.max_offset, "messages": q.messages, "lastUpdateMs": q.last_update_ms} for q in st.queues]}
        tps = "n/a" if st.put_tps is None else f"{st.put_tps:.2f}"
        return View("TopicStatus", [Column("BROKER"), Column("QID", True), Column("MIN", True), Column("MAX", True),
                                    Column("MESSAGES", True), Column("LAST STORED")], rows, data,
                    footer=[f"total: {len(st.queues)} queues, {st.messages} messages; put TPS {tps}"])

    s.show(build)


@admin_command(app, "clusters", output=True, watch=True)
def clusters(
    s: Session,
    topic: TopicArg,
) -> None:
    """The clusters with at least one broker serving the topic.

    Example: mq admin topic clusters Orders
    """

    async def build(admin: MQAdmin) -> View:
        names = await admin.topic_clusters(topic)
        return View("TopicClusters", [Column("CLUSTER")], [[n] for n in names], {"topic": topic, "clusters": names})

    s.show(build)


def _config_json(config: TopicConfig | None) -> dict[str, Any] | None:
    if config is None:
        return None
    return {"readQueues": config.read_queue_nums, "writeQueues": config.write_queue_nums, "perm": config.perm,
            "permText": perm_to_string(config.perm), "order": config.order}


def _arrow(old: Any, new: Any) -> Any:
    return new if old is None or old == new else f"{cell(old)} -> {cell(new)}"


def change_view(topic: str, operation: str, changes: list[TopicChange]) -> View:
    """What a create, update or perm change wrote, broker by broker (old -> new where it changed)."""
    rows = []
    for c in changes:
        o = c.old
        rows.append([c.broker_name, c.addr,
                     _arrow(o and o.read_queue_nums, c.new.read_queue_nums),
                     _arrow(o and o.write_queue_nums, c.new.write_queue_nums),
                     _arrow(o and perm_to_string(o.perm), perm_to_string(c.new.perm)),
                     _arrow(None if o is None else o.order, c.new.order)])
    data = {"topic": topic, "operation": operation, "brokers": [
        {"brokerName": c.broker_name, "addr": c.addr, "old": _config_json(c.old), "new": _config_json(c.new)}
        for c in changes]}
    return View("TopicChange", [Column("BROKER"), Column("ADDR"), Column("READ Q"), Column("WRITE Q"),
                                Column("PERM"), Column("ORDER")], rows, data, title=f"{operation} {topic}")


@admin_command(app, "create", output=True)
def create(
    s: Session,
    topic: TopicArg, cluster: ClusterOpt = None, broker_addr: BrokerOpt = None,
    read_queues: Annotated[int, typer.Option("--read-queues", "-r", min=1, max=1024, help="1..1024.")] = 8,
    write_queues: Annotated[int, typer.Option("--write-queues", "-w", min=1, max=1024, help="1..1024.")] = 8,
    perm: Annotated[str, typer.Option("--perm", "-p", help="rw, r or w (or 6, 4, 2).")] = "rw",
    order: Annotated[bool, typer.Option("--order", help="Ordered: record the layout on the name servers.")] = False,
) -> None:
    """Create a topic on every master of a cluster or on one broker; refused if it exists on any of them.

    Example: mq admin topic create Orders -c DefaultCluster -r 8 -w 8
    """
    from mqtools.client.admin.models.configs import TopicConfig
    from mqtools.client.admin.models.topics import TopicChange
    one_target(cluster, broker_addr)
    config = TopicConfig(topic, read_queues, write_queues, parse_perm(perm), order=order)

    async def job(admin: MQAdmin) -> View:
        addrs = await admin.create_topic(config, cluster=cluster, broker_addr=broker_addr, exist_ok=False)
        names = {addr: name for name, addr in (await admin.master_addrs()).items()}
        return change_view(topic, "create", [TopicChange(names.get(a), a, None, config) for a in addrs])

    s.render(s.run(job))


@admin_command(app, "update", output=True)
def update(
    s: Session,
    topic: TopicArg, cluster: ClusterOpt = None, broker_addr: BrokerOpt = None,
    read_queues: ReadOpt = None, write_queues: WriteOpt = None, perm: PermOpt = None,
    order: Annotated[Optional[bool], typer.Option("--order/--no-order", help="Ordered or not.")] = None,  # noqa: UP045
) -> None:
    """Change what is given and keep the rest; on one broker, a cluster's masters, or (default) every
    master serving the topic. Refused when the topic exists on none of them.

    Example: mq admin topic update Orders -w 16 -r 16
    """
    if cluster is not None and broker_addr is not None:
        raise usage("give -c CLUSTER or -b BROKER_ADDR, not both")
    if read_queues is None and write_queues is None and perm is None and order is None:
        raise usage("nothing to change: give --read-queues, --write-queues, --perm or --order/--no-order")
    new_perm = None if perm is None else parse_perm(perm)

    async def job(admin: MQAdmin) -> View:
        changes = await admin.update_topic(topic, cluster=cluster, broker_addr=broker_addr,
                                           read_queue_nums=read_queues, write_queue_nums=write_queues,
                                           perm=new_perm, order=order)
        return change_view(topic, "update", changes)

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
        return change_view(topic, "perm", await admin.update_topic(topic, cluster=cluster, broker_addr=broker_addr,
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
        return await admin.topic_clusters(topic)

    hosting = s.run(where)
    if cluster is not None and cluster not in hosting:
        raise fail(f"topic {topic} is not on cluster {cluster} (it is on: {', '.join(hosting)}); nothing deleted",
                   EXIT_REFUSED)
    targets = [cluster] if cluster is not None else hosting
    confirm(f"Delete topic {topic} from cluster {', '.join(targets)} and the name servers?", yes)

    async def job(admin: MQAdmin) -> list[str]:
        return [a for c in targets for a in await admin.delete_topic(topic, c)]

    addrs = s.run(job)
    typer.echo(f"deleted topic {topic} from {', '.join(addrs)} (cluster {', '.join(targets)}) and the name servers")
