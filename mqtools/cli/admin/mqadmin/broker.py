"""mqadmin's broker commands: brokerStatus, getBrokerConfig, updateBrokerConfig, brokerConsumeStats,
cleanExpiredCQ and clusterRT, in mqadmin's output format."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import usage
from mqtools.cli.admin.mqadmin import command, run, run_until_interrupted
from mqtools.client.admin.models.mqadmin_text import broker_consume_lines, config_lines
from mqtools.client.errors import MQClientError, settled
from mqtools.common.javatext import java_format
from mqtools.common.presentation import NA

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.configs import ClusterInfo

BrokerAddrOpt = Annotated[Optional[str], typer.Option("-b", "--brokerAddr", help="Broker address")]  # noqa: UP045
RT_HEADER = "%-24s  %-24s  %-4s  %-8s  %-8s"
RT_ROW = "%-24s  %-24s  %-8s  %-16s  %-16s"


def known_cluster(info: ClusterInfo, cluster: str) -> None:
    """An unknown cluster is a usage error, naming the known ones."""
    if cluster not in info.cluster_addr_table:
        raise usage(f"cluster {cluster} not found (known: {', '.join(sorted(info.cluster_addr_table)) or 'none'})")


def group_addrs(info: ClusterInfo, cluster: str, *, slaves: bool) -> list[tuple[str, list[str]]]:
    """(master address, its slaves' addresses, or none) per broker name of a cluster; an unknown
    cluster is a usage error."""
    from mqtools.client.admin.base import cluster_nodes

    known_cluster(info, cluster)
    return [(master, others if slaves else []) for master, others in cluster_nodes(info, cluster)]


def every_addr(info: ClusterInfo, cluster: str) -> list[str]:
    """Every address of every broker set of a cluster, by set name and broker id: the sets with no master too,
    as mqadmin's CommandUtil.fetchMasterAndSlaveAddrByClusterName gives them; an unknown cluster is a usage
    error."""
    known_cluster(info, cluster)
    tables = (info.broker_addr_table.get(name) for name in sorted(info.cluster_addr_table[cluster]))
    return [addr for data in tables if data for _, addr in sorted(data.broker_addrs.items())]


@command("brokerStatus", "mq admin broker status", "Fetch broker runtime status data.")
def broker_status(
    broker_addr: BrokerAddrOpt = None,
    cluster: Annotated[Optional[str], typer.Option("-c", "--clusterName", help="which cluster")] = None,  # noqa: UP045
) -> None:
    """-c: every broker of the cluster, each asked on its own: one that fails is a line on stderr (where mqadmin
    prints its stack trace and goes on) and the others are still shown; exit 0 unless none answered.

    Example: mq admin brokerStatus -b 127.0.0.1:10911
    """
    if (broker_addr is None) == (cluster is None):
        raise usage("give one of -b/--brokerAddr and -c/--clusterName")

    async def job(admin: MQAdmin) -> None:
        if broker_addr is not None:
            for key, value in sorted((await admin.brokers.broker_runtime_info(broker_addr)).raw.items()):
                typer.echo(java_format("%-32s: %s", key, value))
            return
        addrs = every_addr(await admin.cluster_info(), cluster or "")
        answers = await asyncio.gather(*(settled(admin.brokers.broker_runtime_info(a)) for a in addrs))
        for addr, answer in zip(addrs, answers, strict=True):
            if isinstance(answer, MQClientError):
                typer.echo(f"brokerStatus of {addr} failed: {answer.summary()}", err=True)
                continue
            for key, value in sorted(answer.raw.items()):
                typer.echo(java_format("%-24s %-32s: %s", addr, key, value))
        failed = [a for a in answers if isinstance(a, MQClientError)]
        if failed and len(failed) == len(answers):  # nothing read: a failure, not a partial answer
            raise typer.Exit(failed[0].exit_code)

    run(job)


def echo_block(lines: list[str]) -> None:
    """A broker's block of getBrokerConfig, with the blank line mqadmin leaves after each."""
    typer.echo("\n".join(lines) + "\n")


@command("getBrokerConfig", "mq admin broker config get", "Get broker config by cluster or special broker.")
def get_broker_config(
    broker_addr: Annotated[Optional[str], typer.Option("-b", "--brokerAddr", help="get which broker")] = None,  # noqa: UP045
    cluster: Annotated[Optional[str], typer.Option("-c", "--clusterName", help="get which cluster")] = None,  # noqa: UP045
) -> None:
    """Example: mq admin getBrokerConfig -c DefaultCluster"""
    if broker_addr is None and cluster is None:
        raise usage("give -b/--brokerAddr or -c/--clusterName")

    async def job(admin: MQAdmin) -> None:
        if broker_addr is not None:
            echo_block(config_lines(broker_addr, await admin.brokers.broker_config(broker_addr)))
            return
        for master, slaves in group_addrs(await admin.cluster_info(), cluster or "", slaves=True):
            echo_block(config_lines(master, await admin.brokers.broker_config(master), f"Master: {master}"))
            for slave in slaves:
                echo_block(config_lines(slave, await admin.brokers.broker_config(slave),
                                        f"My Master: {master}=====Slave: {slave}"))

    run(job)


@command("updateBrokerConfig", "mq admin broker config set", "Update broker's config.")
def update_broker_config(
    key: Annotated[str, typer.Option("-k", "--key", help="config key")],
    value: Annotated[str, typer.Option("-v", "--value", help="config value")],
    broker_addr: Annotated[Optional[str], typer.Option("-b", "--brokerAddr", help="update which broker")] = None,  # noqa: UP045
    cluster: Annotated[Optional[str], typer.Option("-c", "--clusterName", help="update which cluster")] = None,  # noqa: UP045
    all_brokers: Annotated[Optional[str], typer.Option("-a", "--updateAllBroker", help="update all brokers include slave")] = None,  # noqa: UP045
) -> None:
    """Example: mq admin updateBrokerConfig -c DefaultCluster -k brokerPermission -v 4"""
    if broker_addr is None and cluster is None:
        raise usage("give -b/--brokerAddr or -c/--clusterName")
    values = {key.strip(): value.strip()}

    async def job(admin: MQAdmin) -> None:
        if broker_addr is not None:
            targets = [broker_addr.strip()]
        else:
            groups = group_addrs(await admin.cluster_info(), cluster or "", slaves=all_brokers is not None)
            targets = [a for master, slaves in groups for a in (master, *slaves)]
        for addr in targets:
            await admin.brokers.update_broker_config(addr, values)
            typer.echo(f"update broker config success, {addr}")

    run(job)


@command("brokerConsumeStats", "mq admin broker consume-stats", "Fetch broker consume stats data.")
def broker_consume_stats(
    broker_addr: Annotated[str, typer.Option("-b", "--brokerAddr", help="Broker address")],
    timeout_ms: Annotated[int, typer.Option("-t", "--timeoutMillis", help="request timeout Millis")] = 50000,
    level: Annotated[int, typer.Option("-l", "--level", help="threshold of print diff")] = 0,
    order: Annotated[str, typer.Option("-o", "--order", help="order topic")] = "false",
) -> None:
    """Example: mq admin brokerConsumeStats -b 127.0.0.1:10911 -l 100"""

    async def job(admin: MQAdmin) -> None:
        stats = await admin.brokers.broker_consume_stats(broker_addr, order_only=order.strip().lower() == "true",
                                                 timeout=timeout_ms / 1000)
        for line in broker_consume_lines(stats, level):
            typer.echo(line)

    run(job, timeout=max(5.0, timeout_ms / 1000))


@command("cleanExpiredCQ", "mq admin broker clean-expired-cq", "Clean expired ConsumeQueue on broker.")
def clean_expired_cq(
    broker_addr: BrokerAddrOpt = None,
    cluster: Annotated[Optional[str], typer.Option("-c", "--cluster", help="clustername")] = None,  # noqa: UP045
) -> None:
    """Example: mq admin cleanExpiredCQ -c DefaultCluster"""

    async def job(admin: MQAdmin) -> None:
        if broker_addr is not None:
            targets = [broker_addr.strip()]
        else:
            info = await admin.cluster_info()
            names = [cluster] if cluster else sorted(info.cluster_addr_table)
            targets = [a for name in names for m, slaves in group_addrs(info, name, slaves=True) for a in (m, *slaves)]
        for addr in targets:
            await admin.brokers.clean_expired_consume_queue(addr)
        typer.echo("success", nl=False)

    run(job)


@command("clusterRT", "mq admin cluster rt", "List All clusters Message Send RT.")
def cluster_rt(
    amount: Annotated[int, typer.Option("-a", "--amount", help="message amount | default 100", min=2)] = 100,
    size: Annotated[int, typer.Option("-s", "--size", help="message size | default 128 Byte", min=1)] = 128,
    cluster: Annotated[Optional[str], typer.Option("-c", "--cluster", help="cluster name | default display all cluster")] = None,  # noqa: UP045
    tlog: Annotated[str, typer.Option("-p", "--print log", help="print as tlog | default false")] = "false",
    room: Annotated[str, typer.Option("-m", "--machine room", help="machine room name | default noname")] = "noname",
    interval: Annotated[int, typer.Option("-i", "--interval", help="print interval | default 10 seconds", min=0)] = 10,
) -> None:
    """One round of sends to every broker-name topic, then another every -i seconds; Ctrl-C stops.

    Example: mq admin clusterRT -a 20 -i 5
    """
    as_tlog = tlog.strip().lower() == "true"

    async def rounds(admin: MQAdmin) -> None:
        info = await admin.cluster_info()
        clusters = [cluster] if cluster else list(info.cluster_addr_table)
        if not as_tlog:
            typer.echo(java_format(RT_HEADER, "#Cluster Name", "#Broker Name", "#RT", "#successCount", "#failCount"))
        group = str(int(time.time() * 1000))  # mqadmin names its probe producer after the start time
        while True:
            for name in clusters:
                brokers = info.cluster_addr_table.get(name)
                if brokers is None:
                    typer.echo(f"cluster [{name}] not exist", nl=False)
                    break
                for probe in await admin.messages.send_rt(sorted(brokers), amount, size, group=group):
                    rt = probe.mqadmin_rt_ms  # -a is at least 2, so never None here
                    if as_tlog:
                        stamp = datetime.now(timezone(timedelta(hours=8))).strftime("%Y-%m-%d %H:%M:%S")
                        typer.echo(f"{stamp}|{room}|{name}|{probe.broker_name}|{NA if rt is None else round(rt)}")
                    else:
                        typer.echo(java_format(RT_ROW, name, probe.broker_name, NA if rt is None else f"{rt:.2f}",
                                               probe.ok, probe.failed))
            await asyncio.sleep(interval)

    run_until_interrupted(rounds)
