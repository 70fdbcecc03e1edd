"""mqadmin's consumer views: consumerProgress, consumerStatus, consumerConnection and statsAll, with
mqadmin's options and output (RocketMQ 5 layouts).

consumerStatus and `consumerProgress -s true` need each client's running info, which a broker relays
to the client (GET_CONSUMER_RUNNING_INFO); where a broker or a client does not offer it, the output says
so (and client IPs print N/A, as mqadmin prints them when unknown).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.mqadmin import LmqClusterOpt, command, run
from mqtools.client.admin.models.mqadmin_text import connection_lines, groups_text, progress_text, stats_lines
from mqtools.common.javatext import java_format
from mqtools.common.mqversion import version_desc

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.groups import (
        ConsumerRunningInfo,
        GroupConnections,
    )
    from mqtools.client.errors import MQClientError

STATUS_ROW = "%-10s %-40s %-20s %s"
GroupOpt = Annotated[str, typer.Option("-g", "--consumerGroup", help="consumer group name")]
BrokerAddrOpt = Annotated[Optional[str], typer.Option("-b", "--brokerAddr", help="broker address")]  # noqa: UP045


async def running_infos(admin: MQAdmin, group: str, conns: GroupConnections,
                        ) -> tuple[dict[str, ConsumerRunningInfo], dict[str, MQClientError]]:
    """Each online client's running info, or why it could not be had."""
    from mqtools.client.errors import MQClientError, settled

    found: dict[str, ConsumerRunningInfo] = {}
    failed: dict[str, MQClientError] = {}
    for c in conns.connections:
        info = await settled(admin.groups.consumer_running_info(group, c.client_id))
        if isinstance(info, MQClientError):
            failed[c.client_id] = info
        else:
            found[c.client_id] = info
    return found, failed


@command("consumerProgress", "mq admin group progress|status", "Query consumer's progress, speed.")
def consumer_progress(
    group: Annotated[Optional[str], typer.Option("-g", "--groupName", help="consumer group name")] = None,  # noqa: UP045
    topic: Annotated[Optional[str], typer.Option("-t", "--topicName", help="topic name")] = None,  # noqa: UP045
    show_ip: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-s", "--showClientIP", help="Show Client IP per Queue")] = None,
    cluster: LmqClusterOpt = None,
) -> None:
    """Example: mq admin consumerProgress -g OrderConsumers"""
    with_ips = show_ip is not None and show_ip.strip().lower() == "true"

    async def job(admin: MQAdmin) -> list[str]:
        from mqtools.client.errors import ConsumerNotOnlineError, MQClientError, settled

        if group is None:
            return groups_text(await admin.overview.group_summaries())
        name = group.strip()
        p = await admin.groups.consumer_progress(name, topic.strip() if topic else None,
                                          cluster=cluster.strip() if cluster and topic else None)
        if not p.queues:  # as mqadmin's examineConsumeStats refuses an empty answer (nothing printed)
            raise ConsumerNotOnlineError(ConsumerNotOnlineError.CODE, "Not found the consumer group consume stats, "
                                         "because return offset table is empty, maybe the consumer not online")
        if not with_ips:
            return progress_text(p, None)
        conns = await settled(admin.groups.consumer_connections(name))
        if isinstance(conns, ConsumerNotOnlineError):
            infos: dict[str, ConsumerRunningInfo] = {}
        elif isinstance(conns, MQClientError):
            raise conns
        else:
            infos, _ = await running_infos(admin, name, conns)
        ips = {mq: client.split("@")[0] for client, info in infos.items() for mq in info.queues}
        return progress_text(p, ips)

    for line in run(job):
        typer.echo(line)


@command("consumerStatus", "mq admin group connections", "Query consumer's internal data structure.")
def consumer_status(
    group: GroupOpt,
    client_id: Annotated[Optional[str], typer.Option("-i", "--clientId", help="The consumer's client id")] = None,  # noqa: UP045
    broker_addr: BrokerAddrOpt = None,
    jstack: Annotated[bool, typer.Option("-s", "--jstack", help="Run jstack command in the consumer progress")] = False,
) -> None:
    """Example: mq admin consumerStatus -g OrderConsumers"""
    name = group.strip()

    async def job(admin: MQAdmin) -> list[str]:
        conns = await admin.groups.consumer_connections(name, broker_addr.strip() if broker_addr else None)
        if client_id is not None:
            return [(await admin.groups.consumer_running_info(name, client_id.strip(), jstack=jstack)).raw]
        infos, failed = await running_infos(admin, name, conns)
        now = int(time.time() * 1000)
        lines = [STATUS_ROW % ("#Index", "#ClientId", "#Version", "#ConsumerRunningInfoFile")]
        for index, c in enumerate((c for c in conns.connections if c.client_id in infos), start=1):
            path = Path(str(now)) / c.client_id
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(infos[c.client_id].raw, encoding="utf-8")
            lines.append(java_format(STATUS_ROW, index, c.client_id, version_desc(c.version), path))
        if failed:
            lines += ["", (f"Running info unavailable from {len(failed)} of {len(conns.connections)} client(s): "
                           "the broker relays GET_CONSUMER_RUNNING_INFO to each client, and here it was refused:")]
            lines += [f"  {cid}: {exc}" for cid, exc in failed.items()]
        if infos:
            from mqtools.client.admin.models.groups import rebalance_ok, same_subscriptions

            found = list(infos.values())
            if same_subscriptions(found):
                lines += ["", "", "Same subscription in the same group of consumer", "",
                          f"Rebalance {'OK' if rebalance_ok(found) else 'Failed'}"]
            else:
                lines += ["", "", "WARN: Different subscription in the same group of consumer!!!"]
        return lines

    for line in run(job):
        typer.echo(line)


@command("consumerConnection", "mq admin group connections",
         "Query consumer's socket connection, client version and subscription.")
def consumer_connection(group: GroupOpt, broker_addr: BrokerAddrOpt = None) -> None:
    """Example: mq admin consumerConnection -g OrderConsumers"""

    async def job(admin: MQAdmin) -> GroupConnections:
        return await admin.groups.consumer_connections(group.strip(), broker_addr.strip() if broker_addr else None)

    for line in connection_lines(run(job)):
        typer.echo(line)


@command("statsAll", "mq admin broker stats", "Topic and Consumer tps stats.")
def stats_all(
    active: Annotated[bool, typer.Option("-a", "--activeTopic", help="print active topic only")] = False,
    topic: Annotated[Optional[str], typer.Option("-t", "--topic", help="print select topic only")] = None,  # noqa: UP045
) -> None:
    """Example: mq admin statsAll -a"""

    async def job(admin: MQAdmin) -> list[str]:
        return stats_lines((await admin.tracking.stats_all(topic.strip() if topic else None, active_only=active)).rows)

    for line in run(job):
        typer.echo(line)
